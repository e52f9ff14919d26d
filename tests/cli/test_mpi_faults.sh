#!/bin/sh
# test_mpi_faults.sh COMMLAB TOOLDIR - `--backend mpi` when a rank's
# pattern misbehaves or the job is stopped from outside: a rank that calls
# exit() is named at once (exit 4); a process a pattern forks ends with the
# rank's process, and the run with it; a stopped rank is called stopped;
# Ctrl-C and SIGTERM exit 130 and 143, a killed mpirun or guardian 4, each
# saying so, and none leaves a process or a file of Open MPI's behind;
# nothing of a job listens beyond the host.  Skips, saying why, where the
# backend is not built or mpirun is missing (tests/cli/test_mpi.sh checks
# what is said then).
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

# --- a stopped rank (SIGSTOP: state T) is called stopped, not running its
# own code, and is no deadlock ---
# (The margins are for a loaded machine: rank 1 must have stopped itself
# before --timeout; and a rank sent SIGSTOP is in state T only once it is
# scheduled again, until when it looks blocked.)
d=tests/data/fault
run 4 run $d/stop.c --bytes 8 --backend mpi --timeout 3s
has "$err" "the run took longer than --timeout 3 s: rank 1 is stopped (pid"
if grep -q "running its own code" "$err"; then bad "a stopped rank was said to run"; else ok; fi
run 4 run $d/stop_blocked.c --bytes 8 --backend mpi --deadlock-timeout 1s --timeout 4s
has "$err" "is stopped (state T in /proc/"
has "$err" "the run took longer than --timeout 4 s: rank 1 is stopped"
if grep -q "deadlock:" "$err"; then bad "a stopped rank was called a deadlock"; else ok; fi

# --- stopped from outside: Ctrl-C, SIGTERM, a killed mpirun or guardian ---
# Each job runs in a session of its own (its pid is the session's), as a
# terminal's foreground job would, and its Open MPI files go to a scratch
# folder of its own, /dev/shm/commlab-mpi.PID.XXXXXX.
exe=$(readlink -f "$cl")

# start_job: a long ping-pong started as a terminal would; its pid in $job
# once both ranks' shared-memory segments are in its scratch folder (up to
# 60 s).
start_job() {
    setsid "$cl" run pingpong --backend mpi --bytes 1MiB --iters 1000000 \
        >"$tmpd/job.out" 2>"$tmpd/job.err" &
    job=$!
    tries=0
    while [ "$(ls /dev/shm/commlab-mpi."$job".*/vader_segment.* 2>/dev/null | wc -l)" -lt 2 ] &&
          [ "$tries" -lt 600 ]; do
        sleep 0.1
        tries=$((tries + 1))
    done
    if [ "$tries" -lt 600 ]; then ok; else bad "the job's segments never appeared"; fi
}
# job_child: mpirun, the job's child.
job_child() { pgrep -P "$job" | head -n 1; }
# ended WHAT RC TEXT: the job exited RC saying TEXT, and left nothing: no
# process of its session, no scratch folder.
ended() {
    wait "$job"
    rc=$?
    if [ "$rc" = "$2" ]; then ok; else bad "$1: exit $rc, want $2"; fi
    has "$tmpd/job.err" "$3"
    left=$(ps -eo sid=,pid=,args= | awk -v s="$job" '$1 == s')
    if [ -z "$left" ]; then ok; else bad "$1: processes left: $left"; fi
    if ls -d /dev/shm/commlab-mpi."$job".* >/dev/null 2>&1; then
        bad "$1: its scratch folder is left: $(ls -R /dev/shm/commlab-mpi."$job".*)"
    else ok; fi
}
start_job
kill -INT "-$job" # a terminal's Ctrl-C: the foreground group (commlab and mpirun)
ended "Ctrl-C" 130 "commlab: interrupted (SIGINT): every rank was stopped"
start_job
kill -TERM "$job"
ended "SIGTERM" 143 "commlab: interrupted (SIGTERM): every rank was stopped"
start_job
kill -KILL "$(job_child)"
ended "mpirun killed" 4 "commlab: mpirun was killed by signal 9 (SIGKILL): every rank was stopped with it"
start_job
for g in $(pgrep -P "$(job_child)"); do
    tr '\0' '\n' <"/proc/$g/environ" | grep -qx OMPI_COMM_WORLD_RANK=1 && kill -KILL "$g"
done
ended "a guardian killed" 4 "was killed by signal 9 (SIGKILL): every rank was stopped"

# --- nothing of a job on one host listens beyond it ---
# listeners: what the job's processes listen on, as this namespace sees it
# ("ADDRESS:PORT name" lines).
listeners() {
    pids=$(ps -eo pid=,sid= | awk -v s="$job" '$2 == s { printf "%s|", $1 }')
    ss -ltnpH | awk -v p="pid=(${pids%|})," '$0 ~ p { print $4, $6 }'
}
start_job
rank=$(pgrep -P "$(pgrep -P "$(job_child)" | head -n 1)" | head -n 1)
if [ "$(readlink "/proc/$rank/ns/net")" != "$(readlink /proc/self/ns/net)" ]; then
    # A network namespace of the job's own: loopback its only interface,
    # nothing of the job in this one.
    ifaces=$(tail -n +3 "/proc/$rank/net/dev" | awk -F: '{ gsub(/ /, "", $1); print $1 }')
    if [ "$ifaces" = lo ]; then ok; else bad "the job's namespace has: $ifaces"; fi
    l=$(listeners)
    if [ -z "$l" ]; then ok; else bad "the job listens in the host's namespace: $l"; fi
elif { unshare -n true || unshare -rn true; } 2>/dev/null; then
    bad "the job runs in the host's network namespace, where this kernel makes one for it"
else
    echo "note: this kernel makes no network namespace for the job: its ranks alone are kept from listening"
fi
kill -TERM "$job"
wait "$job"
# In the host's namespace (COMMLAB_MPI_NETNS=0, or where the kernel
# refuses one) the ranks listen nowhere (no TCP transport on one host);
# mpirun's own listeners stay (Open MPI 4.1 binds them to 0.0.0.0 and ::
# whatever its parameters say: cli/mpi_netns.h).
export COMMLAB_MPI_NETNS=0
start_job
l=$(listeners)
if echo "$l" | grep -v ' users:(("mpirun"' | grep -q .; then bad "a rank listens: $l"; else ok; fi
kill -TERM "$job"
wait "$job"
unset COMMLAB_MPI_NETNS

# The scratch folder of a job killed outright (SIGKILL: commlab removes
# nothing) goes with the next job; a live job's stays.  Its guardian may
# outlive it long enough to remove the folder itself; then a folder of that
# dead pid's name stands for what a job killed with its guardian leaves.
start_job
kill -KILL "$job"
wait "$job"
tries=0 # its processes end once their launcher is gone
while ps -eo sid= | grep -qx " *$job" && [ "$tries" -lt 100 ]; do sleep 0.1; tries=$((tries + 1)); done
ls -d /dev/shm/commlab-mpi."$job".* >/dev/null 2>&1 ||
    mkdir -m 700 "/dev/shm/commlab-mpi.$job.orphan"
mkdir -m 700 "/dev/shm/commlab-mpi.$$.live00"
run 0 run ring --backend mpi --bytes 8 --iters 1
if ls -d /dev/shm/commlab-mpi."$job".* >/dev/null 2>&1; then bad "the orphan scratch folder stays"
else ok; fi
if [ -d "/dev/shm/commlab-mpi.$$.live00" ]; then ok; else bad "a live job's folder was removed"; fi
rmdir "/dev/shm/commlab-mpi.$$.live00"

finish
