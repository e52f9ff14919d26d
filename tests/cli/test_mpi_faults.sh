#!/bin/sh
# test_mpi_faults.sh COMMLAB TOOLDIR - `--backend mpi` when a rank's
# pattern misbehaves or the job is stopped from outside: a rank that calls
# exit() is named at once (exit 4).  Skips, saying why, where the backend
# is not built or mpirun is missing (tests/cli/test_mpi.sh checks what is
# said then).
. "$(dirname "$0")/lib.sh"

if ! "$cl" --version | grep -q "^  mpi   built" || ! command -v mpirun >/dev/null 2>&1; then
    echo "skipped: the mpi backend is not built here, or mpirun is missing"
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

finish
