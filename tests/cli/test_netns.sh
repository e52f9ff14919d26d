#!/bin/sh
# test_netns.sh COMMLAB TOOLDIR - a world over two hosts that share no
# loopback: two network namespaces made here, joined by a veth pair
# (10.77.N.1 and 10.77.N.2), one rank in each, over tcp and rdma.  What loopback runs cannot
# show: every rank must be reached at an address of its own host, with
# --listen left out, with --listen 0.0.0.0 (told to the others as the
# address that reaches rank 0), and a rank that cannot reach the master
# gives up at its join timeout.  Needs root and iproute2 (`make deps`);
# says so and checks nothing without them.
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null 2>&1; then
    echo "skip: network namespaces need root and ip (iproute2)"
    finish
    exit $?
fi

# Names unique to this run; both namespaces and the veth pair go at exit.
tag=$$
nsa=commlab-a-$tag
nsb=commlab-b-$tag
net=10.77.$((tag % 250))
cleanup() {
    ip netns del "$nsa" 2>/dev/null
    ip netns del "$nsb" 2>/dev/null
    rm -rf "$out" "$err" "$tmpd"
}
trap cleanup EXIT
if ! { ip netns add "$nsa" && ip netns add "$nsb" &&
       ip link add "cla$tag" type veth peer name "clb$tag" &&
       ip link set "cla$tag" netns "$nsa" && ip link set "clb$tag" netns "$nsb" &&
       ip -n "$nsa" addr add "$net.1/24" dev "cla$tag" &&
       ip -n "$nsb" addr add "$net.2/24" dev "clb$tag" &&
       ip -n "$nsa" link set "cla$tag" up && ip -n "$nsb" link set "clb$tag" up &&
       ip -n "$nsa" link set lo up && ip -n "$nsb" link set lo up; } 2>"$err"; then
    echo "skip: cannot make network namespaces here: $(head -c 300 "$err")"
    finish
    exit $?
fi

export COMMLAB_SECRET=netns-test-secret-0123456789
port=$((20000 + tag % 20000))

# pair OUTPREFIX ARGS... : rank 0 in namespace a (the master), rank 1 in
# namespace b (with the environment variables in $b_env, if any); each
# one's stdout, stderr and exit status go to OUTPREFIX.r.{out,err,rc}.
b_env=
pair() {
    pre=$1
    shift
    ( ip netns exec "$nsb" env $b_env $limit "$cl" "$@" --rank 1 --world 2 --master "$net.1:$port" \
        >"$pre.1.out" 2>"$pre.1.err"; echo $? >"$pre.1.rc" ) &
    ip netns exec "$nsa" $limit "$cl" "$@" --rank 0 --world 2 --master "$net.1:$port" \
        >"$pre.0.out" 2>"$pre.0.err"
    echo $? >"$pre.0.rc"
    wait
    port=$((port + 1))
}

# both PREFIX RC: both processes exited RC.
both() {
    if [ "$(cat "$1.0.rc")" = "$2" ] && [ "$(cat "$1.1.rc")" = "$2" ]; then ok
    else
        cp "$1.0.err" "$err"
        bad "$(basename "$1"): exits $(cat "$1.0.rc") and $(cat "$1.1.rc"), want $2 and $2"
    fi
}

for p in ring exchange allreduce-ring; do
    pair "$tmpd/$p" run "$p" --backend tcp --sizes 8,100KiB,1MiB --check -i 3
    both "$tmpd/$p" 0
    has "$tmpd/$p.0.out" "$p on tcp: 2 ranks"
done

# --listen 0.0.0.0 binds every interface; the others must be told one that
# reaches this host (before, they were told 127.0.0.1 and could not connect).
pair "$tmpd/any" run ring --backend tcp --listen 0.0.0.0 --bytes 1MiB --check -i 3
both "$tmpd/any" 0
has "$tmpd/any.0.out" "ring on tcp: 2 ranks"

# rdma across hosts: endpoints bind to the interface that reaches rank 0
# (local runs pick libfabric's loopback domain, unreachable from the other
# host), and auto picks a NIC provider (tcp here), not shm.
for prov in tcp auto; do
    pair "$tmpd/rdma-$prov" run ring --backend rdma --provider "$prov" --sizes 8,1MiB --check -i 3
    both "$tmpd/rdma-$prov" 0
    has "$tmpd/rdma-$prov.0.out" "ring on rdma: 2 ranks"
done

# Clocks that disagree: rank 1 reads its clock 5 s ahead (the debug
# variable COMMLAB_CLOCK_SHIFT), as another host's may.  The window way
# (the default) estimates each rank's offset to rank 0 before the first
# iteration, so the ranks still start together: uncorrected, every
# iteration would wait the 5 s for rank 1's proposed start, or count them.
# The bounds are wide (a loopback round trip is tens of microseconds; a
# busy machine may add milliseconds): the point is seconds against less
# than a tenth of one.
for b in tcp rdma; do
    pre="$tmpd/shift-$b"
    b_env=COMMLAB_CLOCK_SHIFT=5
    pair "$pre" run pingpong --backend $b --sizes 8,64KiB -i 20 --json
    b_env=
    both "$pre" 0
    # Every median time and start skew, in seconds, under 0.1 s.
    worst=$(awk '/"median"/ { gsub(/[",]/, ""); if ($2 + 0 > m) m = $2 + 0 } END { print m + 0 }' \
        "$pre.0.out")
    if awk -v m="$worst" 'BEGIN { exit !(m > 0 && m < 0.1) }'; then ok
    else
        cp "$pre.0.out" "$out"
        bad "$b with rank 1's clock 5 s ahead: a median of $worst s, want under 0.1 s"
    fi
    has "$pre.0.out" '"start_skew_s"'
done

# Clocks that drift apart: rank 1's runs 1 % fast (COMMLAB_CLOCK_DRIFT),
# where real crystals differ by tens of parts per million; the magnifying
# glass makes the drift show within a run of a second or two.  Rank 1
# receives, so with the offset of the start alone its end would count
# 10 ms more every second, and its proposed starts come later by as much,
# so the run slows until --timeout ends it.  Estimated again every second
# and carried forward at the drift measured since the first estimate
# (core/sync.h), the 8 B relay stays a loopback-link's time.
pre="$tmpd/drift"
b_env=COMMLAB_CLOCK_DRIFT=0.01
pair "$pre" run relay --backend tcp --sizes 8 -i 2000 --json --timeout 60s
b_env=
both "$pre" 0
median=$(awk '/"median"/ { gsub(/[",]/, ""); print $2; exit }' "$pre.0.out")
if awk -v m="$median" 'BEGIN { exit !(m > 0 && m < 0.005) }'; then ok
else
    cp "$pre.0.out" "$out"
    bad "relay with rank 1's clock drifting 1 %: a median of $median s, want under 5 ms"
fi

# A master nobody can reach (namespace b has no route to it): the join
# gives up at its timeout, naming the address.
ip netns exec "$nsb" $limit "$cl" run ring --backend tcp --rank 1 --world 2 \
    --master 10.254.0.1:$port --join-timeout 1s >"$out" 2>"$err"
rc=$?
if [ "$rc" -eq 4 ]; then ok; else bad "unreachable master: exit $rc, want 4"; fi
has "$err" "cannot reach rank 0's rendezvous on 10.254.0.1:$port within 1 s"

finish
