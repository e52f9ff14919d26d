/* mpib_impl.h - what the mpi backend's two files share; internal to
 * real/mpi/ (hence the mpib__ names). */
#ifndef REAL_MPIB_IMPL_H
#define REAL_MPIB_IMPL_H

#include <mpi.h>

/* The world's three communicators (mpib.c's contexts), made once by
 * mpib_init: a run makes no collective call to start, so a process whose
 * peers failed earlier never waits inside MPI. */
void mpib__world(MPI_Comm *user, MPI_Comm *inner, MPI_Comm *sums);
/* A run failed in this process: leave MPI unfinished at exit (mpib.h). */
void mpib__run_failed(void);

#endif
