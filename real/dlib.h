/*
 * dlib.h - a shared library opened when a command first needs it.
 *
 * commlab is not linked with libfabric or the MPI library: a library linked
 * in is loaded before main, with its dependencies and their constructors,
 * by every command.  Debian's libfabric loads libpsm2 and libinfinipath,
 * whose constructors probe for hardware for 0.2 s, and only the rdma and
 * mpi backends (and `fabric`, `bench rdma`, `bench mpi`) call either
 * library.  Each is opened here by its soname the first time one of them
 * asks, and the few functions and objects commlab names are found in it
 * by name into a table (real/rdma_lib.h, real/mpi/mpib_dl.h).  A library
 * opened stays for the life of the process (a rank forked later has it
 * already); it is never closed.
 *
 * A library's constructors may set signal handlers: libinfinipath's take
 * SIGINT, SIGTERM and the crash signals and exit 1, so a Ctrl-C would look
 * like a failed data check.  dlib_open puts back every disposition the
 * process had before it opened the library, so a signal does what
 * commlab's own handling says whatever it has loaded.
 *
 * Not thread-safe (signal dispositions are the process's): call it from
 * the thread that runs the command, before starting others.
 */
#ifndef REAL_DLIB_H
#define REAL_DLIB_H

#include "core/diag.h"

/* Opens the shared library `soname` ("libfabric.so.1") with dlopen's
 * `mode` (RTLD_NOW, with RTLD_GLOBAL or not), keeping the process's signal
 * dispositions.  `who` says what needs it and where it comes from ("the
 * rdma backend (Debian package libfabric1)").  The handle, or NULL with
 * CL_ENOSYS's message in d naming the library, who needs it and the
 * loader's reason; nothing is left open then. */
void *dlib_open(const char *soname, int mode, const char *who, cl_diag *d);

/* The address of `name` in the library lib (dlib_open's) named soname,
 * or NULL with d naming both. */
void *dlib_sym(void *lib, const char *soname, const char *name, cl_diag *d);

#endif
