#!/bin/sh
# test_mpi_faults.sh COMMLAB TOOLDIR - `--backend mpi` when a rank's
# pattern misbehaves or the job is stopped from outside: a rank that calls
# exit() is named at once (exit 4); a process a pattern forks ends with the
# rank's process, and the run with it.  Skips, saying why, where the backend
# is not built or mpirun is missing (tests/cli/test_mpi.sh checks what is
# said then).
. "$(dirname "$0")/lib.sh"

if ! "$cl" --version | grep -q "^  mpi   built" || ! command -v mpirun >/dev/null 2>&1; then
    echo "skipped: the mpi backend is not built here, or mpirun is missing"
    # --- a process the pattern forks: the run ends, the child with it ---
run 0 run tests/data/mpi/fork_child.c --backend mpi --bytes 8
has "$err" "commlab: rank 1: the process its pattern forked (pid "
has "$err" "still ran when the rank's process ended: it ends with it"
kid=$(sed -n 's/.*its pattern forked (pid \([0-9]*\)).*/\1/p' "$err")
# (bounded only to turn a leak into a failure: SIGKILL is on its way)
tries=0
while [ -n "$kid" ] && kill -0 "$kid" 2>/dev/null && [ "$tries" -lt 100 ]; do
    sleep 0.1
    tries=$((tries + 1))
done
if [ -n "$kid" ] && ! kill -0 "$kid" 2>/dev/null; then ok
else bad "the forked child '$kid' outlived the run"; fi
# One that goes on into commlab as if it were the rank is ended there.
run 0 run tests/data/mpi/fork_returns.c --backend mpi --bytes 8
has "$err" "commlab: rank 1: a process its pattern forked (pid "
has "$err" "went on into a send or receive: only the rank's own process talks MPI; it is ended"

finish
    exit $?
fi

# --- exit() in a pattern: named at once, not at --timeout; rank 0 too,
# which reports for the world ---
run 4 run tests/data/fault/exit0.c --backend mpi --bytes 8 --timeout 60s
has "$err" "commlab: rank 1 called exit(0) in its own code: a rank ends by returning from its pattern"
run 4 run tests/data/mpi/exit_rank0.c --backend mpi -n 3 --bytes 8 --timeout 60s
has "$err" "commlab: rank 0 called exit(3) in its own code"
if grep -q "timeout" "$err"; then bad "exit() was found at --timeout"; else ok; fi

# --- a process the pattern forks: the run ends, the child with it ---
run 0 run tests/data/mpi/fork_child.c --backend mpi --bytes 8
has "$err" "commlab: rank 1: the process its pattern forked (pid "
has "$err" "still ran when the rank's process ended: it ends with it"
kid=$(sed -n 's/.*its pattern forked (pid \([0-9]*\)).*/\1/p' "$err")
# (bounded only to turn a leak into a failure: SIGKILL is on its way)
tries=0
while [ -n "$kid" ] && kill -0 "$kid" 2>/dev/null && [ "$tries" -lt 100 ]; do
    sleep 0.1
    tries=$((tries + 1))
done
if [ -n "$kid" ] && ! kill -0 "$kid" 2>/dev/null; then ok
else bad "the forked child '$kid' outlived the run"; fi
# One that goes on into commlab as if it were the rank is ended there.
run 0 run tests/data/mpi/fork_returns.c --backend mpi --bytes 8
has "$err" "commlab: rank 1: a process its pattern forked (pid "
has "$err" "went on into a send or receive: only the rank's own process talks MPI; it is ended"

finish
