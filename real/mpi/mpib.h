/*
 * mpib.h - the mpi backend: the same patterns over the system's MPI
 * library (Open MPI here), built only where an MPI compiler is found
 * (CL_HAVE_MPI, set by the Makefile).
 *
 * A rank is one process of an MPI job (mpirun, srun), and the rank runs in
 * that process itself (real_transport.in_process): MPI can be started only
 * once per process, so a rank cannot be a new process per size as on shm,
 * tcp and rdma.  The process still joins the rendezvous of real/boot.h as
 * a tcp run under mpirun does, so rank 0 watches the whole world, prints
 * the wait-for report of a deadlock and names a rank that died.
 *
 * The mapping.  cl_isend/cl_irecv are MPI_Isend/MPI_Irecv, cl_wait and
 * cl_test poll with MPI_Test (a rank never sleeps inside MPI, so the
 * watchdog can always stop it), cl_group is MPI_Comm_split.  Every context
 * of core/comm.h is an MPI communicator of its own: the pattern's messages
 * on one, the barrier's on a duplicate, --check's checksums (one 8-byte
 * message after each message, same peer and tag) on a third, so tags and
 * wildcards are MPI's own.  Eager and rendezvous are the library's: its
 * eager limit is read through the MPI tool interface (mpib_eager_limit).
 *
 * State.  MPI is process-wide state, so this module keeps one thing
 * global: whether MPI was started and whether every run was clean.  A
 * process whose run failed leaves without MPI_Finalize (a peer may still
 * hold a message to it); the launcher ends the job.
 */
#ifndef REAL_MPIB_H
#define REAL_MPIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "commlab.h"
#include "core/diag.h"
#include "real/launch.h"

/* Starts MPI in this process, once (later calls return at once), on the
 * calling thread, which must be the one that runs the ranks, loading the
 * library first (commlab is not linked with it: real/dlib.h).  Its rank
 * and size must be want_rank and want_size (what the launcher's
 * environment said).  0, or CL_ENOSYS (no library), CL_EIO or CL_EINVAL
 * with d saying why. */
int mpib_init(int want_rank, int want_size, cl_diag *d);
/* MPI_Finalize if MPI was started and every run was clean; at exit. */
void mpib_finalize(void);

/* MPI_Bcast of `bytes` bytes at buf from rank 0 of the world to every
 * process, after mpib_init.  0, or CL_EIO. */
int mpib_bcast(void *buf, size_t bytes);

/* The library's name and version (MPI_Get_library_version's first line),
 * into buf, loading the library; callable before mpib_init.  0, or
 * CL_ENOSYS with d naming the library that cannot be loaded (buf
 * untouched). */
int mpib_library(char *buf, size_t len, cl_diag *d);

/* One of the library's eager limits, read through the MPI tool interface
 * (MPI_T control variables, readable before MPI_Init). */
typedef struct mpib_limit {
    char name[64];   /* the variable: "btl_vader_eager_limit" */
    uint64_t bytes;  /* its value */
} mpib_limit;

/* The library's eager limits (every control variable whose name ends in
 * "eager_limit"), up to cap of them, into v; *n says how many, loading
 * the library.  0, or CL_ENOSYS when it cannot be loaded or the tool
 * interface does not answer (d says why). */
int mpib_limits(mpib_limit *v, size_t cap, size_t *n, cl_diag *d);
/* The eager limit of messages within one host (the shared-memory
 * transport's: btl_vader_eager_limit, or btl_sm_ in later Open MPI) or
 * across hosts (btl_tcp_eager_limit).  0, or CL_ENOSYS when unknown. */
int mpib_eager_limit(bool one_host, uint64_t *bytes);

/* ---- the library's collectives (mpib_coll.c) ---- */

/* The rank program that runs the library's own call for a collective of
 * core/pattern.h ("allreduce": MPI_Allreduce), from the data chapter 04's
 * algorithms start from and with their data check; NULL when it has none.
 * Runs only on this backend's ranks.  Cannot fail. */
cl_pattern_fn *mpib_coll_find(const char *collective);

#endif
