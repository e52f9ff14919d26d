#!/bin/sh
# test_fault.sh COMMLAB TOOLDIR - a student's pattern that crashes, writes
# past a block, ends the process or never ends (tests/data/fault/): on sim
# the tool reports the rank and the call it was in and exits 4, as the
# measured backends do;
# --timeout ends a run that makes no progress and names the rank that did
# not; a stopped measured rank is called stopped, not deadlocked; and an
# exercise step past its budget fails with the reason.
. "$(dirname "$0")/lib.sh"
d=tests/data/fault

run 0 run --help; has "$out" "--timeout TIME"
run 0 compare --help; has "$out" "--timeout TIME"
run 0 exercise --help; has "$out" "--timeout TIME"
run 2 run ring --timeout 5; has "$err" "--timeout: time '5' needs a unit"
run 2 run ring --timeout 2ns; has "$err" "--timeout must be between 10ms and a week"
run 2 exercise list --timeout 2s; has "$err" "--timeout applies to run and check"
run 0 run ring --timeout 0
run 0 run ring --timeout none

# Sim: each failure named, exit 4; what the pattern printed first stays.
run 4 run $d/segv.c --bytes 8
has "$err" "commlab: rank 1 crashed in its own code: signal 11 (SIGSEGV: Segmentation fault at address 0x0)"
has "$out" "rank 0: before the crash"
run 4 run $d/abort.c --bytes 8
has "$err" "rank 1 crashed in its own code: signal 6 (SIGABRT: Aborted, abort() or a failed assert)"
run 4 run $d/bad_send.c --bytes 8
has "$err" "rank 0 crashed in cl_send: signal 11 (SIGSEGV: Segmentation fault at address 0x10)"
run 4 run $d/bigarray.c --bytes 8
has "$err" "rank 1 overflowed its 64 KiB stack in its own code (raise it with --stack-size"
run 0 run $d/bigarray.c --bytes 8 --stack-size 1MiB
run 4 run $d/exit0.c --bytes 8
has "$err" "rank 1 called exit(0) in its own code: a rank ends by returning from its pattern"
run 4 run $d/exit3.c --bytes 8
has "$err" "rank 1 called exit(3) in its own code"
run 4 run $d/exit3.c --bytes 8 --json
json "run --json after a failed rank"
has "$out" '"status": "CL_EPEER"'

# Sim: a write past the end of a cl_alloc block names the rank and the
# block, exit 4 (it ended the tool with SIGSEGV, or glibc's "double free or
# corruption", status 134).
run 4 run $d/overrun.c --bytes 1KiB
has "$err" "commlab: rank 1 wrote past the end of its block from cl_alloc #1 (1 KiB) in its own code: a write to byte 1024 of the 1024-byte block (a SIGSEGV at the guard page after it)"
has "$out" "rank 0: before the overrun"
run 4 run $d/overrun_near.c
has "$err" "commlab: rank 1 wrote past the end of its block from cl_alloc #1 (1000 B): bytes 1000..1011 of the 1000-byte block were changed (found when its iteration ended)"
run 4 run $d/overrun_recv.c --bytes 1KiB
has "$err" "commlab: rank 0's block from cl_alloc #1 (1 KiB) was written past its end while rank 1 ran in cl_send: a write to byte"
if grep -q "double free\|corrupt" "$err"; then bad "the C library found the overrun first"; else ok; fi

# Sim: what a rank forks and leaves running ends with the run, and is said
# (it was left running, the run ending 0 without a word).  SIGKILL is
# delivered soon, not at once: each process has up to 20 s to be gone (or
# a zombie).
ended() {
    s=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)
    [ -z "$s" ] || [ "$s" = Z ]
}
run 0 run $d/fork_left.c --bytes 8
has "$err" ", still running when the run ended: killed (what a rank forks ends with the run)"
has "$err" ", which ended but left processes running in its group when the run ended: killed"
for r in 0 1; do
    has "$err" "commlab: rank $r forked process $(sed -n "s/^rank $r: forked //p" "$out"), "
done
for p in $(sed -n 's/^rank 1: forked //p; s/^grandchild //p' "$out"); do
    i=0
    while ! ended "$p" && [ $i -lt 100 ]; do
        sleep 0.2
        i=$((i + 1))
    done
    if ended "$p"; then ok; else bad "process $p, forked by a rank, outlived the run"; kill -9 "$p"; fi
done

# Sim: a rank that loops in its own code while another waits.
run 4 run $d/spin.c --bytes 8 --timeout 1s
has "$err" "rank 0: blocked in recv(src=1, tag=0, 4 B)"
has "$err" "rank 1: running"
has "$err" "commlab: rank 1 made no progress: at --timeout 1 s it was running in its own code"

# Measured: the same files keep their reports (exit 4), the spinning rank
# is named at --timeout, and a stopped rank is called stopped.
for b in shm tcp; do
    run 4 run $d/segv.c --bytes 8 --backend $b
    has "$err" "rank 1 was killed by signal 11 (SIGSEGV)"
    run 4 run $d/exit0.c --bytes 8 --backend $b
    has "$err" "rank 1 exited with status 0"
    run 4 run $d/spin.c --bytes 8 --backend $b --timeout 1s
    has "$err" "rank 0: blocked in recv(src=1, tag=0, 4 B)"
    has "$err" "the run took longer than --timeout 1 s: rank 1 made no progress, running its own code (or polling)"
    # (The margins are for a loaded machine: rank 1 must have stopped
    # itself before --timeout; and a rank sent SIGSTOP is in state T only
    # once it is scheduled again, until when it looks blocked.)
    run 4 run $d/stop.c --bytes 8 --backend $b --timeout 3s
    has "$err" "the run took longer than --timeout 3 s: rank 1 is stopped (pid"
    # Blocked, then stopped: no deadlock, whatever the slots say; the stall
    # is noted once the deadlock timeout has passed.
    run 4 run $d/stop_blocked.c --bytes 8 --backend $b --deadlock-timeout 1s --timeout 4s
    has "$err" "is stopped (state T in /proc/"
    has "$err" "the run took longer than --timeout 4 s: rank 1 is stopped"
    if grep -q "deadlock:" "$err"; then bad "a stopped rank on $b was called a deadlock"; else ok; fi
done
# Stopped for 3 s (longer than the deadlock timeout, every rank blocked),
# then continued: no deadlock, the run ends well.  Once continued, rank 1
# spends 300 ms in its SIGCONT handler, so the moment where it runs but has
# not moved yet, where it was called deadlocked in 9 of 25 runs, comes
# every time.
for b in shm tcp rdma; do
    run 0 run $d/stop_continue.c --bytes 8 --backend $b -i 1 --warmup 0
    has "$err" "rank 1 (pid "
    if grep -q "deadlock" "$err"; then bad "a rank stopped, then continued, on $b was called a deadlock"; else ok; fi
done
run 4 run $d/stop_blocked.c --bytes 8 --backend rdma --deadlock-timeout 1s --timeout 4s
has "$err" "the run took longer than --timeout 4 s: rank 1 is stopped"
if grep -q "deadlock:" "$err"; then bad "a stopped rank on rdma was called a deadlock"; else ok; fi

# A long run past --timeout whose ranks keep making progress is called
# that: no rank blamed, no wait-for report (a healthy run was reported as
# a rank that "made no progress", or as a deadlock cycle of ranks caught
# mid-message).  Ranks deadlocked among themselves while others go on are
# named as such.
lacks() {
    if grep -q -- "$1" "$err"; then bad "'$1' in a report of ${2:-a healthy run}"; else ok; fi
}
run 4 run allreduce-ring -n 4 --bytes 1MiB --iters 1000000 --timeout 1s
has "$err" "the run took longer than --timeout 1 s, its ranks still making progress (stopped at t = "
lacks "made no progress"
lacks "deadlock"
run 4 run $d/half_stuck.c -n 4 --bytes 8 --timeout 1s
has "$err" "the run took longer than --timeout 1 s: ranks are deadlocked among themselves (the report above), while others went on"
has "$err" "cycle: rank 2 -> rank 3 -> rank 2"
for b in shm tcp rdma; do
    run 4 run pingpong --backend $b --bytes 1MiB --iters 1000000 --timeout 4s
    has "$err" "the run took longer than --timeout 4 s, its ranks still making progress (messages moved, or cl_compute ran, on 2 of its 2 unfinished ranks"
    lacks "made no progress"
    lacks "deadlock"
    lacks "cycle:"
done
for b in shm tcp; do
    run 4 run $d/half_stuck.c -n 4 --backend $b --bytes 8 --timeout 4s
    has "$err" "the run took longer than --timeout 4 s: ranks are deadlocked among themselves (the report above), while messages moved on 2 others"
    has "$err" "deadlock: the blocked ranks can make no progress"
    has "$err" "cycle: rank 2 -> rank 3 -> rank 2"
    lacks "made no progress" "ranks 0 and 1 going on"
done

# A rank that returns early: every backend says the rank waited on
# returned, also past the first iteration, where it waits in the barrier
# between iterations (measured backends called that a cycle of ranks that
# "receive before they send").
for b in sim shm tcp rdma; do
    for i in 1 3; do
        dl=--deadlock-timeout=500ms
        [ $b = sim ] && dl=
        run 3 run $d/early_return.c --bytes 8 --backend $b -i $i --warmup 0 $dl
        has "$err" "rank 0 waits on rank 1, which already returned"
        has "$err" "1 of 2 ranks blocked"
        if grep -q "cycle:" "$err"; then bad "$b -i $i: a rank that returned was put on a cycle"; else ok; fi
    done
done

# An exercise step past its budget fails with the rank that made no progress.
cp $d/spin.c "$tmpd/myring.c"
run 1 exercise check 2.1 --file "$tmpd/myring.c" --timeout 1s
has "$out" "took longer than its budget of 1 s per step: rank 1 made no progress"

finish
