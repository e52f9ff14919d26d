/*
 * xfer.h - a measured rank's messages: requests, unexpected messages,
 * matching and completion, for every real transport.
 *
 * What is here does not depend on how bytes move.  A transport's rank state
 * embeds xfer_rank first (which embeds real_rank first), its requests embed
 * xfer_req first and its unexpected messages xfer_msg first; xfer_init()
 * learns their sizes, so the pools here hand out the transport's own
 * structs.  The transport keeps what is really its own: how a message's
 * bytes get from the sender to the receiver (rings, sockets, frames) and
 * the rendezvous protocol, which xfer reaches through the `pull` hook.
 *
 * Ownership.  A request belongs to the pattern from its post until
 * comm_ops.release hands it back (xfer_op_release); its buffer belongs to
 * the transport from post until the wait that completes it returns.  The
 * transport's own requests (XFER_CTRL, XFER_STREAM) go back to the pool
 * when they complete.  An unexpected message belongs to the match queues
 * until a receive takes it; xfer_msg_free() gives it and its copy back.
 */
#ifndef REAL_XFER_H
#define REAL_XFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/match.h"
#include "real/rank.h"

typedef struct xfer_req xfer_req;
typedef struct xfer_msg xfer_msg;
typedef struct xfer_rank xfer_rank;

/* What a request is.  XFER_CTRL and XFER_STREAM are the transport's own
 * (a control record, a stream of rendezvous data): nobody waits for them,
 * and completing one frees it. */
enum { XFER_SEND, XFER_RECV, XFER_CTRL, XFER_STREAM };

struct xfer_req {
    struct cl_request base; /* first: core/comm reads it */
    match_link link;        /* a posted receive in the rank's queues */
    xfer_req *next;         /* in an outgoing queue, or the free list */
    void *buf;              /* receive: destination */
    const void *sbuf;       /* send: source */
    uint64_t bytes;         /* send: size; receive: capacity */
    uint64_t total;         /* receive: the matched message's size */
    uint64_t sum;           /* the message's checksum (--check) */
    uint64_t msg_id;        /* pairs the send's record with the receive's */
    double posted, started; /* seconds (rank_now), for the records; 0: not yet */
    int32_t peer;           /* world rank; CL_ANY_SOURCE in a receive */
    int32_t tag;
    uint32_t ctx;
    uint8_t kind;           /* XFER_* */
    uint8_t phase;          /* the transport's: where a send is in its protocol */
    bool eager;             /* send: at most the eager limit */
};

struct xfer_msg {
    match_link link;     /* in the unexpected queue */
    xfer_msg *next_free;
    xfer_req *waiting;   /* a receive matched before the eager data was all here */
    void *data;          /* eager: the copy (malloc'd) */
    uint64_t total, got; /* bytes; got == total once the copy is whole */
    uint64_t sum, msg_id;
    double arrived;      /* seconds (rank_now) the envelope came; 0 untraced */
    bool eager;
};

/* Rendezvous: receive r matched message m (not eager) from src; the
 * transport fetches the data (or refuses it, see xfer_truncated) and owns
 * m from here on (xfer_msg_free when done with it). */
typedef void xfer_pull_fn(xfer_rank *x, xfer_req *r, xfer_msg *m, int src);

struct xfer_rank {
    real_rank base;      /* first */
    match_queues mq;     /* posted receives and unexpected messages */
    xfer_req *free_reqs; /* pools: request and message structs to reuse */
    xfer_msg *free_msgs;
    size_t req_size;     /* bytes of the transport's request struct */
    size_t msg_size;     /* bytes of the transport's message struct */
    bool check;          /* --check: checksums */
    int failed;          /* a fatal error (CL_E*), first one wins */
    xfer_pull_fn *pull;  /* the transport's rendezvous */
};

/* ---- life ---- */

/* rank_init(), then x's message part: req_size and msg_size are the sizes
 * of the transport's structs that embed xfer_req and xfer_msg first; the
 * watchdog's describe hook is set (the transport sets poll and block).
 * Cannot fail. */
void xfer_init(xfer_rank *x, const comm_ops *ops, const job *j, int rank, bool check,
               size_t req_size, size_t msg_size, xfer_pull_fn *pull);
/* Frees the unexpected messages and the pools, then rank_release();
 * requests the pattern or the transport still holds are theirs to free. */
void xfer_release(xfer_rank *x);

/* The rank's first fatal error, with the words for its message. */
void xfer_fatal(xfer_rank *x, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A peer is lost (CL_EPEER, with the words for it).  In a local run that
 * peer is most likely a process that just died, which the launcher
 * reports better ("rank 1 was killed by signal 9"): it reports the first
 * failure it reaps, so this rank then waits grace_ns (it is killed
 * meanwhile) before it goes on failing.  0: no wait, for a rank no
 * launcher watches (a multi-host bootstrap). */
#define XFER_LOSS_GRACE_NS 500000000L
void xfer_peer_lost(xfer_rank *x, long grace_ns, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- pools (NULL when out of memory; nothing is changed then) ---- */

/* A zeroed request of req_size bytes. */
xfer_req *xfer_req_new(xfer_rank *x);
void xfer_req_free(xfer_rank *x, xfer_req *r);
/* A zeroed message of msg_size bytes. */
xfer_msg *xfer_msg_new(xfer_rank *x);
/* Frees m's copy and gives m back. */
void xfer_msg_free(xfer_rank *x, xfer_msg *m);

static inline xfer_req *xfer_req_of(match_link *l)
{
    return (xfer_req *)((char *)l - offsetof(xfer_req, link));
}

static inline xfer_msg *xfer_msg_of(match_link *l)
{
    return (xfer_msg *)((char *)l - offsetof(xfer_msg, link));
}

/* ---- completion ---- */

/* A request is complete: its status is final, progress moves, the record
 * is written (the transport's own requests are freed instead). */
void xfer_complete(xfer_rank *x, xfer_req *r, int err);
/* Whether a message of total bytes from src overflows receive r; if so the
 * rank's detail names both ranks and both sizes.  r stays as it is. */
bool xfer_truncated(xfer_rank *x, xfer_req *r, int src, uint64_t total);
/* The receive r takes a message's envelope. */
void xfer_take_envelope(xfer_req *r, int src, int tag, uint64_t total, uint64_t id);
/* Receive r's data is all in its buffer: with --check its checksum must be
 * sum (else CL_ECHECK); r completes. */
void xfer_finish_recv(xfer_rank *x, xfer_req *r, uint64_t sum);
/* The unexpected eager message m is whole, and r wants it: copied (or
 * truncated), r completes, m is freed. */
void xfer_deliver_copy(xfer_rank *x, xfer_req *r, xfer_msg *m);

/* ---- posting and arriving ---- */

/* A send request of bytes from buf to dst, filled and counted (the k-th
 * toward dst: *nmsg is bumped); the transport moves it.  NULL when out of
 * memory (nothing is changed then). */
xfer_req *xfer_send_new(xfer_rank *x, const void *buf, size_t bytes, int dst, int tag,
                        uint32_t ctx, uint64_t eager_limit, uint64_t *nmsg);

/* Where an arriving eager message's data goes (xfer_arrive). */
enum {
    XFER_INTO_NONE, /* nowhere: rendezvous (pulled), or a fatal error */
    XFER_INTO_RECV, /* into the matched receive's buffer: *rp */
    XFER_INTO_MSG,  /* into the unexpected copy m->data */
    XFER_INTO_DROP, /* nowhere, but it must be skipped: the receive was too small */
};
/* A new message's envelope from src, m filled by the transport (eager,
 * total, sum, msg_id and its own words): matched to a posted receive (a
 * rendezvous one is handed to the pull hook) or kept unexpected.  Returns
 * XFER_INTO_*; a receive to fill is in *rp, its r->sum set. */
int xfer_arrive(xfer_rank *x, xfer_msg *m, int src, int tag, uint32_t ctx, xfer_req **rp);

/* ---- comm_ops entries every real transport uses as they are ---- */

/* A receive: matched against the unexpected messages at once. */
int xfer_op_irecv(cl_comm *c, void *buf, size_t bytes, int src, int tag, uint32_t ctx,
                  cl_request **out);
void xfer_op_release(cl_comm *c, cl_request *req);
/* real_rank.describe for xfer requests. */
void xfer_describe(const cl_request *req, wf_pending *out);

/* A transport's comm_ops: its own isend and settle (may be NULL), the rest
 * shared. */
#define XFER_OPS(isend_fn, settle_fn)                                                   \
    {                                                                                   \
        .isend = (isend_fn), .settle = (settle_fn), .irecv = xfer_op_irecv,             \
        .wait = rank_op_wait,                                                           \
        .test = rank_op_test, .release = xfer_op_release, .compute = rank_op_compute,   \
        .now = rank_op_now, .wait_until = rank_op_wait_until, .alloc = rank_op_alloc,   \
        .print = rank_op_print, .fail = rank_op_fail, .misuse = rank_op_misuse,         \
        .span = rank_op_span,                                                           \
    }

#endif
