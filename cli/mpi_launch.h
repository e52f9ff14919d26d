/*
 * mpi_launch.h - how `run --backend mpi` becomes an MPI job: outside an
 * MPI launcher the command runs itself again under `mpirun -np N`; inside
 * one, each process splits into a guardian and the process that starts MPI
 * and runs the rank (real/mpi/mpib.h).
 *
 * Why a guardian.  mpirun ends the whole job, quietly, when a process it
 * started dies of a signal, so nobody could say which rank died.  The
 * process mpirun starts therefore only forks the real one and waits: when
 * that one is killed, the guardian names its rank and exits 4, as a dead
 * rank does on every backend, and mpirun passes the 4 on.  The rank
 * process dies with its guardian (PR_SET_PDEATHSIG).
 *
 * Built only with CL_HAVE_MPI.
 */
#ifndef CL_MPI_LAUNCH_H
#define CL_MPI_LAUNCH_H

#ifdef CL_HAVE_MPI
#include <stdbool.h>

#include "cli/run_size.h"

/* The backend table's enter entry for mpi (cli/backend.h). */
int mpi_enter(run_opts *o, int argc, char **argv);

/* The mpirun command line that runs `commlab ARGS` on n processes: exe,
 * then argv[0..argc) (the command and its arguments); as_root and
 * oversubscribe add Open MPI's flags for them.  Fills out (cap entries,
 * NULL-terminated) and returns the count, or -1 when cap is too small. */
int mpi_launch_argv(const char **out, int cap, const char *exe, int n, bool as_root,
                    bool oversubscribe, int argc, char **argv);
#endif

#endif
