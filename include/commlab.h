/*
 * commlab.h - the API a communication pattern is written against.
 *
 * A pattern is one rank's program: a plain C function that receives a
 * communicator and the run's arguments.  The same function runs under every
 * backend: modeled (sim: ranks are coroutines in virtual time) or measured
 * (shm, tcp, rdma, mpi: ranks are processes timed by the wall clock).
 * Nothing here knows which backend runs; this is the only header a pattern
 * includes.
 *
 * Conventions
 *   - Functions that can fail return 0 or a negative CL_E* code.  A failed
 *     call changes nothing the caller can see and leaves no request behind.
 *   - Times are double seconds, sizes are size_t bytes.
 *   - A buffer handed to a send or receive belongs to the operation from the
 *     call until the matching cl_wait/cl_waitall/cl_test reports completion:
 *     do not write a send buffer or read a receive buffer before then.
 *   - In size-only runs (cl_payload() is false, `--no-payload`) cl_alloc
 *     returns NULL and no byte moves; buffers may then be NULL.
 */
#ifndef COMMLAB_H
#define COMMLAB_H

#include <stdbool.h>
#include <stddef.h>

/* ---- errors: one table makes the enum, cl_strerror() and cl_errname() ---- */

#define CL_ERRNO_MAP(X)                                                   \
    X(INVAL, -1, "invalid argument")                                      \
    X(NOMEM, -2, "out of memory")                                         \
    X(RANGE, -3, "value out of range")                                    \
    X(PARSE, -4, "cannot parse")                                          \
    X(IO, -5, "input/output error")                                       \
    X(NOENT, -6, "no such entry")                                         \
    X(TRUNC, -7, "receive buffer smaller than the message")               \
    X(DEADLOCK, -8, "deadlock: no rank can make progress")                \
    X(CHECK, -9, "data check failed")                                     \
    X(NOSYS, -10, "not implemented")                                      \
    X(PEER, -11, "a peer rank failed")                                    \
    X(STACK, -12, "rank stack overflow")                                  \
    X(PROTO, -13, "protocol error")                                       \
    X(CONFIG, -14, "bad configuration")                                   \
    X(TIMEOUT, -15, "timed out")

typedef enum cl_errno {
    CL_OK = 0,
#define CL__ERRNO_ENUM(name, code, text) CL_E##name = (code),
    CL_ERRNO_MAP(CL__ERRNO_ENUM)
#undef CL__ERRNO_ENUM
} cl_errno;

/* Text for an error code; never NULL, "unknown error" for unknown codes. */
const char *cl_strerror(int err);
/* Name of an error code, "CL_EINVAL"; "CL_OK" for 0, "CL_E?" if unknown. */
const char *cl_errname(int err);

#endif /* COMMLAB_H */
