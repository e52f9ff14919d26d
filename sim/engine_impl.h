/*
 * engine_impl.h - what the files of the sim engine share; internal to sim/
 * (hence the engine__ names).  sim/engine.h is the public API: sim_run.
 *
 *   engine.c         the run: set-up and release, the event loop, a rank's
 *                    life, failures and records
 *   engine_price.c   pricing without sharing: the per-pair link table and
 *                    the duplex segments of a machine file
 *   engine_share.c   shared links (--sharing maxmin): flows, lone flows and
 *                    their hand-over to the solver
 *   engine_proto.c   cl_isend/cl_irecv: matching, the eager and rendezvous
 *                    protocols
 *   engine_ops.c     the rest of the operations table: waits, the polling
 *                    rules, compute, allocation
 *   engine_report.c  the deadlock and time-limit reports, a stopped rank
 *
 * What the hot path calls across files stays inline here (the pools, the
 * completion of a request, a wake-up, a message's cost), since the
 * Makefile builds without link-time optimization and a cross-file call is
 * never inlined.  So a message priced alone or as a lone flow pays no call
 * it did not pay in one file; a solver flow's end is one call more
 * (engine__flow_end, from the event loop).
 *
 * Every object below belongs to the engine: requests and messages live in
 * its pools (engine.c frees them with it), ranks in its array.
 */
#ifndef SIM_ENGINE_IMPL_H
#define SIM_ENGINE_IMPL_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/comm.h"
#include "core/match.h"
#include "sim/blocks.h"
#include "sim/coro.h"
#include "sim/engine.h"
#include "sim/fault.h"
#include "sim/flow.h"
#include "sim/links.h"
#include "sim/queue.h"
#include "sim/slab.h"

enum {
    EV_WAKE,       /* resume rank */
    EV_FLOW_START, /* ptr's bytes start moving (after a rendezvous handshake) */
    EV_FLOW_END,   /* ptr's flow ends, if arg is still its generation */
};
enum { RANK_READY, RANK_BLOCKED, RANK_COMPUTING, RANK_DONE };

typedef struct sim_engine sim_engine;
typedef struct sim_msg sim_msg;

/* One resource of the shared-links model (sim_net_flow_route's id): the
 * flows the solver holds on it, or the one message whose bytes cross it
 * alone, priced without the solver (see "shared links" below). */
typedef struct sim_port {
    double until;         /* the lone flow's bytes are out then */
    struct sim_req *lone; /* its send, or NULL; stale (maybe freed) once until <= now */
    uint32_t flows;       /* flows in the solver (then lone is NULL or stale) */
} sim_port;

typedef struct sim_req {
    struct cl_request base; /* first: core/comm reads it */
    match_link link;        /* a posted receive's entry in its rank's queue */
    union {
        void *buf;          /* a receive: its destination */
        struct sim_req *recv; /* a send whose bytes are a lone flow: its receive
                               (lone_queued false) ... */
        sim_msg *msg;       /* ... or its message, unexpected (lone_queued) */
    } u;
    uint64_t bytes;         /* send: size; recv: capacity */
    uint64_t msg_id;        /* for records: the message it sent or received */
    double posted;          /* seconds */
    double started;         /* seconds: data began to move */
    double done_at;         /* seconds: when it completes; INFINITY until matched */
    int32_t owner;          /* world rank that posted it */
    int32_t peer;           /* dst, or src / CL_ANY_SOURCE */
    int32_t tag;
    uint32_t ctx;
    uint32_t rec;           /* its record's index + 1 in the log, or 0 */
    bool waited;            /* in its owner's current wait set */
    bool lone_queued;       /* see u */
} sim_req;

struct sim_msg {
    match_link link;   /* envelope in the receiver's unexpected queue */
    sim_req *sreq;     /* rendezvous: the send waiting for its receive; shared
                          links and pending: also an eager send, until its bytes
                          are out or it is priced */
    sim_req *rreq;     /* shared links and pending: the receive it matched,
                          until it lands or it is priced */
    sim_msg *next_pending; /* pending: the next message to price (engine_proto.c) */
    sim_flow *flow;    /* shared links: its bytes in flight (sim/flow.h), or NULL */
    uint64_t gen;      /* shared links: its flow's current end event */
    double alpha;      /* shared links: the route's latency, paid after the bytes */
    double lone_until; /* shared links: a lone flow's end (0: not one) */
    void *data;        /* eager: a copy of the payload (malloc'd), or NULL */
    const void *sbuf;  /* rendezvous: the sender's buffer */
    uint64_t bytes;
    uint64_t id;       /* 1, 2, ... in send order */
    double posted;     /* when the send was posted */
    double arrival;    /* eager: when the whole message is at the receiver */
    double started;    /* eager: when its bytes started moving */
    int32_t src, dst;  /* world ranks */
    bool eager;
    bool in_pattern;   /* sent by the pattern, not by the barrier between iterations */
    bool pending;      /* matched or sent, to be priced when its instant ends */
};

typedef struct sim_rank {
    /* What every message and wait reads or writes comes first, so that at
     * 10,000+ ranks a step touches few of the rank's cache lines (comm's
     * own hot fields lead it, core/comm.h); resuming a rank reads co,
     * state and wake_gen only, all in its first 64 bytes. */
    sim_coro co;
    sim_engine *eng;
    uint8_t state;
    uint8_t wait_call;   /* a wf_op */
    bool poll_dry;       /* deferred, and nothing left to wake it: wait instead */
    int32_t wait_n;
    int32_t wait_unknown; /* requests in the wait set not matched yet */
    uint64_t wake_gen;   /* its wake-ups carry this; a stale one is ignored */
    cl_request **wait_reqs; /* current wait set */
    double wait_start;
    double wait_until;   /* latest known completion in the wait set */
    cl_request *poll_req; /* the request of its first failed cl_test at ... */
    match_queues mq;
    run_rank run;        /* its place in the iteration driver (core/run.h) */
    cl_comm comm;        /* the world communicator of this rank */
    double poll_at;      /* ... this instant (see sim_test, engine_ops.c) */
    cl_request *poll_late; /* deferred: the request a later failed test polled */
    int32_t poll_next;   /* the next rank deferred to the end of the instant, or -1 */
    int32_t link_dst;    /* the link this rank sent on last (-1: none) ... */
    double link_free;    /* ... and when it frees up; sim_links holds the rest */
    double send_from, send_until; /* the bytes of its latest message out move then ... */
    double recv_from, recv_until; /* ... and of its latest message in (duplex models) */
    sim_blocks blocks;   /* cl_alloc memory of the running iteration */
} sim_rank;

_Static_assert(offsetof(sim_rank, wake_gen) + sizeof(uint64_t) <= 64,
               "resuming a rank reads one line of it");

/* Where a rank's posts went last, for guessing where its next ones go
 * (guess_matches, engine_proto.c): by [0] receives, [1] sends, the last
 * post's peer (-1: none) and the step from the one before.  Apart from
 * sim_rank, whose size is whole lines. */
#define GUESS_FROM 64 /* ranks: below, every queue is short and cached */
typedef struct sim_guess {
    int32_t peer[2], stride[2];
} sim_guess;

/* The bytes of a rank's cl_comm that every call reads (its fields before
 * refused[], core/comm.h). */
#define RANK_COMM_HOT offsetof(cl_comm, refused)

struct sim_engine {
    const sim_opts *o;
    const run_job *job;  /* &o->job */
    sim_rank *ranks;
    struct sim_guess *guess; /* by rank, above GUESS_FROM ranks (engine_proto.c) */
    sim_queue *q;
    sim_stacks *stacks;
    sim_links links;     /* --sharing none: when each pair's link is free */
    sim_flow_sys *flows; /* --sharing maxmin: the flows in flight ... */
    sim_port *ports;     /* ... and every link resource's lone flow */
    double mesh_bw, mesh_alpha; /* a tier mesh's route (sim_net_flow_mesh); 0: not one */
    /* engine__flow_begin's route: here and not on the rank's stack, where it
     * would land on lines gone cold since the rank last ran. */
    int64_t route_ids[SIM_FLOW_MAX_ROUTE];
    double route_cap[SIM_FLOW_MAX_ROUTE];
    /* A machine file with posted gaps (sim_net_posted_gaps): messages are
     * priced when their instant ends, in the order they became priceable
     * (engine_proto.c, "pricing at the end of the instant"). */
    bool defer;
    sim_msg *pending_head, *pending_tail; /* to be priced at this instant's end */
    bool batch_open;     /* flows started or ended at batch_time, not solved yet */
    double batch_time;
    int32_t poll_head, poll_tail; /* ranks deferred to the end of the instant (-1: none) */
    size_t lookahead;    /* prefetch_soon (engine.c): 0 (the next event's rank) or 2 */
    bool prefetch_reqs;  /* prefetch_soon: also the requests it waits for */
    sim_sched sched;
    bool passing;        /* ranks may hand the CPU on (engine__block): every
                            rank has started */
    sim_fault fault;     /* crashes, exit() and the time limit (sim/fault.h) */
    run_result *res;
    sim_stats stats;
    double now;
    /* Requests and messages come from pools (sim/slab.h), so a step of a
     * big run does not call malloc; they are freed with the engine. */
    sim_pool reqs, msgs;
    sim_blocks_pool blocks; /* the ranks' cl_alloc blocks (sim/blocks.h) */
    double *iter_time;  /* n * iters: each rank's own time per timed iteration */
    uint64_t next_msg;
    uint64_t next_gen;  /* flow end events: every push gets a new number */
    int n;
    int ndone;
    bool aborting; /* the run failed: every call fails, ranks unwind */
};

/* ---- engine.c: the run ---- */

/* Called on me's stack when me blocks (it has set its state and queued
 * its wake-up, if known): runs the next rank.  When the next event is
 * another rank's wake-up and nothing else is due first, me hands the CPU
 * straight to that rank (sim_coro_pass), as the event loop would resume
 * it; otherwise it yields to the event loop.  Returns when me runs again. */
void engine__block(sim_engine *e, sim_rank *me);

/* ---- engine.c: failures and records ---- */

/* Records the first failure of the run; later ones are consequences.
 * Cannot fail; sets e->aborting. */
void engine__fail(sim_engine *e, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Returns the record's index + 1 in the log, or 0 (dropped, or past
 * what a request keeps: a request settled again then adds a record).
 * Out of memory fails the run. */
uint32_t engine__record_add(sim_engine *e, rec_op op, int rank, int peer, int tag,
                            uint64_t bytes, uint64_t msg, double posted, double started,
                            double finished, bool blocking);

/* engine__resolve's record of r, settled at t: made, or rewritten when r
 * is settled again (unresolve, engine_share.c).  Only when the run keeps records. */
void engine__resolve_record(sim_engine *e, sim_req *r, double t);

/* ---- pools ---- */

static inline sim_req *engine__req_new(sim_engine *e)
{
    return sim_pool_take(&e->reqs);
}

static inline void engine__req_free(sim_engine *e, sim_req *r)
{
    sim_pool_give(&e->reqs, r);
}

static inline sim_msg *engine__msg_new(sim_engine *e)
{
    return sim_pool_take(&e->msgs);
}

static inline void engine__msg_free(sim_engine *e, sim_msg *m)
{
    if (m->data) /* rare: an eager payload that waited; no call into libc otherwise */
        free(m->data);
    sim_pool_give(&e->msgs, m);
}

static inline sim_req *engine__req_of(match_link *l)
{
    return (sim_req *)((char *)l - offsetof(sim_req, link));
}

static inline sim_msg *engine__msg_of(match_link *l)
{
    return (sim_msg *)((char *)l - offsetof(sim_msg, link));
}

/* ---- time and records ---- */

/* fmax and fmin for times, which are never NaN: a compare, where they are
 * calls into libm on the hot path. */
static inline double engine__later(double a, double b)
{
    return a > b ? a : b;
}

static inline double engine__sooner(double a, double b)
{
    return a < b ? a : b;
}

static inline bool engine__user_ctx(uint32_t ctx)
{
    return (ctx & 1u) == 0;
}

/* engine__record_add when the run keeps records, else 0: inlined, the
 * check costs a load where a run keeps none. */
static inline uint32_t engine__record(sim_engine *e, rec_op op, int rank, int peer, int tag,
                                      uint64_t bytes, uint64_t msg, double posted,
                                      double started, double finished, bool blocking)
{
    if (!e->job->records)
        return 0;
    return engine__record_add(e, op, rank, peer, tag, bytes, msg, posted, started, finished,
                              blocking);
}

/* Wakes rank at t, unless its wait is reopened before then (unresolve, engine_share.c). */
static inline void engine__wake_at(sim_engine *e, double t, int rank)
{
    sim_event ev = {.time = t, .type = EV_WAKE, .rank = (uint32_t)rank,
                    .arg = e->ranks[rank].wake_gen};
    if (sim_queue_push(e->q, &ev))
        engine__fail(e, CL_ENOMEM, "out of memory in the event queue");
}

/* ---- completion ----
 *
 * Nothing in the model can change a message once both ends are matched, so
 * a request's completion time is settled at matching (done_at) and its
 * bytes are copied then: the buffers belong to the operations until they
 * complete, so no pattern can tell the difference.  A blocked rank costs
 * one wake-up event, at the latest done_at of its wait set, once every
 * request in it is matched.  (Shared links may reopen a settled time:
 * engine_share.c, "lone flows".) */

/* Settles r to complete at time t; wakes its owner's wait when r was the
 * last request of the wait set with an unknown time. */
static inline void engine__resolve(sim_engine *e, sim_req *r, double t)
{
    r->done_at = t;
    if (e->job->records)
        engine__resolve_record(e, r, t);
    if (r->waited) {
        sim_rank *owner = &e->ranks[r->owner];
        owner->wait_until = engine__later(owner->wait_until, t);
        if (--owner->wait_unknown == 0)
            engine__wake_at(e, owner->wait_until, r->owner);
    }
}

/* ---- engine_price.c: pricing without sharing ---- */

/* Time for bytes to travel src -> dst once they start moving, and the time
 * to inject them: how long the link stays busy for the next message (bytes
 * over the bottleneck bandwidth, or a calibrated gap, sim/net.h; the
 * posted gap for an eager message whose receive was posted by the end of
 * its instant, `posted`).  Cannot fail. */
static inline void engine__cost(sim_engine *e, int src, int dst, uint64_t bytes, bool posted,
                                double *travel, double *inject, double *alpha)
{
    if (src == dst) {
        *travel = *inject = *alpha = 0;
        return;
    }
    double a, bw;
    int hops;
    sim_net_cost(e->o->net, src, dst, bytes, &a, &bw, &hops);
    *travel = a + (double)bytes / bw;
    *inject = sim_net_gap(e->o->net, bytes, bw, posted);
    *alpha = a;
}

/* When the bytes of a message ready at `ready` start moving: the link
 * src -> dst carries one message's bytes at a time (sim/links.h).  Out of
 * memory fails the run (and returns ready). */
double engine__reserve(sim_engine *e, int src, int dst, double ready, double inject);

/* How long the bytes of m that start moving at `start` take to land,
 * `travel` when alone (duplex segments, sim/net.h).  Cannot fail. */
double engine__travel_time(sim_engine *e, const sim_msg *m, double start, double travel);

/* ---- engine_share.c: shared links ---- */

/* Whether m's bytes are a flow over shared links (else priced alone). */
static inline bool engine__shared(const sim_engine *e, const sim_msg *m)
{
    return e->flows && m->src != m->dst && m->bytes > 0;
}

/* Queues m's flow event of `type` at t under a new generation (an older
 * one becomes stale).  Out of memory fails the run. */
void engine__flow_event(sim_engine *e, sim_msg *m, uint32_t type, double t);
/* sim/flow.h's callback (ctx: the engine): the flow will end at end. */
void engine__flow_moved(void *ctx, sim_flow *f, double end);
/* m's bytes start moving now (its send's `started`).  A failure fails the
 * run. */
void engine__flow_begin(sim_engine *e, sim_msg *m);
/* The solver's flow of m has ended (EV_FLOW_END). */
void engine__flow_end(sim_engine *e, sim_msg *m);

/* ---- engine_proto.c and engine_ops.c: the operations ---- */

/* The operations table of every rank's cl_comm (core/comm.h). */
extern const comm_ops engine__ops;

int engine__isend(cl_comm *c, const void *buf, size_t bytes, int dst, int tag, uint32_t ctx,
                  cl_request **out);
int engine__irecv(cl_comm *c, void *buf, size_t bytes, int src, int tag, uint32_t ctx,
                  cl_request **out);
/* The instant is over (no event left at e->now): the messages pending
 * (e->defer) are priced, in order, their requests resolved. */
void engine__price_pending(sim_engine *e);
/* The instant is over (no event left at e->now): the ranks that deferred
 * a failed test wake (engine_ops.c, "polling"). */
void engine__polls_wake(sim_engine *e);

/* ---- engine_report.c: reports ---- */

/* No event left, some rank not returned: prints the wait-for report and
 * fails the run with CL_EDEADLOCK. */
void engine__report_deadlock(sim_engine *e);
/* sim_coro_resume failed for r (in state `was` before): fails the run
 * saying why (sim/fault.h). */
void engine__rank_stopped(sim_engine *e, sim_rank *r, uint8_t was, int err);
/* Says what the ranks forked and left running (killed as the run ended). */
void engine__report_forked(sim_engine *e);

#endif
