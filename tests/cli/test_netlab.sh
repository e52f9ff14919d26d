#!/bin/sh
# test_netlab.sh COMMLAB TOOLDIR - `run --backend tcp --netlab RATE`: every
# rank in a network namespace of its own behind a switch of tbf-limited
# ports (real/netlab.h).  What it shows: a pingpong's bandwidth is set by
# the port's rate, not by loopback; senders into one rank share its one
# port (incast); non-root and misuse are refused with exit 2; and no
# namespace, veth or bridge is left behind, after a run, a failed run, a
# Ctrl-C, or a launcher killed outright (reaped by the next run).  Needs
# root, iproute2 and tbf; says so and checks nothing without them.
. "$(dirname "$0")/lib.sh"

rate=1Gbit/s
rate_Bps=125000000

probe=clnlprobe-$$ # not a clnl-PID-* name: no netlab run reaps it
skip() {
    echo "skip: $1"
    finish
    exit $?
}
if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null 2>&1 || ! command -v tc >/dev/null 2>&1
then
    skip "--netlab needs root, ip and tc (iproute2)"
fi
if ! { ip netns add "$probe" && ip -n "$probe" link add name clpa type veth peer name clpb &&
       tc -n "$probe" qdisc add dev clpa root tbf rate 1gbit burst 16k latency 50ms; } 2>"$err"
then
    ip netns del "$probe" 2>/dev/null
    skip "cannot make network namespaces, veth pairs and tbf here: $(head -c 300 "$err")"
fi
ip netns del "$probe"

# Launchers started in the background here; killed and their names
# deleted at exit whatever happened.
bg=
cleanup() {
    for p in $bg; do
        kill -KILL "$p" 2>/dev/null
        for ns in $(ip netns list | sed -n "s/^\(clnl-$p-[^ ]*\).*/\1/p"); do
            ip netns del "$ns"
        done
    done
    rm -rf "$out" "$err" "$tmpd"
}
trap cleanup EXIT

# A netlab's names carry its launcher's pid: every commlab this script
# starts adds its pid to $tmpd/pids (run and pid_start through $wrap), and
# clean looks at those names alone, since another job's netlab may be up
# beside this one.
record_pids

# clean WHAT: no clnl-PID-* namespace or link of this script's commands is
# left.
clean() {
    left=
    for p in $(cat "$tmpd/pids"); do
        left="$left$( { ip netns list; ip -br link; } | grep -F "clnl-$p-")"
    done
    if [ -z "$left" ]; then ok; else bad "$1 left: $left"; fi
}

# col CSVFILE NAME: the named column of the CSV's one row.
col() {
    awk -F, -v name="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) c = i }
                          NR == 2 { print $c }' "$1"
}

# started PID: waits (up to 20 s) until launcher PID's ranks run in its
# namespaces; true when they do.
started() {
    i=0
    while [ $i -lt 200 ]; do
        if [ "$(ip netns pids "clnl-$1-0" 2>/dev/null | wc -l)" -gt 0 ] &&
           [ "$(ip netns pids "clnl-$1-1" 2>/dev/null | wc -l)" -gt 0 ]; then
            sleep 0.5 # into the timed iterations
            return 0
        fi
        sleep 0.1
        i=$((i + 1))
    done
    return 1
}

# A pingpong of 16 MiB: its bandwidth is the port's rate less the frames'
# headers (about 95% of it), far below loopback's GB/s.  Only a bound that
# a busy machine cannot break: below the rate (the ports cap it; a run
# that bypassed them would be many times faster).
run 0 run pingpong --backend tcp --netlab "$rate" --bytes 16MiB -i 3 --warmup 1 --csv
bw=$(col "$out" bandwidth_Bps)
if awk -v b="$bw" -v r="$rate_Bps" 'BEGIN { exit !(b > 0 && b < r) }'; then ok
else bad "pingpong over --netlab $rate: $bw B/s, want below the rate, $rate_Bps"; fi
clean "a pingpong"
run 0 run pingpong --backend tcp --netlab "$rate" --bytes 1MiB -i 2 --check
has "$out" "pingpong on tcp (netlab 1 Gbit/s per port): 2 ranks"
run 0 run pingpong --backend tcp --netlab "$rate" --bytes 64KiB -i 2 --json
json "--netlab --json"
has "$out" '"netlab_port_Bps": 125000000'
clean "a checked pingpong"

# Incast: 4 ranks send 16 MiB to rank 0 at once.  Each sender's own port
# could carry its message in n/RATE (0.134 s); rank 0's port out of the
# switch carries all four, so the iteration cannot take less than 4 n/RATE
# (0.537 s; measured 0.561 s on an idle machine).  The bound checked, 3
# n/RATE, holds however busy the machine, and fails if the four did not
# share one port.
run 0 run incast -n 5 --backend tcp --netlab "$rate" --bytes 16MiB -i 3 --warmup 1 --csv
four=$(col "$out" time_median_s)
if awk -v b="$four" -v r="$rate_Bps" 'BEGIN { exit !(b > 3 * 16777216 / r) }'; then ok
else bad "incast: 4 senders took $four s, want more than 3 x 16 MiB / $rate_Bps"; fi
clean "an incast"

# A failed run (a deadlock: exit 3) takes its netlab down too.
run 3 run deadlock --backend tcp --netlab "$rate" --bytes 1MiB --deadlock-timeout 500ms
clean "a deadlocked run"

# A netlab that cannot be finished (no tc on the PATH: the first rank's
# port is half made) is deleted again, and the run exits 2 saying why.
mkdir "$tmpd/bin"
ln -s "$(command -v ip)" "$tmpd/bin/ip"
$limit env PATH="$tmpd/bin" "$wrap" "$cl" run pingpong --backend tcp --netlab "$rate" \
    >"$out" 2>"$err"
rc=$?
if [ "$rc" -eq 2 ]; then ok; else bad "--netlab without tc: exit $rc, want 2"; fi
has "$err" "--netlab needs 'tc' (iproute2)"
clean "a netlab that could not be finished"

# --- calibrate and compare over a netlab (one netlab for the whole command) ---
# pid_start CMD...: runs commlab CMD, its status in $rc and its pid in $last
# (the names it makes carry it); pid_run RC CMD... expects status RC.
pid_start() {
    $limit "$wrap" "$cl" "$@" >"$out" 2>"$err"
    rc=$?
    last=$(cat "$tmpd/pid")
}
pid_run() {
    want=$1
    shift
    pid_start "$@"
    if [ "$rc" -eq "$want" ]; then ok; else bad "commlab $* exited $rc, want $want"; fi
}
# left_by PID WHAT: nothing of process PID in /dev/shm, and no netlab
# namespace or link at all.
left_by() {
    left=$(ls /dev/shm | grep -E "(clnl|commlab)-$1-")
    if [ -z "$left" ]; then ok; else bad "$2 left in /dev/shm: $left"; fi
    clean "$2"
}
# finite_errors: every error_pct of the compare JSON in $out is a finite
# number, and there are $1 of them.
finite_errors() {
    n=$(grep -c '"error_pct"' "$out")
    bad_n=$(grep '"error_pct"' "$out" | grep -ciE 'nan|inf|null')
    if [ "$n" -eq "$1" ] && [ "$bad_n" -eq 0 ]; then ok
    else bad "compare: $n error_pct rows (want $1), $bad_n not finite"; fi
}
num() { sed -n "s/.*\"$1\": \([-0-9.e+]*\).*/\1/p" "$out" | head -n 1; }

# compare without --model: this host's netlab file is calibrated first,
# over the netlab, and named for it (not the loopback tcp file).
home="$tmpd/home"
mkdir -p "$home/configs"
cp "$(dirname "$0")/../../configs/tiers.yaml" "$home/configs/"
host=$(hostname | tr -c 'A-Za-z0-9._\n-' '-')
lab="$home/configs/machines/$host-tcp-netlab-1gbit.yaml"
COMMLAB_HOME="$home" $limit "$wrap" "$cl" compare \
    pingpong --backend tcp --netlab "$rate" --quick --sizes 8,1MiB -i 3 --json >"$out" 2>"$err"
rc=$?
last=$(cat "$tmpd/pid")
has "$err" "no machine file for this host and tcp at $lab: calibrating first (--quick)"
if [ "$rc" -eq 0 ]; then
    ok
    json "compare --netlab --json"
    finite_errors 2
    has "$out" '"netlab_port_Bps": 125000000'
    has "$out" '"modeled_on": "switch"'
    has "$lab" "netlab: 1Gbit/s"
    has "$lab" "backend: \"tcp\""
else
    bad "compare --netlab --quick (calibrating first) exited $rc, want 0"
fi
left_by "$last" "compare --netlab, calibrating first"

# calibrate --netlab --out: the file says the netlab's rate; the text and
# JSON name it.
m="$tmpd/netlab.yaml"
short=$limit
limit=$calib_limit
pid_start calibrate --backend tcp --netlab "$rate" --quick --out "$m" --json
limit=$short
calibrated=$rc
if [ "$calibrated" -eq 0 ]; then
    ok
    json "calibrate --netlab --json"
    has "$out" '"netlab_port_Bps": 125000000'
    has "$m" "netlab: 1Gbit/s"
else
    bad "calibrate --netlab exited $calibrated, want 0"
fi
left_by "$last" "calibrate --netlab"

if [ "$calibrated" -eq 0 ]; then
    # The incast of 4 senders, measured over the netlab and modeled on one
    # switch of the calibrated ports: its rows and finite errors, and the
    # model shares rank 0's port, 4 messages' time where the ping-pong at
    # the same size and the same segment pays one: the modeled ratio is
    # (a + 4 n/B) / (a + n/B), between 3.5 and 4 for any a < n/(5B), which
    # holds at 4 MiB on any link a netlab of 1 Gbit/s gives (n/B = 34 ms).
    pid_run 0 compare incast -n 5 --backend tcp --netlab "$rate" --model "$m" --bytes 4MiB \
        -i 3 --warmup 1 --json
    json "compare incast --netlab --json"
    finite_errors 1
    has "$out" '"ranks": 5'
    incast=$(num modeled_s)
    left_by "$last" "compare incast --netlab"
    pid_run 0 compare pingpong --backend tcp --netlab "$rate" --model "$m" --bytes 4MiB -i 3 \
        --warmup 1 --json
    finite_errors 1
    one=$(num modeled_s)
    if awk -v a="$incast" -v b="$one" 'BEGIN { r = a / b; exit !(r > 3.5 && r <= 4) }'; then ok
    else bad "modeled incast $incast s vs ping-pong $one s: want 3.5 to 4 times"; fi
    pid_run 0 compare incast -n 5 --backend tcp --netlab "$rate" --model "$m" --bytes 1MiB -i 3
    has "$out" "incast, 5 ranks: tcp measured over a netlab of 1 Gbit/s per port"
    has "$out" "modeled on one switch of 5 ports from $m"
    has "$out" "max-min sharing"
    has "$out" "median |error|"
    left_by "$last" "compare incast --netlab (text)"
    # A model of loopback measured over a netlab: said.
    grep -v '^netlab:' "$m" >"$tmpd/plain.yaml"
    pid_run 0 compare pingpong --backend tcp --netlab "$rate" --model "$tmpd/plain.yaml" \
        --bytes 8 -i 3
    has "$err" "was calibrated over no netlab; measuring over a netlab of 1 Gbit/s"
    left_by "$last" "compare over a loopback model"
fi

# A segment with no cost per byte (bandwidth inf, as a flat fit of a busy
# machine writes it) is modeled over the netlab's switch at the fastest
# bandwidth a topology takes: compare used 1e30 B/s, which the topology's
# range check refuses (exit 4 in CI, one run in two beside another).
printf 'host: h\nbackend: tcp\nnetlab: 1Gbit/s\neager_limit: 64KiB\ncache: fresh\nsegments:\n  - {upto: 64KiB, alpha: 30us, bandwidth: inf}\n  - {upto: 64MiB, alpha: 40us, bandwidth: 100MB/s}\n' >"$tmpd/flat.yaml"
pid_run 0 compare pingpong --backend tcp --netlab "$rate" --model "$tmpd/flat.yaml" --bytes 8 \
    -i 3 --json
finite_errors 1
left_by "$last" "compare over a segment with no cost per byte"

# Ctrl-C in calibrate: the netlab it holds is deleted, exit 130.
"$cl" calibrate --backend tcp --netlab "$rate" --out "$tmpd/int.yaml" \
    >"$tmpd/cal.out" 2>"$tmpd/cal.err" &
pid=$!
bg="$bg $pid"
echo "$pid" >>"$tmpd/pids"
if started "$pid"; then ok; else bad "the interrupted calibrate never started its ranks"; fi
kill -INT "$pid"
wait "$pid" 2>/dev/null
rc=$?
if [ "$rc" -eq 130 ]; then ok; else bad "calibrate, Ctrl-C: exit $rc, want 130"; fi
if [ -e "$tmpd/int.yaml" ]; then bad "an interrupted calibrate wrote its file"; else ok; fi
left_by "$pid" "an interrupted calibrate"

run 2 calibrate --backend shm --netlab "$rate"
has "$err" "--netlab is an option of --backend tcp: it does not apply to --backend shm"
run 2 calibrate --backend tcp --netlab "$rate" --listen 127.0.0.1
has "$err" "leave --listen out"
run 2 compare pingpong --backend tcp --netlab "$rate" --listen 127.0.0.1
has "$err" "leave --listen out"
run 2 compare pingpong --backend tcp --netlab 100B/s
has "$err" "--netlab needs a rate of at least 8kbit/s, got '100B/s'"
run 0 calibrate --help
has "$out" "--netlab RATE"
run 0 compare --help
has "$out" "--netlab RATE"

# Usage: not root, not tcp, not with --listen, not a world started elsewhere.
if command -v setpriv >/dev/null 2>&1; then
    $limit setpriv --reuid=65534 --regid=65534 --clear-groups "$cl" run pingpong \
        --backend tcp --netlab "$rate" >"$out" 2>"$err"
    rc=$?
    if [ "$rc" -eq 2 ]; then ok; else bad "--netlab as nobody: exit $rc, want 2"; fi
    has "$err" "--netlab needs root to create network namespaces (run as root or without --netlab)"
    # (a file nobody may write: the netlab is refused before anything runs)
    for cmd in "calibrate --backend tcp --out /tmp/commlab-netlab-$$.yaml" \
               "compare pingpong --backend tcp --model /nonexistent.yaml"
    do
        # shellcheck disable=SC2086 # the command's words
        $limit setpriv --reuid=65534 --regid=65534 --clear-groups "$cl" $cmd \
            --netlab "$rate" >"$out" 2>"$err"
        rc=$?
        if [ "$rc" -eq 2 ]; then ok; else bad "$cmd --netlab as nobody: exit $rc, want 2"; fi
        has "$err" "--netlab needs root to create network namespaces"
    done
fi
run 2 run pingpong --backend shm --netlab "$rate"
has "$err" "--netlab is an option of --backend tcp: it does not apply to --backend shm"
run 2 run pingpong --netlab "$rate"
has "$err" "--netlab is an option of measured runs"
run 2 run pingpong --backend tcp --netlab "$rate" --listen 127.0.0.1
has "$err" "leave --listen out"
run 2 run pingpong --backend tcp --netlab "$rate" --rank 0 --world 2 --master 127.0.0.1:1
has "$err" "--netlab forks every rank on this host"
run 2 run pingpong --backend tcp --netlab 3
has "$err" "--netlab"
run 2 run pingpong --backend tcp --netlab 100B/s
has "$err" "--netlab needs a rate of at least 8kbit/s, got '100B/s'"
run 0 run pingpong --help
has "$out" "--netlab RATE"
clean "refused runs"

# Ctrl-C: the launcher stops its ranks, deletes the netlab and exits 130.
"$cl" run pingpong --backend tcp --netlab "$rate" --bytes 16MiB -i 100000 \
    >"$tmpd/int.out" 2>"$tmpd/int.err" &
pid=$!
bg="$bg $pid"
echo "$pid" >>"$tmpd/pids"
if started "$pid"; then ok; else bad "the interrupted run never started its ranks"; fi
kill -INT "$pid"
wait "$pid" 2>/dev/null
rc=$?
if [ "$rc" -eq 130 ]; then ok; else bad "Ctrl-C: exit $rc, want 130"; fi
has "$tmpd/int.err" "interrupted (SIGINT)"
clean "an interrupted run"

# SIGKILL: the launcher cannot clean up (its ranks die with it); the next
# netlab run deletes what it left.
"$cl" run pingpong --backend tcp --netlab "$rate" --bytes 16MiB -i 100000 \
    >"$tmpd/kill.out" 2>"$tmpd/kill.err" &
pid=$!
bg="$bg $pid"
echo "$pid" >>"$tmpd/pids"
if started "$pid"; then ok; else bad "the killed run never started its ranks"; fi
kill -KILL "$pid"
wait "$pid" 2>/dev/null
if ip netns list | grep -qF "clnl-$pid-hub"; then ok
else bad "a launcher killed outright left nothing behind: the reaping below tests nothing"; fi
run 0 run pingpong --backend tcp --netlab "$rate" --bytes 8
clean "a killed launcher's leftovers, after the next run"

finish
