/* mpib_impl.h - what the mpi backend's two files share; internal to
 * real/mpi/ (hence the mpib__ names). */
#ifndef REAL_MPIB_IMPL_H
#define REAL_MPIB_IMPL_H

#include "real/mpi/mpib_dl.h"

#include "core/comm.h"

/* The world's three communicators (mpib.c's contexts), made once by
 * mpib_init: a run makes no collective call to start, so a process whose
 * peers failed earlier never waits inside MPI. */
void mpib__world(MPI_Comm *user, MPI_Comm *inner, MPI_Comm *sums);
/* The communicator of the pattern's messages on c (a communicator of a
 * rank of this backend), or MPI_COMM_NULL when c is another backend's:
 * what the library's collectives run on (mpib_coll.c). */
MPI_Comm mpib__comm(const cl_comm *c);
/* A run failed in this process: leave MPI unfinished at exit (mpib.h). */
void mpib__run_failed(void);
/* Returns in the rank's own process; in a process its pattern forked,
 * which went on into commlab's `call` instead of ending, says so and ends
 * that process (mpib_lib.c). */
void mpib__own_process(int rank, const char *call);

#endif
