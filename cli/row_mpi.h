/*
 * row_mpi.h - how `run --backend mpi` becomes an MPI job: outside an
 * MPI launcher the command runs itself again under `mpirun -np N`; inside
 * one, each process splits into a guardian and the process that starts MPI
 * and runs the rank (real/mpi/mpib.h).
 *
 * The processes around the job, the command that starts mpirun and the
 * guardian of each rank, are cli/mpi_guard.h's.
 *
 * Built only with CL_HAVE_MPI.
 */
#ifndef CL_ROW_MPI_H
#define CL_ROW_MPI_H

#ifdef CL_HAVE_MPI
#include <stdbool.h>

#include "cli/run_size.h"

/* The backend table's enter entry for mpi (cli/backend.h). */
int mpi_enter(backend_session *s, run_opts *o, int argc, char **argv);

/* Its join entry, for calibrate and compare: the whole command runs in
 * every process of an MPI job of `ranks` processes (outside one, it runs
 * again under mpirun, and this returns its status).  Inside, this process
 * starts MPI, joins the job's rendezvous (kept for every run of the
 * command), takes the library's eager limit into *eager_limit, and unless
 * it is rank 0 sends its stdout and stderr to /dev/null.  -1: go on. */
int mpi_join(int ranks, uint64_t *eager_limit, int argc, char **argv);
/* Its speaks entry: false in a process of mpi_join's job other than rank
 * 0's, which writes no file (rank 0 writes them).  Cannot fail. */
bool mpi_speaks(void);
/* Its run_size entry: row_real_run over run's own world, or over the
 * job mpi_join joined, after which every process holds rank 0's outcome
 * (its row, status and where it ran), so that all take the same next
 * step.  A run must have as many ranks as the job has processes. */
int run_size_mpi(const run_opts *o, run_env *env, uint64_t bytes, rec_log *log, bool first,
                 run_row *row);

/* The mpirun command line that runs `commlab ARGS` on n processes: exe,
 * then argv[0..argc) (the command and its arguments); as_root and
 * oversubscribe add Open MPI's flags for them.  Fills out (cap entries,
 * NULL-terminated) and returns the count, or -1 when cap is too small. */
int mpi_launch_argv(const char **out, int cap, const char *exe, int n, bool as_root,
                    bool oversubscribe, int argc, char **argv);
#endif

#endif
