/*
 * comm.h - what sits behind include/commlab.h: the communicator, the
 * request every backend extends, and the table of operations a backend
 * provides.
 *
 * core/comm.c implements the public cl_* calls once for every backend:
 * argument checks, rank translation for groups, blocking calls built from
 * post + wait, the dissemination barrier.  A backend (sim/ or real/) only
 * moves messages: it posts, waits, tests and keeps time, always in world
 * ranks with a context id that keeps communicators apart.
 *
 * Context ids: user traffic of a communicator uses its even `ctx`; the
 * collectives built here (barrier) use ctx + 1, so they never match user
 * receives, wildcards included.  On ctx + 1, tags 0..COMM_TAG_MAX-1 are
 * the plain barrier's rounds, COMM_TAG_MAX.. the rounds of the barrier
 * that carries values, and COMM_TAG_CLOCK.. core/sync.c's clock pings.
 */
#ifndef CL_COMM_H
#define CL_COMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "commlab.h"
#include "core/record.h"
#include "core/waitfor.h"

#define COMM_TAG_MAX 64     /* first tag of comm_barrier_max's rounds on ctx + 1 */
#define COMM_TAG_CLOCK 128  /* first tag of core/sync.c's clock pings on ctx + 1 */
#define COMM_MAX_VALUES 5   /* doubles comm_barrier_max carries, at most */

typedef struct debug_state debug_state; /* --debug's checks, core/debug.h */

/* The part of a request core/ reads; a backend's request embeds it first. */
struct cl_request {
    int err;          /* completion status: 0 or CL_E* */
    bool done;        /* completed; status and err are final */
    bool is_send;     /* a send (else a receive) */
    bool blocking;    /* posted by cl_send/cl_recv, not by isend/irecv */
    cl_status status; /* on completion; source is a WORLD rank */
};

typedef struct comm_ops {
    /* Post a send to world rank dst / a receive from world rank src (or
     * CL_ANY_SOURCE) in context ctx.  On error *req is untouched and
     * nothing was posted. */
    int (*isend)(cl_comm *c, const void *buf, size_t bytes, int dst, int tag, uint32_t ctx,
                 cl_request **req);
    int (*irecv)(cl_comm *c, void *buf, size_t bytes, int src, int tag, uint32_t ctx,
                 cl_request **req);
    /* Block until every non-NULL reqs[i] is done; `call` is the blocking
     * call the rank is in, for the wait-for report.  Does not free. */
    int (*wait)(cl_comm *c, int n, cl_request **reqs, wf_op call);
    /* Make progress without blocking; *done says whether req is done. */
    int (*test)(cl_comm *c, cl_request *req, bool *done);
    /* Give a done request back. */
    void (*release)(cl_comm *c, cl_request *req);
    int (*compute)(cl_comm *c, double seconds);
    /* Optional, for a modeled backend: the seconds reducing `bytes` bytes
     * of type t costs this rank (cl_reduce_local then spends them as
     * compute).  NULL (measured): the arithmetic takes what it takes. */
    double (*reduce_time)(const cl_comm *c, size_t bytes, cl_dtype t);
    double (*now)(const cl_comm *c);
    /* Optional: returns once now() reads t or later, moving no messages;
     * sleeps while t is far and the wake-up can still make it
     * (core/sync.h: the window's common start).  Cannot fail.  NULL (the
     * simulator): a timed iteration starts when the barrier lets the rank
     * go. */
    void (*wait_until)(cl_comm *c, double t);
    /* Optional: called after the barrier before a timed iteration, so the
     * iteration finds the transport as a stream of messages leaves it,
     * not as the barrier did (tcp: the acknowledgements the barrier's
     * messages are owed go out now, not on the pattern's first message).
     * Moves no messages of the pattern's; cannot fail. */
    void (*settle)(cl_comm *c);
    /* Zeroed memory that lives until the pattern returns; NULL on failure. */
    void *(*alloc)(cl_comm *c, size_t bytes);
    /* One line of pattern output (no newline), already formatted. */
    void (*print)(cl_comm *c, const char *line);
    /* A failed data check, formatted. */
    void (*fail)(cl_comm *c, const char *msg);
    /* A misuse --debug found (core/debug.h), formatted; ends the run as a
     * failed data check does.  May be NULL: reported through fail. */
    void (*misuse)(cl_comm *c, const char *msg);
    /* A span for the records/trace (barrier); may be NULL. */
    void (*span)(cl_comm *c, rec_op op, double start, double end);
    /* Optional, for a backend whose library keeps communicators of its own
     * (mpi): cl_group on c made the context ctx, of which this rank is
     * member number me (-1: not a member).  Every rank of c calls it with
     * the same arguments in the same order, as cl_group's contract says.
     * On error nothing was made and cl_group fails with it. */
    int (*group)(cl_comm *c, uint32_t ctx, int me);
    /* Optional: the member's group of context ctx is freed. */
    void (*group_free)(cl_comm *c, uint32_t ctx);
} comm_ops;

/* The blocking call a rank is in, kept by comm.c so that one that never
 * completes (a deadlock, a failed run) still leaves a record: the run
 * driver writes it (core/run.h). */
/* The call a rank is in: its name for the report of a rank that crashes
 * or hangs there (sim/fault.h), and while a blocking call waits, what it
 * is, written as a stalled record if it never completes (core/run.c). */
typedef struct comm_call {
    const char *name; /* the public call ("cl_recv"); NULL in the pattern's own code */
    bool open;       /* inside a blocking call whose wait has not returned */
    uint8_t op;      /* rec_op: REC_SEND, REC_RECV, REC_WAIT or REC_BARRIER */
    int peer;        /* world rank of a send or receive; -1 none or any */
    int tag;         /* of a send or receive; -1 none */
    uint64_t bytes;  /* of a send or receive */
} comm_call;

struct cl_comm {
    const comm_ops *ops; /* the backend */
    void *backend;       /* the backend's rank state */
    cl_comm *world;      /* the world communicator of this rank */
    int *members;        /* world rank of each member (NULL: world, identity) */
    int rank;            /* in this communicator */
    int size;            /* ranks in this communicator */
    uint32_t ctx;        /* even context id of user traffic */
    uint32_t ngroups;    /* cl_group calls made on it, for child ids */
    unsigned long long sent; /* bytes posted to send on it (cl_sent_bytes) */
    bool payload;        /* buffers are real (not --no-payload) */
    bool printing;       /* cl_printf prints (see core/run.h) */
    double printed;      /* world: seconds this rank spent in cl_printf in the
                            running iteration, taken off its end (core/run.h) */
    struct run_lines *held; /* world: where cl_printf's lines wait for the run's
                               median iteration (core/run.h); NULL: printed at once */
    bool checking;       /* cl_fill/cl_verify act (see cl_checking) */
    bool blocking_call;  /* world: cl_send/cl_recv is posting; a backend copies
                            it into the new request's `blocking` at once, so a
                            request completed inside isend/irecv is recorded
                            as the blocking call it is */
    debug_state *debug;  /* world: --debug's checks (core/debug.h); NULL: off */
    comm_call call;      /* world: the call the rank is in */
    char refused[160];   /* world: why a call last returned CL_EINVAL ("" none);
                            last, so that the fields every call reads share
                            the first cache lines */
};

/* The dissemination barrier of cl_barrier carrying n (1..COMM_MAX_VALUES)
 * values: on return v holds, on every rank of c, the element-wise maximum
 * of every rank's v.  A backend's error (a failed peer, a deadlock) is
 * returned as cl_barrier's, with v half-merged. */
int comm_barrier_max(cl_comm *c, double *v, int n);

/* Sets up a world communicator for one rank of a backend. Cannot fail. */
void comm_world_init(cl_comm *c, const comm_ops *ops, void *backend, int rank, int size,
                     bool payload);

/* The world rank of communicator rank r (0 <= r < size). */
static inline int comm_world_rank(const cl_comm *c, int r)
{
    return c->members ? c->members[r] : r;
}

#endif
