/*
 * mpi_scratch.h - a folder of one MPI job's own for what Open MPI writes
 * on this host and leaves when a job is stopped: each process's
 * shared-memory segment (vader_segment.*, 4 MiB, in /dev/shm unless
 * btl_vader_backing_directory names another folder) and mpirun's session
 * folder (ompi.HOST.UID/..., orte_tmpdir_base).  A process killed, or an
 * mpirun stopped by Ctrl-C, removes neither; pointed at a scratch folder,
 * they go with it: the process that made the folder removes it when the
 * job has ended, whatever ended it, and a folder whose maker was killed
 * outright is removed by the next MPI job that makes one.
 *
 * A scratch folder is /dev/shm/commlab-mpi.PID.XXXXXX (mkdtemp's, mode
 * 0700; in $TMPDIR, else /tmp, where /dev/shm is not a folder this user
 * may write): PID is its maker's, by which a later job knows it for an
 * orphan.  Only this user's folders are looked at, never followed through
 * a link.
 *
 * Built only with CL_HAVE_MPI.
 */
#ifndef CL_MPI_SCRATCH_H
#define CL_MPI_SCRATCH_H

#ifdef CL_HAVE_MPI
#include <stddef.h>

#define MPI_SCRATCH_MAX 256 /* bytes of a scratch folder's path, its NUL included */

/* Removes the orphans (folders whose maker is gone), then makes a scratch
 * folder, its path into path (MPI_SCRATCH_MAX bytes).  0, or the errno
 * of mkdtemp (path then empty). */
int mpi_scratch_make(char *path);

/* Removes the folder at path and everything in it; "" is nothing.  Cannot
 * fail: what cannot be removed stays (the next job takes it once this
 * process is gone). */
void mpi_scratch_remove(const char *path);
#endif

#endif
