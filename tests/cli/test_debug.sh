#!/bin/sh
# test_debug.sh COMMLAB TOOLDIR - `run --debug` as a user meets it: chapter
# 02's pitfalls on sim with their reports and exit statuses, each misuse of
# tests/data/debug/ caught on every backend (the patterns make the misuse
# happen before completion whatever the timing: the reports do not depend
# on it), legal buffer use passing everywhere, the same runs without
# --debug behaving as before, and `exercise check --debug`.
. "$(dirname "$0")/lib.sh"
ex=chapters/02-point-to-point/examples
d=tests/data/debug

run 0 run --help;      has "$out" "--debug"; has "$out" "poison byte 0xdb"
run 0 exercise --help; has "$out" "--debug"
run 2 exercise show 2.1 --debug; has "$err" "--debug applies to run and check"
run 2 run ring --debug --no-payload; has "$err" "--debug checks buffers and a --no-payload run has none"

# Chapter 02 on sim: pitfall 1 is the deadlock report, as without --debug.
run 3 run $ex/mismatch.c --bytes 8
cp "$err" "$tmpd/plain.err"
run 3 run $ex/mismatch.c --bytes 8 --debug
if cmp -s "$err" "$tmpd/plain.err"; then ok; else bad "--debug changed the deadlock report"; fi
has "$err" "rank 1: blocked in recv(src=0, tag=0, 8 B)"

# Pitfall 2: caught at the wait, above and below the eager limit.
run 1 run $ex/reuse.c --bytes 1MiB --debug
has "$err" "commlab: rank 0: misuse: the send buffer of isend #1 (dst=1, tag=0, 1 MiB at cl_alloc #1) was modified before the send completed (posted at t = 1 us, completed at t = 1.01 ms)"
run 1 run $ex/reuse.c --bytes 1KiB --debug
has "$err" "rank 0: misuse: the send buffer of isend #1 (dst=1, tag=0, 1 KiB at cl_alloc #1) was modified"
run 1 run $ex/reuse.c --bytes 1MiB;  has "$err" "rank 1: data check failed: the first message"
run 0 run $ex/reuse.c --bytes 1KiB

# Pitfall 3: the early read sees the poison, not a plausible 0.
run 0 run $ex/early_read.c --bytes 8 --debug
has "$out" "rank 1: read 0xdbdbdbdbdbdbdbdb before the wait, 42 after it"
run 0 run $ex/early_read.c --bytes 8
has "$out" "rank 1: read 0 before the wait, 42 after it"

# Every misuse on every backend (rdma through libfabric's tcp provider).
for b in sim shm tcp rdma; do
    extra=
    [ "$b" = rdma ] && extra="--provider tcp"
    run 1 run $d/send_modified.c --backend $b $extra --bytes 1MiB --debug
    has "$err" "rank 0: misuse: the send buffer of isend #1 (dst=1, tag=0, 1 MiB at cl_alloc #1) was modified before the send completed"
    run 0 run $d/send_modified.c --backend $b $extra --bytes 1MiB
    run 1 run $d/recv_written.c --backend $b $extra --bytes 64KiB --debug
    has "$err" "rank 1: misuse: the receive buffer of irecv #1 (src=0, tag=0, 64 KiB at cl_alloc #1) was written before the receive completed: byte 0 is 0x01, not the poison 0xdb"
    run 0 run $d/recv_written.c --backend $b $extra --bytes 64KiB
    run 1 run $d/send_pending_recv.c --backend $b $extra --bytes 8 --debug
    has "$err" "rank 1: misuse: send #1 (dst=0, tag=0, 8 B at cl_alloc #1) would read the buffer of irecv #1 (src=0, tag=0, 8 B at cl_alloc #1) before that receive completed"
    run 0 run $d/send_pending_recv.c --backend $b $extra --bytes 8
    run 1 run $d/ignored.c --backend $b $extra --bytes 1KiB --debug
    has "$err" "rank 0: misuse: the send buffer of isend #1"
    run 1 run $d/early_use.c --backend $b $extra --bytes 1KiB --debug
    has "$err" "the copy taken before the wait: byte 0 of 1024 is 0xdb, expected"
    has "$err" "0xdb is the poison --debug leaves in a receive buffer until the receive completes"
    # No false alarm: legal reuse, and patterns that keep the rules.
    run 0 run $d/legal.c --backend $b $extra -n 3 --sizes 8,1MiB --debug
    run 0 run $d/legal.c --backend $b $extra -n 3 --sizes 8,1MiB
    run 0 run ring --backend $b $extra -n 4 --sizes 8,1MiB --debug -i 2
    run 0 run pingpong --backend $b $extra --sizes 8,1MiB --debug -i 2
done
run 1 run $ex/reuse.c --backend shm --bytes 1MiB --debug  # either rank's report: both exit 1
run 0 run allreduce-ring --backend shm -n 3 --bytes 1MiB --debug --check -i 2
run 0 run chunked --backend tcp --bytes 1MiB --debug -i 2

# The same tables with and without --debug on sim: it costs no modeled time.
run 0 run pipeline -n 4 --compute 1ms --bytes 1KiB --debug
cp "$out" "$tmpd/debug.out"
run 0 run pipeline -n 4 --compute 1ms --bytes 1KiB
if cmp -s "$out" "$tmpd/debug.out"; then ok; else bad "--debug changed a modeled run's output"; fi

# Exercises pass it on to their runs; check does by default.
run 0 exercise check 2.2 --solution --debug
has "$out" "--bytes 1MiB --backend sim --debug"; has "$out" "passed: all"
run 0 exercise check 2.2 --solution
has "$out" "--bytes 1MiB --backend sim --debug"; has "$out" "passed: all"
run 0 exercise check 2.2 --solution --no-debug
if grep -q -- "--debug" "$out"; then bad "--no-debug still ran with --debug"; else ok; fi

# Nothing left behind by the failed measured runs.
if command -v pgrep >/dev/null 2>&1 && pgrep -f "$cl run $d/" >/dev/null; then
    bad "rank processes of tests/data/debug runs are still alive"
else
    ok
fi
finish
