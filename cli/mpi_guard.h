/*
 * mpi_guard.h - the processes around an MPI job of `--backend mpi`: the
 * command that starts mpirun for itself (outside a launcher), and the
 * guardian each process the launcher starts splits into.
 *
 * Started outside a launcher, the command runs itself again under `mpirun
 * -np N` and waits for it (mpi_relaunch).  What it owns it cleans up,
 * however the job ends: Open MPI's files go to a scratch folder of the
 * job's own (cli/mpi_scratch.h), removed when mpirun is gone; the job's
 * processes that mpirun left behind (it was killed) come to this process
 * (a child subreaper), which waits for them.  Its exit status says what
 * happened: mpirun's, 128+N after Ctrl-C or SIGTERM (signal N, passed on
 * to mpirun, which stops the job; "interrupted" said here), 4 when mpirun
 * or a process it started was killed (said here: mpirun's -q keeps quiet).
 *
 * The guardian (mpi_guard).  mpirun ends the whole job, quietly, when a
 * process it started dies of a signal, so nobody could say which rank
 * died.  The process mpirun starts therefore only forks the real one and
 * waits: when that one is killed, the guardian names its rank and exits 4,
 * as a dead rank does on every backend, and mpirun passes the 4 on.  The
 * rank process dies with its guardian (PR_SET_PDEATHSIG), and the guardian
 * with its launcher: it looks for it every GUARD_TICK_MS and, once gone,
 * kills the rank.  Started by a launcher other than commlab's own, the
 * guardian makes the scratch folder for its rank's segment itself.
 *
 * Built only with CL_HAVE_MPI.
 */
#ifndef CL_MPI_GUARD_H
#define CL_MPI_GUARD_H

#ifdef CL_HAVE_MPI
#define GUARD_TICK_MS 100 /* a guardian looks for its launcher this often */

/* Outside a launcher: `commlab ARGV` on ranks processes under mpirun, and
 * the exit status of it all (see above).  argv[0] is the command. */
int mpi_relaunch(int ranks, int argc, char **argv);

/* In a process a launcher started for rank `rank`: returns 0 in the
 * process that runs the rank, or -1 (errno set) when it could not be
 * forked; the guardian never returns. */
int mpi_guard(int rank);
#endif

#endif
