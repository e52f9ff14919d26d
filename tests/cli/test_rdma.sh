#!/bin/sh
# test_rdma.sh COMMLAB TOOLDIR - `run --backend rdma` and `commlab fabric` as
# a user meets them: data checks on the shm and tcp providers, the deadlock
# (exit 3), a provider that is not here (exit 2), --json, and nothing left in
# /dev/shm, even by a launcher killed with SIGKILL (the next run removes it).
. "$(dirname "$0")/lib.sh"
# Regions are named after their launcher's pid: the end looks for those of
# this script's commands only (another job's may be in /dev/shm beside).
record_pids

run 0 fabric --help;       has "$out" "usage: commlab fabric"
run 0 fabric;              has "$out" "tagged"; has "$out" "tcp"; has "$out" "--provider auto picks: shm"
run 0 fabric --json;       json fabric; has "$out" '"providers"'
run 2 fabric extra;        has "$err" "unexpected argument 'extra'"
run 0 run --help;          has "$out" "--provider NAME"

# every message checked, eager and rendezvous (pulled by RDMA read)
for p in tcp shm; do
    run 0 run allreduce-ring --backend rdma --provider $p -n 4 --sizes 8,1MiB --check -i 2 --warmup 1
    has "$out" "allreduce-ring on rdma: 4 ranks"
    run 0 run pingpong --backend rdma --provider $p --bytes 100KiB -i 20 --check
done
# a reduction in another type and operator, checked (issue 36)
run 0 run allreduce --algo all --backend rdma --provider tcp -n 3 --bytes 100003 --op min \
    --dtype f16 --check -i 1 --warmup 0
run 0 run pingpong --backend rdma --sizes 8,100KiB --json -i 2 --warmup 1
json "run --backend rdma --json"; has "$out" '"backend": "rdma"'
for p in tcp shm; do
    run 3 run deadlock --backend rdma --provider $p --bytes 1MiB --deadlock-timeout 200ms
    has "$err" "rank 0: blocked in send(dst=1, tag=0, 1 MiB)"; has "$err" "cycle: rank 0 -> rank 1 -> rank 0"
done
run 0 run deadlock --backend rdma --bytes 1KiB -i 2

# a provider that is not here: exit 2, with the ones that can run
run 2 run pingpong --backend rdma --provider verbs
has "$err" "provider 'verbs' is not available here; available: "; has "$err" "tcp"; has "$err" "shm"
run 2 run pingpong --backend shm --provider tcp
has "$err" "--provider is an option of --backend rdma"
run 2 run pingpong --provider tcp; has "$err" "--provider is an option of measured runs"

# A launcher killed outright leaves its ranks' regions (its ranks die with
# it); the next run removes them: their launcher's pid is in their name.
"$cl" run pingpong --backend rdma --provider shm --bytes 8 --iters 1000000 >/dev/null 2>&1 &
victim=$!
echo "$victim" >>"$tmpd/pids"
tries=0
while [ "$tries" -lt 100 ] && ! ls /dev/shm | grep -q "^commlab-$victim-"; do
    sleep 0.1
    tries=$((tries + 1))
done
kill -9 "$victim"
wait "$victim" 2>/dev/null
if ls /dev/shm | grep -q "^commlab-$victim-"; then ok
else bad "the killed launcher $victim left no region to reap: the test proves nothing"; fi
run 0 run pingpong --backend rdma --provider shm --bytes 8 -i 2
if ls /dev/shm | grep -q "^commlab-$victim-"; then
    bad "the killed launcher's regions are still in /dev/shm after the next run"
    rm -f /dev/shm/commlab-"$victim"-*
else ok; fi

left=
for p in $(cat "$tmpd/pids"); do
    left="$left$(ls /dev/shm | grep "^commlab-$p-")"
done
if [ -z "$left" ]; then ok; else bad "left in /dev/shm: $left"; fi
finish
