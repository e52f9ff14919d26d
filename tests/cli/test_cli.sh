#!/bin/sh
# test_cli.sh COMMLAB TOOLDIR - the command line as a user meets it: exit
# codes, error messages, --help, and that every --json output is valid JSON.
# Ends with "N passed, N failed".
. "$(dirname "$0")/lib.sh"
# --- help, version, unknown words ---
run 0 --help;              has "$out" "usage: commlab COMMAND"; has "$out" "price"
run 0 --version;           has "$out" "commlab 0."
run 0 help price;          has "$out" "usage: commlab price"
run 0 price --help;        has "$out" "--bytes SIZE"
run 0 sweep --help;        has "$out" "crossover"
run 2;                     has "$err" "usage: commlab COMMAND"
run 2 frobnicate;          has "$err" "unknown command 'frobnicate'"; has "$err" "commlab --help"
run 2 --frobnicate;        has "$err" "unknown option '--frobnicate'"
run 2 help frobnicate;     has "$err" "unknown command 'frobnicate'"
run 2 price --frobnicate;  has "$err" "unknown option '--frobnicate'"; has "$err" "commlab help price"
run 2 price -q;            has "$err" "unknown option '-q'"
run 2 price --bytes;       has "$err" "option '--bytes' needs a value"
run 2 price extra;         has "$err" "unexpected argument 'extra'"
# Every short option a command's help lists is one it takes: given with no
# value, it asks for one (or is a flag), never "unknown option".
run 0 help
for c in $(awk '/^  [a-z]/ { print $1 }' "$out" | sort -u); do
    for o in $($limit "$cl" help "$c" 2>/dev/null | sed -n 's/^  \(-[A-Za-z]\),.*/\1/p'); do
        [ "$o" = -h ] && continue
        $limit "$cl" "$c" "$o" </dev/null >/dev/null 2>"$err"
        if grep -q "unknown option" "$err"; then bad "help $c lists $o, which $c refuses"; else ok; fi
    done
done
# --- misspelt names: the nearest one is offered (cli/near.h) ---
run 2 rnu;                 has "$err" "unknown command 'rnu'; did you mean 'run'?"
run 2 help prce;           has "$err" "did you mean 'price'?"
run 2 run pingpog;         has "$err" "unknown pattern 'pingpog'; did you mean 'pingpong'?"
run 2 run pingpong --tiers nvlink; has "$err" "unknown option '--tiers'; did you mean '--tier'?"
run 2 sweep --form 1KiB;   has "$err" "did you mean '--from'?"
run 2 run pingpong --backend shn; has "$err" "unknown backend 'shn'; did you mean 'shm'?"
run 2 exercise chek;       has "$err" "unknown action 'chek'; did you mean 'check'?"
run 2 run pingpong --zzzzzz
if grep -q "did you mean" "$err"; then bad "a suggestion for --zzzzzz"; else ok; fi
# --- one meaning per short option: -b is --backend, never --bytes ---
run 2 price -b 1MiB;       has "$err" "unknown option '-b'"

# --- price: the course's table (source: the alpha-beta chapter's tiers) ---
run 0 price --bytes 256MiB
has "$out" "nvlink      intra-node        1.00             300.0    0.90   1.0x"
has "$out" "pcie        intra-node        2.00              25.0   10.74  12.0x"
has "$out" "infiniband  inter-node        3.00              50.0    5.37   6.0x"
has "$out" "ethernet    inter-node       30.00               3.1   86.62  96.7x"
run 0 price --json;        json price; has "$out" '"bandwidth_Bps": 300000000000'; has "$out" '"ratio"'
run 0 price --csv;         has "$out" "tier,scope,bytes,alpha_s,bandwidth_Bps,time_s,ratio"
run 0 price --tiers ethernet,nvlink --bytes 8
has "$out" "ethernet"
run 2 price --bytes -3;    has "$err" "must not be negative, got '-3'"
run 2 price --bytes 12XB;  has "$err" "unknown size unit 'XB'"
run 2 price --bytes 99999999999999999999; has "$err" "out of range"
run 2 price --tiers nvlink,warp; has "$err" "unknown tier 'warp'"
run 2 price --config "$tmpd/none.yaml"; has "$err" "none.yaml"

# --- config errors name file:line:column, key and value ---
printf 'tiers:\n  - name: a\n    alpha: 1us\n    bandwidth: -3GB/s\n' >"$tmpd/neg.yaml"
run 2 price --config "$tmpd/neg.yaml"
has "$err" "neg.yaml:4:16: 'bandwidth' must be > 0, got '-3GB/s'"
printf 'tiers:\n  - name: a\n    bandwidth: 3GB/s\n' >"$tmpd/miss.yaml"
run 2 price --config "$tmpd/miss.yaml"; has "$err" "miss.yaml:2:5: missing key 'alpha'"
printf 'tiers: [\n' >"$tmpd/syntax.yaml"
run 2 price --config "$tmpd/syntax.yaml"; has "$err" "syntax.yaml:2:1: YAML syntax error"
printf 'tiers:\n  - name: a\n    alpha: 1us\n    bandwidth: 3GB/h\n' >"$tmpd/unit.yaml"
run 2 sweep --config "$tmpd/unit.yaml"; has "$err" "unit.yaml:4:16: 'bandwidth': unknown bandwidth unit 'GB/h'"

# --- sweep ---
run 0 sweep
has "$out" "4 KiB"; has "$out" "1 GiB"
has "$out" "300000 B (292.97 KiB)"; has "$out" "93000 B (90.82 KiB)"
run 0 sweep --json;        json sweep; has "$out" '"crossover"'
run 0 sweep --csv --sizes 8,1MiB; has "$out" "bytes,tier,time_s,regime,crossover_bytes"
has "$out" "8,nvlink,1.00002667e-06,latency,300000"; has "$out" "1048576,ethernet,"
run 0 sweep --from 1KiB --to 1MiB --factor 2 --tiers pcie
has "$out" "48.83 KiB"
run 2 sweep --from 1MiB --to 1KiB; has "$err" "range start 1 MiB is above its end 1 KiB"
run 2 sweep --factor 1;    has "$err" "factor must be at least 2"
run 2 sweep --sizes 8,,16; has "$err" "empty item"
run 2 sweep --sizes 8 --from 4; has "$err" "not both"

# --- run (sim backend) ---
run 0 patterns;            has "$out" "allreduce-ring"; has "$out" "pingpong"
# The columns line up: every pattern's chapter starts where the first's does
# ("03-cost-of-a-message" once ran into the summary).
cols=$(awk '$2 ~ /^[0-9][0-9]-/ { print index($0, $2) }' "$out" | sort -u | wc -l)
if [ "$cols" -eq 1 ]; then ok; else bad "patterns: the chapter column starts at $cols places"; fi
has "$out" "03-cost-of-a-message  every other rank"
run 0 help run;            has "$out" "usage: commlab run PATTERN"
run 0 run pingpong --tier infiniband --bytes 256MiB
has "$out" "5.372 ms"
run 0 run pingpong --tier infiniband --bytes 256MiB --json; json run-pingpong
has "$out" '"median": 0.00537170912'; has "$out" '"command": "run"'; has "$out" '"backend": "sim"'
run 0 run ring -n 4 --sizes 8,1MiB --csv; has "$out" "bytes,iters,time_median_s"
run 0 run relay -n 4;      has "$out" "rank 3: the value after 3 hops is 30"
run 3 run deadlock --bytes 1MiB
has "$err" "cycle: rank 0 -> rank 1 -> rank 0"; has "$err" "above the eager limit (64 KiB)"
run 0 run deadlock --bytes 1KiB
run 0 run deadlock --bytes 1MiB --fix order
run 0 run deadlock --bytes 1MiB --fix nonblocking
run 0 run deadlock --bytes 1MiB --eager-limit 2MiB
run 2 run deadlock --fix sideways; has "$err" "unknown --fix 'sideways'"
run 2 run ring --fix order; has "$err" "--fix applies to the deadlock pattern"
run 0 run allreduce-ring -n 16 --tier infiniband --bytes 256MiB --no-payload --json
has "$out" '"messages": 480'
run 0 run pipeline -n 4 --microbatches 8 --compute 1ms --bytes 1KiB
run 0 run chunked --bytes 1MiB --chunk 128KiB --trace "$tmpd/t.json"
has "$out" "trace: $tmpd/t.json"
if "$tools/tool_jsoncheck" <"$tmpd/t.json"; then ok; else bad "trace is not valid JSON"; fi
if grep -q '"ph":"s"' "$tmpd/t.json"; then ok; else bad "trace has no flow arrows"; fi
run 0 run ring -n 3 --bytes 4KiB --trace "$tmpd/t2.json"
cp "$tmpd/t2.json" "$tmpd/t3.json"
cp "$out" "$tmpd/out1"
run 0 run ring -n 3 --bytes 4KiB --trace "$tmpd/t2.json"
if cmp -s "$tmpd/t2.json" "$tmpd/t3.json"; then ok; else bad "two runs wrote different traces"; fi
if cmp -s "$out" "$tmpd/out1"; then ok; else bad "two runs printed different output"; fi
run 0 run allreduce-ring -n 7 --sizes 8:1MiB:x16 --json; cp "$out" "$tmpd/j1"
run 0 run allreduce-ring -n 7 --sizes 8:1MiB:x16 --json
if cmp -s "$out" "$tmpd/j1"; then ok; else bad "two runs printed different JSON"; fi

run 0 run allreduce-naive -n 8 --topology configs/topologies/dgx-2node.yaml --bytes 1MiB
run 2 run warp-drive;      has "$err" "unknown pattern 'warp-drive'"
run 2 run;                 has "$err" "which pattern"
run 2 run ring -n 0;       has "$err" "--ranks must be an integer"
run 2 run ring -n many;    has "$err" "--ranks must be an integer"
run 2 run ring --bytes -5; has "$err" "must not be negative"
run 2 run ring --iters 0;  has "$err" "--iters must be an integer"
run 2 run ring --tier warp; has "$err" "unknown tier 'warp'"
run 2 run ring --backend mpi --eager-limit 1KiB  # test_mpi.sh runs the backend
run 2 run ring --backend carrier-pigeon; has "$err" "unknown backend 'carrier-pigeon'"
run 2 run ring --model flow; has "$err" "link sharing is --sharing maxmin"
run 2 run pingpong -n 1;   has "$err" "needs at least 2 ranks"
run 2 run ring --compute 5; has "$err" "needs a unit"
run 2 run ring --sizes 8,16 --trace "$tmpd/x.json"; has "$err" "one size"
# Too many pieces is a usage error, refused before any rank starts (was exit 1).
run 2 run chunked --chunk 1 --bytes 1MiB; has "$err" "chunked: --chunk 1 cuts 1048576 bytes into more than 1024 pieces"
run 2 run ring --topology "$tmpd/none.yaml"; has "$err" "none.yaml"
run 2 run ring -n 64 --topology configs/topologies/pcie-4gpu.yaml; has "$err" "has 4 devices"
# --- sizes that do not fit in memory: said before the run, or when an
# allocation fails, with what to do instead ---
run 2 run allreduce-ring -n 1024 --bytes 1TiB
has "$err" "1024 ranks of 1 TiB need at least 1 PiB of buffers"; has "$err" "add --no-payload"
run 0 run allreduce-ring -n 1024 --bytes 1TiB --no-payload --tier infiniband
run 2 run pingpong --backend shm --bytes 1TiB; has "$err" "a measured run moves real bytes"
# Under a 1 GB address-space limit a 1 GiB buffer cannot be had: the rank
# names the allocation (never the invalid argument of the NULL buffer's send).
# Not on the sanitized CLI: AddressSanitizer reserves terabytes of shadow
# address space, which no such limit allows it to start with.
case "$cl" in
*-san) ;;
*)
(ulimit -v 1000000 && exec $limit "$cl" run pingpong --bytes 1GiB) >"$out" 2>"$err"
if [ $? -eq 4 ]; then ok; else bad "sim: 1 GiB under ulimit -v 1000000"; fi
has "$err" "out of memory allocating"; has "$err" "add --no-payload"
(ulimit -v 1000000 && exec $limit "$cl" run pingpong --backend shm --bytes 1GiB) >"$out" 2>"$err"
if [ $? -eq 4 ]; then ok; else bad "shm: 1 GiB under ulimit -v 1000000"; fi
has "$err" ": out of memory allocating 1 GiB"
if grep -q "CL_EINVAL" "$err"; then bad "shm's failed allocation called CL_EINVAL"; else ok; fi
;;
esac

# --- run --backend shm (measured: one process per rank) ---
# children PID : the pids of PID's child processes, one a line.
children() {
    if command -v pgrep >/dev/null 2>&1; then
        pgrep -P "$1"
        return 0
    fi
    parent=$1
    for d in /proc/[0-9]*; do
        st=$(cat "$d/stat" 2>/dev/null) || continue
        st=${st##*) } # after "pid (comm) ": state, ppid, ...
        # shellcheck disable=SC2086
        set -- $st
        [ "$2" = "$parent" ] && echo "${d#/proc/}"
    done
    return 0
}
# Starts `commlab ARGS` in the background (bounded by $limit) and waits,
# at most 10 s, until its launcher has forked NRANKS ranks.  Sets bg (the
# timeout process), launcher and kids; returns non-zero when they never
# showed up.
start_ranks() {
    nranks=$1
    shift
    $limit "$cl" "$@" >"$out" 2>"$err" &
    bg=$!
    launcher=
    kids=
    tries=0
    while [ "$tries" -lt 200 ]; do
        [ -z "$launcher" ] && launcher=$(children "$bg" | head -n 1)
        if [ -n "$launcher" ]; then
            kids=$(children "$launcher" | tr '\n' ' ')
            # shellcheck disable=SC2086
            [ "$(echo $kids | wc -w)" -ge "$nranks" ] && return 0
        fi
        tries=$((tries + 1))
        sleep 0.05
    done
    return 1
}
# finish_bg RC WHAT : waits for the background run (bounded by $limit),
# expects exit status RC, then that none of its processes is left.
finish_bg() {
    wait "$bg"
    rc=$?
    if [ "$rc" -eq "$1" ]; then ok; else bad "$2: exited $rc, want $1"; fi
    left=
    for p in $launcher $kids; do
        [ -d "/proc/$p" ] && left="$left $p"
    done
    if [ -z "$left" ]; then ok; else bad "$2: processes left behind:$left"; fi
}
long="run pipeline --backend shm -n 2 --bind none --compute 200ms --iters 50"

run 0 run pingpong --backend shm --sizes 8,1MiB --json; json shm-pingpong
has "$out" '"backend": "shm"'; has "$out" '"status": "ok"'; has "$out" '"bytes": 1048576'
# A pattern's own lines (cl_printf) go to stderr beside CSV or JSON, so
# stdout stays what a program can read.
early=chapters/02-point-to-point/examples/early_read.c
for b in sim shm; do
    run 0 run "$early" --backend "$b" --json; json "printing pattern on $b"
    has "$err" "rank 1: read 0 before the wait, 42 after it"
    run 0 run "$early" --backend "$b" --csv
    if grep -q "^rank 1:" "$out"; then bad "cl_printf in the CSV on $b"; else ok; fi
done
run 0 run pingpong --backend shm --bytes 4KiB --iters 3 --warmup 0 --csv
has "$out" "bytes,iters,time_median_s"; has "$out" "4096,3,"
# Started together (the default), the CSV carries the spread of the starts;
# started at the barrier, there is none to carry.
has "$out" ",messages,start_skew_median_s,start_skew_max_s"
run 0 run pingpong --backend shm --bytes 4KiB --iters 3 --warmup 0 --csv --sync barrier
if grep -q "start_skew" "$out"; then bad "a start skew column under --sync barrier"; else ok; fi
run 0 run pingpong --bytes 4KiB --iters 3 --csv
if grep -q "start_skew" "$out"; then bad "a start skew column on sim"; else ok; fi
# A request where a pointer to one belongs is a compile error, with the
# compiler's own line, not a warning and then a crash.
run 2 run tests/data/run/wait_request.c
has "$err" "wait_request.c:12:"; has "$err" "incompatible-pointer-types"
has "$err" "cannot compile 'tests/data/run/wait_request.c'"
# A pattern that sends nothing moves no bytes: "-" in the table, 0 in the
# JSON, on the simulator and measured (where its time is not zero).
for b in sim shm; do
    run 0 run tests/data/run/silent.c --backend $b --bytes 1MiB --iters 3
    if grep -q "^1 MiB .* -  *0$" "$out"; then ok; else bad "no '-' bandwidth for silence on $b"; fi
    run 0 run tests/data/run/silent.c --backend $b --bytes 1MiB --iters 3 --json
    has "$out" '"bandwidth_Bps": 0,'
done
# The clock's debug variables (real/job.h) are checked before anything runs.
export COMMLAB_CLOCK_SHIFT=soon
run 2 run pingpong --backend shm --bytes 8 --iters 3
has "$err" "COMMLAB_CLOCK_SHIFT must be a number"
unset COMMLAB_CLOCK_SHIFT
export COMMLAB_CLOCK_DRIFT=1
run 2 run pingpong --backend tcp --bytes 8 --iters 3
has "$err" "COMMLAB_CLOCK_DRIFT must be a number between -0.1 and 0.1, got '1'"
unset COMMLAB_CLOCK_DRIFT
run 0 run relay --backend shm -n 4 --bind none --iters 3
has "$out" "rank 3: the value after 3 hops is 30"; has "$out" "relay on shm: 4 ranks"
if [ "$(grep -c "hops is" "$out")" -eq 1 ]; then ok; else bad "relay printed its line more than once"; fi
run 0 run allreduce-ring --backend shm -n 4 --bind none --bytes 1MiB --check --iters 3
run 0 run chunked --backend shm --bytes 1MiB --shm-copy staging --check --iters 3
run 0 run exchange --backend shm --bytes 100KiB --bind none --shm-copy auto --eager-limit 1KiB

# --sync: window (the default) or barrier, measured only; the JSON says
# which, and the window way gives each size's start skew.
run 0 run pingpong --backend shm --sizes 8,64KiB --iters 20 --json
json "run --sync window"; has "$out" '"sync": "window"'; has "$out" '"start_skew_s"'
run 0 run pingpong --backend shm --sizes 8 --iters 20 --sync barrier --json
json "run --sync barrier"; has "$out" '"sync": "barrier"'
if grep -q start_skew "$out"; then bad "a start skew the barrier way did not measure"; else ok; fi
run 0 run pingpong --backend shm --sizes 8 --iters 20 --sync barrier
has "$out" "each started by the barrier (--sync barrier)"
# 4 ranks on this machine's cores or more: the window way still runs.
run 0 run allreduce-ring --backend shm -n 4 --bind none --sizes 8,64KiB --iters 20 --check
has "$out" "started together (--sync window)"
run 2 run pingpong --backend shm --sync both
has "$err" "--sync must be window or barrier, got 'both'"
run 2 run pingpong --sync barrier
has "$err" "--sync"
run 0 run --help; has "$out" "--sync WAY"

# The ranks' clock (real/tick.h): the counter where the kernel's clock
# runs on it, CLOCK_MONOTONIC where it does not or when COMMLAB_CLOCK
# says so; the JSON says which, and a bad value is refused before a run.
clock_src=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)
run 0 run pingpong --backend shm --sizes 8 --iters 20 --json
json "run's clock"
if [ "$clock_src" = tsc ] && [ "$(uname -m)" = x86_64 ]; then
    has "$out" '"clock": "tsc"'
else
    has "$out" '"clock": "monotonic"'
fi
export COMMLAB_CLOCK=monotonic
run 0 run pingpong --backend shm --sizes 8 --iters 20 --json
has "$out" '"clock": "monotonic"'
run 0 run allreduce-ring --backend shm -n 4 --bind none --sizes 8 --iters 20 --check
export COMMLAB_CLOCK=rdtsc
run 2 run pingpong --backend tcp --bytes 8 --iters 3
has "$err" "COMMLAB_CLOCK must be monotonic or tsc, got 'rdtsc'"
unset COMMLAB_CLOCK

# --cache: fresh (the default), warm or cold, measured only; the header
# and the JSON say which, and every mode keeps the data checks passing.
run 0 run pingpong --backend shm --sizes 8,1MiB --iters 3 --json
json "run --cache fresh"; has "$out" '"cache": "fresh"'
run 0 run relay --backend shm --sizes 1MiB --iters 3
has "$out" "buffers written just before (--cache fresh)"
run 0 run relay --backend shm --sizes 1MiB --iters 3 --cache warm --check
has "$out" "buffers left as the last iteration left them (--cache warm)"
run 0 run exchange --backend tcp --sizes 1MiB --iters 3 --cache cold --check --json
json "run --cache cold"; has "$out" '"cache": "cold"'
run 2 run pingpong --backend shm --cache hot
has "$err" "--cache must be fresh, warm or cold, got 'hot'"
run 2 run pingpong --cache warm
has "$err" "--cache is an option of measured runs"
run 0 run --help; has "$out" "--cache MODE"

run 3 run deadlock --backend shm --bytes 1MiB --deadlock-timeout 200ms
has "$err" "rank 0: blocked in send(dst=1, tag=0, 1 MiB)"
has "$err" "rank 1: blocked in send(dst=0, tag=0, 1 MiB)"
has "$err" "cycle: rank 0 -> rank 1 -> rank 0"; has "$err" "above the eager limit (64 KiB)"
# (no short --deadlock-timeout here: on a loaded machine a rank that is not
# scheduled for that long would make a run that is no deadlock look like one)
run 0 run deadlock --backend shm --bytes 1KiB
run 0 run deadlock --backend shm --bytes 1MiB --fix order
run 0 run deadlock --backend shm --bytes 1MiB --fix nonblocking
run 0 run deadlock --backend shm --bytes 1MiB --eager-limit 2MiB
run 3 run deadlock --backend shm --bytes 1MiB --deadlock-timeout 200ms --json
json shm-deadlock; has "$out" '"status": "CL_EDEADLOCK"'

run 0 run ring --backend shm -n 3 --bind none --bytes 64KiB --iters 2 --trace "$tmpd/shm.json"
has "$out" "trace: $tmpd/shm.json"
if "$tools/tool_jsoncheck" <"$tmpd/shm.json"; then ok; else bad "shm trace is not valid JSON"; fi
if grep -q '"ph":"s"' "$tmpd/shm.json"; then ok; else bad "shm trace has no flow arrows"; fi
if grep -q '"commlab ring (shm)"' "$tmpd/shm.json"; then ok; else bad "shm trace not named"; fi
# A deadlocked run still writes its trace: it shows the stall.
run 3 run deadlock --backend shm --bytes 1MiB --deadlock-timeout 200ms --trace "$tmpd/dl.json"
if "$tools/tool_jsoncheck" <"$tmpd/dl.json"; then ok; else bad "deadlock trace is not valid JSON"; fi

# A rank killed from outside: the run stops, names it, leaves nothing.
if start_ranks 2 $long; then
    ok
    set -- $kids
    kill -9 "$2"
    finish_bg 4 "a rank killed with SIGKILL"
    if grep -q "rank [01] was killed by signal 9 (SIGKILL)" "$err"; then ok
    else bad "the killed rank is not named with its signal"; fi
else
    bad "$long: ranks never started (launcher '$launcher', ranks '$kids')"
    kill -9 "$bg" 2>/dev/null
    wait "$bg"
fi
# Ctrl-C: SIGINT to the launcher stops every rank, exit 128 + 2.
if start_ranks 2 $long; then
    ok
    kill -INT "$launcher"
    finish_bg 130 "SIGINT to the launcher"
    has "$err" "interrupted (SIGINT)"
else
    bad "$long: ranks never started (launcher '$launcher', ranks '$kids')"
    kill -9 "$bg" 2>/dev/null
    wait "$bg"
fi
# Ctrl-C at a terminal signals the whole process group, ranks included.
if start_ranks 2 $long; then
    ok
    kill -INT -"$bg"
    finish_bg 130 "SIGINT to the process group"
else
    bad "$long: ranks never started (launcher '$launcher', ranks '$kids')"
    kill -9 "$bg" 2>/dev/null
    wait "$bg"
fi

# --- libfabric and the MPI library are opened only by what needs them
# (real/dlib.h).  LD_DEBUG=files names on stderr every library a process
# loads, those it opens with dlopen too, in the launcher and every rank. ---
for c in "--help" "price" "run ring -n 4" "run ring --backend shm -n 2 --bind none -i 2" \
    "run ring --backend tcp -n 2 --bind none -i 2"; do
    # shellcheck disable=SC2086
    LD_DEBUG=files $limit "$cl" $c >"$out" 2>"$err"
    rc=$?
    libs=$(grep -oE 'file=lib(fabric|mpi)\.so[.0-9]*' "$err" | sort -u | tr '\n' ' ')
    if [ "$rc" -eq 0 ] && [ -z "$libs" ]; then ok; else bad "commlab $c: exit $rc, loaded: $libs"; fi
done
LD_DEBUG=files $limit "$cl" fabric >"$out" 2>"$err"
has "$err" "file=libfabric.so.1" # what the loop looks for shows where it is loaded
# A library that cannot be loaded is named, and the command that needs it
# fails (exit 4); the others never touch it.
mkdir "$tmpd/nolib"
echo "not a library" >"$tmpd/nolib/libfabric.so.1"
echo "not a library" >"$tmpd/nolib/libmpi.so.40"
nolib() {
    want=$1
    shift
    LD_LIBRARY_PATH="$tmpd/nolib" $limit "$cl" "$@" >"$out" 2>"$err"
    rc=$?
    if [ "$rc" -eq "$want" ]; then ok; else bad "commlab $* without libraries exited $rc, want $want"; fi
}
fabric_gone="the rdma backend (Debian package libfabric1) needs libfabric.so.1, which cannot be loaded: "
nolib 4 fabric; has "$err" "$fabric_gone"
nolib 4 run ring --backend rdma -n 2; has "$err" "$fabric_gone"
nolib 0 run ring -n 4 --backend shm --bind none -i 2
if "$cl" --version | grep -q "^  mpi   built"; then
    nolib 4 fabric --mpi; has "$err" "needs libmpi.so.40, which cannot be loaded: "
    nolib 0 --version; has "$out" "needs libmpi.so.40, which cannot be loaded: "
fi
# Ctrl-C in a simulated run: the default action, exit 128 + 2 (no library's
# handler makes it exit 1).  Started in the background, commlab inherits
# SIGINT ignored and main takes back the default: signalled once it has.
$limit "$cl" run ring -n 16384 --no-payload --sizes 8:1GiB:x2 >"$out" 2>"$err" &
bg=$!
launcher=
kids=
tries=0
ignores=2
while [ "$tries" -lt 200 ] && [ "$ignores" -ne 0 ]; do
    [ -z "$launcher" ] && launcher=$(children "$bg" | head -n 1)
    ign=$(sed -n 's/^SigIgn:[[:space:]]*//p' "/proc/$launcher/status" 2>/dev/null)
    [ -n "$ign" ] && ignores=$((0x$ign & 2))
    tries=$((tries + 1))
    [ "$ignores" -ne 0 ] && sleep 0.02
done
kill -INT "$launcher" 2>/dev/null
finish_bg 130 "SIGINT to a simulated run"

run 2 run ring --backend shm --tier nvlink
has "$err" "--tier is an option of the model: it does not apply to --backend shm"
run 2 run ring --backend shm --no-payload; has "$err" "--no-payload is an option of the model"
run 2 run ring --backend shm --stack-size 1MiB; has "$err" "--stack-size is an option of the model"
run 2 run ring --backend shm --bind bogus; has "$err" "--bind must be core or none, got 'bogus'"
run 2 run ring --backend shm --deadlock-timeout -1; has "$err" "--deadlock-timeout"
run 2 run ring --backend shm --deadlock-timeout 1ms; has "$err" "between 10ms and 1h"
run 2 run ring --backend shm --shm-copy bogus; has "$err" "--shm-copy must be auto, cma or staging"
run 2 run ring --bind none; has "$err" "--bind is an option of measured runs"
run 2 run ring --shm-copy staging; has "$err" "--shm-copy is an option of measured runs"
run 2 run ring --deadlock-timeout 1s; has "$err" "--deadlock-timeout is an option of measured runs"
run 2 run ring --backend shm -n 300; has "$err" "at most 256 ranks"
run 2 run pingpong --backend shm -n 1; has "$err" "needs at least 2 ranks"
# --- end of run --backend shm ---

run 0 bench --help;        has "$out" "usage: commlab bench"
run 2 bench;               has "$err" "which benchmark"
run 2 bench shm --profile; has "$err" "--profile is for 'bench sim' only"
run 2 bench all --profile; has "$err" "--profile is for 'bench sim' only"
run 2 bench start --profile; has "$err" "--profile is for 'bench sim' only"
run 2 bench tcp --long;    has "$err" "--long is for 'bench sim' only"
run 2 bench all --long;    has "$err" "--long is for 'bench sim' only"
# bench start: a row per command, none failed (figures only, none checked)
run 0 bench start --quick; has "$out" "run ring -n 4"; has "$out" "fabric"
if grep -q "failed" "$out"; then bad "bench start: a command failed"; else ok; fi

finish
