/* engine.c - the discrete-event engine: coroutine ranks, alpha-beta
 * messages with eager and rendezvous protocols, deadlock detection. */
#include "sim/engine.h"

#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/comm.h"
#include "core/debug.h"
#include "core/match.h"
#include "core/units.h"
#include "core/waitfor.h"
#include "sim/blocks.h"
#include "sim/coro.h"
#include "sim/fault.h"
#include "sim/flow.h"
#include "sim/links.h"
#include "sim/queue.h"

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
                          links: also an eager send, until its bytes are out */
    sim_req *rreq;     /* shared links: the receive it matched, until it lands */
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
    double poll_at;      /* ... this instant (see sim_test) */
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

/* The bytes of a rank's cl_comm that every call reads (its fields before
 * refused[], core/comm.h). */
#define RANK_COMM_HOT offsetof(cl_comm, refused)

/* Requests and messages come from slabs so a step of a big run does not
 * call malloc; the slabs are freed with the engine.  Items start on a cache
 * line: a 128-byte sim_req then spans two lines, not three. */
typedef struct slab {
    struct slab *next;
    _Alignas(64) unsigned char items[];
} slab;

struct sim_engine {
    const sim_opts *o;
    const run_job *job;  /* &o->job */
    sim_rank *ranks;
    sim_queue *q;
    sim_stacks *stacks;
    sim_links links;     /* --sharing none: when each pair's link is free */
    sim_flow_sys *flows; /* --sharing maxmin: the flows in flight ... */
    sim_port *ports;     /* ... and every link resource's lone flow */
    double mesh_bw, mesh_alpha; /* a tier mesh's route (sim_net_flow_mesh); 0: not one */
    /* flow_begin's route: here and not on the rank's stack, where it
     * would land on lines gone cold since the rank last ran. */
    int64_t route_ids[SIM_FLOW_MAX_ROUTE];
    double route_cap[SIM_FLOW_MAX_ROUTE];
    bool batch_open;     /* flows started or ended at batch_time, not solved yet */
    double batch_time;
    int32_t poll_head, poll_tail; /* ranks deferred to the end of the instant (-1: none) */
    size_t lookahead;    /* prefetch_soon: 0 (the next event's rank) or 2 */
    bool prefetch_reqs;  /* prefetch_soon: also the requests it waits for */
    sim_sched sched;
    sim_fault fault;     /* crashes, exit() and the time limit (sim/fault.h) */
    run_result *res;
    sim_stats stats;
    double now;
    struct free_item *free_reqs; /* pools of sim_req and sim_msg */
    struct free_item *free_msgs;
    slab *slabs;
    sim_blocks_pool blocks; /* the ranks' cl_alloc blocks (sim/blocks.h) */
    double *iter_time;  /* n * iters: each rank's own time per timed iteration */
    uint64_t next_msg;
    uint64_t next_gen;  /* flow end events: every push gets a new number */
    int n;
    int ndone;
    bool aborting; /* the run failed: every call fails, ranks unwind */
};

static const comm_ops sim_ops;

/* ---- pools ---- */

/* A free object's first bytes hold the free-list link. */
typedef struct free_item {
    struct free_item *next;
} free_item;

/* An object of `size` bytes from the free list, uninitialized (its user
 * writes every field: req_init, sim_isend, adopt); a new slab of 256 when
 * the list is empty.  NULL when out of memory. */
static void *pool_take(sim_engine *e, free_item **list, size_t size)
{
    if (!*list) {
        slab *s = aligned_alloc(64, sizeof *s + size * 256);
        if (!s)
            return NULL;
        s->next = e->slabs;
        e->slabs = s;
        for (size_t i = 0; i < 256; i++) {
            free_item *f = (free_item *)((char *)s->items + i * size);
            f->next = *list;
            *list = f;
        }
    }
    free_item *f = *list;
    *list = f->next;
    return f;
}

static void pool_give(free_item **list, void *obj)
{
    free_item *f = obj;
    f->next = *list;
    *list = f;
}

static sim_req *req_new(sim_engine *e)
{
    return pool_take(e, &e->free_reqs, sizeof(sim_req));
}

static void req_free(sim_engine *e, sim_req *r)
{
    pool_give(&e->free_reqs, r);
}

static sim_msg *msg_new(sim_engine *e)
{
    return pool_take(e, &e->free_msgs, sizeof(sim_msg));
}

static void msg_free(sim_engine *e, sim_msg *m)
{
    if (m->data) /* rare: an eager payload that waited; no call into libc otherwise */
        free(m->data);
    pool_give(&e->free_msgs, m);
}

/* ---- failure ---- */

/* Records the first failure of the run; later ones are consequences. */
static void engine_fail(sim_engine *e, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void engine_fail(sim_engine *e, int err, const char *fmt, ...)
{
    if (e->res->status == 0) {
        e->res->status = err;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->res->diag.msg, sizeof e->res->diag.msg, fmt, ap);
        va_end(ap);
    }
    e->aborting = true;
}

/* ---- time and records ---- */

/* fmax and fmin for times, which are never NaN: a compare, where they are
 * calls into libm on the hot path. */
static inline double later(double a, double b)
{
    return a > b ? a : b;
}

static inline double sooner(double a, double b)
{
    return a < b ? a : b;
}

static bool user_ctx(uint32_t ctx)
{
    return (ctx & 1u) == 0;
}

/* Returns the record's index + 1 in the log, or 0 (dropped, or past
 * what a request keeps: a request settled again then adds a record). */
static uint32_t record_add(sim_engine *e, rec_op op, int rank, int peer, int tag, uint64_t bytes,
                         uint64_t msg, double posted, double started, double finished,
                         bool blocking)
{
    rec_log *log = e->job->records;
    cl_record r = {
        .posted = posted, .started = started, .finished = finished, .bytes = bytes,
        .msg = msg, .rank = rank, .peer = peer, .tag = tag,
        .iter = e->ranks[rank].run.iter, .op = (uint8_t)op, .blocking = blocking,
    };
    size_t n = log->n;
    if (rec_log_add(log, &r))
        engine_fail(e, CL_ENOMEM, "out of memory keeping records");
    return log->n > n && log->n <= UINT32_MAX ? (uint32_t)log->n : 0;
}

/* record_add when the run keeps records, else 0: inlined, the check costs
 * a load where a run keeps none. */
static inline uint32_t record(sim_engine *e, rec_op op, int rank, int peer, int tag,
                            uint64_t bytes, uint64_t msg, double posted, double started,
                            double finished, bool blocking)
{
    if (!e->job->records)
        return 0;
    return record_add(e, op, rank, peer, tag, bytes, msg, posted, started, finished, blocking);
}

/* Wakes rank at t, unless its wait is reopened before then (unresolve). */
static inline void wake_at(sim_engine *e, double t, int rank)
{
    sim_event ev = {.time = t, .type = EV_WAKE, .rank = (uint32_t)rank,
                    .arg = e->ranks[rank].wake_gen};
    if (sim_queue_push(e->q, &ev))
        engine_fail(e, CL_ENOMEM, "out of memory in the event queue");
}

/* Time for bytes to travel src -> dst once they start moving, and the time
 * to inject them: how long the link stays busy for the next message (bytes
 * over the bottleneck bandwidth, or a calibrated gap, sim/net.h). */
static void cost(sim_engine *e, int src, int dst, uint64_t bytes, double *travel, double *inject,
                 double *alpha)
{
    if (src == dst) {
        *travel = *inject = *alpha = 0;
        return;
    }
    double a, bw;
    int hops;
    sim_net_cost(e->o->net, src, dst, bytes, &a, &bw, &hops);
    *travel = a + (double)bytes / bw;
    *inject = sim_net_gap(e->o->net, bytes, bw);
    *alpha = a;
}

/* When the bytes of a message ready at `ready` start moving: the link
 * src -> dst carries one message's bytes at a time (sim/links.h). */
static double reserve(sim_engine *e, int src, int dst, double ready, double inject)
{
    /* With shared links, the messages priced here are the zero-byte ones
     * (the barrier's): they keep a link busy 0 / B = 0 seconds (no machine
     * model shares links) and are ready when posted, so every link is free
     * when they come and the table has nothing to say.  Skipping it keeps
     * the barrier of a big run out of a table of every pair it touched. */
    if (src == dst || (e->flows && inject == 0))
        return ready;
    /* Most patterns send to the same peer again and again: the sender keeps
     * its last link's time at hand and the table sees only changes. */
    sim_rank *r = &e->ranks[src];
    if (r->link_dst != dst) {
        double *old = r->link_dst >= 0 ? sim_links_slot(&e->links, src, r->link_dst) : NULL;
        if (old)
            *old = r->link_free;
        double *now = sim_links_slot(&e->links, src, dst);
        if ((r->link_dst >= 0 && !old) || !now) {
            engine_fail(e, CL_ENOMEM, "out of memory in the link table");
            return ready;
        }
        r->link_dst = dst;
        r->link_free = *now;
    }
    double start = later(ready, r->link_free);
    r->link_free = start + inject;
    return start;
}

/* How long the bytes of the message src -> dst that start moving at
 * `start` take to land, `travel` when alone.  On a machine file with
 * duplex segments, a message that moves while its sender receives another
 * or its receiver sends another (an exchange) takes the duplex time
 * instead (sim/net.h).  Times are settled when messages are matched, so
 * the message that starts second pays and the first keeps its time; both
 * ends wait for both in an exchange, so its span is the duplex time.  The
 * barrier between iterations is left out: it is not timed, and a duplex
 * price for one of its messages would make the ranks leave it apart. */
static double travel_time(sim_engine *e, const sim_msg *m, double start, double travel)
{
    double duplex;
    if (!m->in_pattern || m->src == m->dst || !sim_net_duplex(e->o->net, m->bytes, &duplex))
        return travel;
    int src = m->src, dst = m->dst;
    sim_rank *s = &e->ranks[src], *d = &e->ranks[dst];
    double end = start + travel;
    if ((start < s->recv_until && s->recv_from < end) ||
        (start < d->send_until && d->send_from < end))
        travel = duplex;
    end = start + travel;
    if (end > s->send_until) {
        s->send_from = start;
        s->send_until = end;
    }
    if (end > d->recv_until) {
        d->recv_from = start;
        d->recv_until = end;
    }
    return travel;
}

/* ---- completion ----
 *
 * Nothing in the model can change a message once both ends are matched, so
 * a request's completion time is settled at matching (done_at) and its
 * bytes are copied then: the buffers belong to the operations until they
 * complete, so no pattern can tell the difference.  A blocked rank costs
 * one wake-up event, at the latest done_at of its wait set, once every
 * request in it is matched. */

static void rank_stopped(sim_engine *e, sim_rank *r, uint8_t was, int err);

static void resume(sim_engine *e, sim_rank *r)
{
    uint8_t was = r->state;
    r->state = RANK_READY;
    int err = sim_coro_resume(&e->sched, &r->co);
    if (err)
        rank_stopped(e, r, was, err);
}

/* ---- shared links (--sharing maxmin) ----
 *
 * A message's bytes are a flow over its route's resources (sim_net_flow_
 * route); sim/flow.h gives every flow its max-min fair rate and predicts
 * its end.  The flow starts when the bytes may move (an eager send: when
 * posted; a rendezvous: when both ends are posted, after the handshake if
 * it is on).  At the end the bytes are out: an eager send completes, and
 * the message lands alpha later (the route's latency, paid once).  A
 * zero-byte message and a message to oneself use no link: they are priced
 * as without sharing.
 *
 * Lone flows.  Most flows cross only resources nobody else uses (every
 * course pattern but the incast and the all-to-all), and such a flow's end
 * is known when it starts: bytes / the smallest capacity.  So a flow that
 * finds its ports free is priced on the spot, as without sharing: its
 * requests are resolved at once (provisionally), its message goes as it
 * would without sharing, and its ports name its send until its end
 * (sim_port.lone; the send keeps its receive, or its message while that
 * waits unexpected) instead of the solver holding it and an event ending
 * it.  A later flow that meets a lone flow still moving hands it to the
 * solver as if it had been there from the start (adopt: sim_flow_adopt,
 * bit for bit), reopens its requests (unresolve: waits blocked on them
 * wait again, their records are rewritten when they resolve) and is then
 * solved with it.  Its rate can only drop, so nothing that already
 * happened depended on the provisional times: a request is not complete
 * before its time (so not released: the send a port names is alive while
 * the flow moves), and a wait reopened is one whose wake-up had not come.
 * tests/test_share.c checks random traffic against the solver alone
 * (sim_opts.solver_only), record for record.
 *
 * Solver flows.  A flow's end is an event, moved whenever another flow
 * starting or ending changes its rate (a new event with a new generation;
 * the old one is ignored).  Flows that start or end at one instant are
 * solved together (a batch, closed before time moves on). */

static bool shared(const sim_engine *e, const sim_msg *m)
{
    return e->flows && m->src != m->dst && m->bytes > 0;
}

static void push_flow_event(sim_engine *e, sim_msg *m, uint32_t type, double t)
{
    m->gen = ++e->next_gen;
    sim_event ev = {.time = t, .type = type, .arg = m->gen, .ptr = m};
    if (sim_queue_push(e->q, &ev))
        engine_fail(e, CL_ENOMEM, "out of memory in the event queue");
}

/* sim/flow.h's callback: m's flow will end at end. */
static void flow_moved(void *ctx, sim_flow *f, double end)
{
    push_flow_event(ctx, sim_flow_owner(f), EV_FLOW_END, end);
}

/* Starts and ends of flows at this instant join its batch. */
static void batch_join(sim_engine *e)
{
    if (!e->batch_open) {
        sim_flow_batch_begin(e->flows, e->now);
        e->batch_open = true;
        e->batch_time = e->now;
    }
}

/* n, sim_net_flow_route's answer for m, or 0 after failing the run. */
static int route_checked(sim_engine *e, const sim_msg *m, int n)
{
    if (n < 0) {
        engine_fail(e, CL_ERANGE, "the route from rank %d to rank %d crosses more than %d links, "
                    "more than shared links can price", m->src, m->dst, SIM_FLOW_MAX_ROUTE);
        return 0;
    }
    return n;
}

/* m's route into ids/cap (and its latency into *alpha unless NULL); its
 * length, or 0 after failing the run. */
static int flow_route(sim_engine *e, const sim_msg *m, int64_t *ids, double *cap, double *alpha)
{
    return route_checked(e, m, sim_net_flow_route(e->o->net, m->src, m->dst, ids, cap,
                                                  SIM_FLOW_MAX_ROUTE, alpha));
}

static inline void resolve(sim_engine *e, sim_req *r, double t);

/* r, resolved provisionally, is not settled after all (its flow was handed
 * to the solver): a wait blocked on it waits for it again. */
static void unresolve(sim_engine *e, sim_req *r)
{
    r->done_at = INFINITY;
    if (r->waited) {
        sim_rank *owner = &e->ranks[r->owner];
        if (owner->wait_unknown++ == 0)
            owner->wake_gen++; /* the wake-up already queued is void */
    }
}

/* m's bytes are all out at end: an eager send completes; the message
 * lands alpha later, at its receive if it has one. */
static inline void flow_done(sim_engine *e, sim_msg *m, double end)
{
    double arrival = end + m->alpha;
    if (!m->eager) {
        resolve(e, m->sreq, arrival);
        resolve(e, m->rreq, arrival);
        msg_free(e, m);
        return;
    }
    resolve(e, m->sreq, end);
    if (m->rreq) {
        resolve(e, m->rreq, arrival);
        msg_free(e, m);
    } else {
        m->arrival = arrival; /* it waits, unexpected, for its receive */
    }
}

/* The lone flow of send s, still moving, goes to the solver (see above);
 * its message is made anew unless it waits unexpected. */
static void adopt(sim_engine *e, sim_req *s)
{
    sim_msg *m = s->lone_queued ? s->u.msg : NULL;
    if (!m) {
        if (!(m = msg_new(e))) {
            engine_fail(e, CL_ENOMEM, "out of memory sharing a link");
            return;
        }
        *m = (sim_msg){.sreq = s, .rreq = s->u.recv, .bytes = s->bytes, .id = s->msg_id,
                       .src = s->owner, .dst = s->peer,
                       .eager = s->bytes <= e->job->eager_limit};
    }
    m->lone_until = 0;
    s->u.recv = NULL;
    s->lone_queued = false;
    int64_t ids[SIM_FLOW_MAX_ROUTE];
    double cap[SIM_FLOW_MAX_ROUTE];
    int n = flow_route(e, m, ids, cap, &m->alpha);
    for (int i = 0; i < n; i++) {
        e->ports[ids[i]].lone = NULL;
        e->ports[ids[i]].flows++;
    }
    int err = sim_flow_adopt(e->flows, s->started, e->now, ids, cap, n, (double)m->bytes, m,
                             &m->flow);
    if (err) {
        engine_fail(e, err, "cannot share the link of a message from rank %d to rank %d: %s",
                    m->src, m->dst, cl_strerror(err));
        return;
    }
    e->stats.adopted++;
    push_flow_event(e, m, EV_FLOW_END, sim_flow_end(m->flow));
    unresolve(e, s);
    if (m->rreq)
        unresolve(e, m->rreq);
}

static void flow_share(sim_engine *e, sim_msg *m, int n);

/* Whether port p carries nothing at this instant (a lone flow that has
 * ended is forgotten). */
static inline bool port_free(sim_engine *e, sim_port *p)
{
    if (p->lone && p->until <= e->now)
        p->lone = NULL; /* ended: stale */
    return !p->flows && !p->lone;
}

/* m's bytes, alone on the free ports of its route (the n resources in
 * ids, of bottleneck rate bytes/s), are priced at once: its ports name its
 * send until they are out (see "lone flows" above). */
static inline void flow_lone(sim_engine *e, sim_msg *m, const int64_t *ids, int n, double rate)
{
    /* As sim_flow_start prices a flow on idle resources. */
    e->stats.flows++;
    double end = e->now + (double)m->bytes / rate;
    for (int i = 0; i < n; i++) {
        e->ports[ids[i]].lone = m->sreq;
        e->ports[ids[i]].until = end;
    }
    if (m->rreq)
        m->sreq->u.recv = m->rreq;
    else
        m->sreq->u.msg = m;
    m->sreq->lone_queued = !m->rreq;
    m->lone_until = end;
    e->stats.lone++;
    flow_done(e, m, end);
}

/* m's bytes start moving now (its send's `started`): alone on free
 * ports, priced at once; otherwise in the solver, with the lone flows it
 * meets. */
static void flow_begin(sim_engine *e, sim_msg *m)
{
    int64_t *ids = e->route_ids; /* adopt() routes on its own arrays */
    double *cap = e->route_cap;
    if (e->mesh_bw > 0) {
        /* sim_net_flow_mesh: the route every message of a mesh has. */
        ids[0] = 2 * (int64_t)m->src;
        ids[1] = 2 * (int64_t)m->dst + 1;
        cap[0] = cap[1] = e->mesh_bw;
        m->alpha = e->mesh_alpha;
        bool out = port_free(e, &e->ports[ids[0]]), in = port_free(e, &e->ports[ids[1]]);
        if (out && in && !e->o->solver_only)
            flow_lone(e, m, ids, 2, e->mesh_bw);
        else
            flow_share(e, m, 2);
        return;
    }
    /* Called here, not through flow_route: one stack frame less on the
     * rank's cold stack, per message. */
    int n = sim_net_flow_route(e->o->net, m->src, m->dst, ids, cap, SIM_FLOW_MAX_ROUTE,
                               &m->alpha);
    if (n <= 0 && !route_checked(e, m, n))
        return;
    double rate = INFINITY;
    bool alone = true;
    for (int i = 0; i < n; i++) {
        alone = port_free(e, &e->ports[ids[i]]) && alone;
        if (cap[i] < rate)
            rate = cap[i];
    }
    if (alone && !e->o->solver_only)
        flow_lone(e, m, ids, n, rate);
    else
        flow_share(e, m, n);
}

/* flow_begin's m meets other flows on its route (e->route_ids, n
 * resources): it goes to the solver, with the lone flows it meets.  Out
 * of line, so that a lone flow's pricing saves no registers for it. */
__attribute__((noinline)) static void flow_share(sim_engine *e, sim_msg *m, int n)
{
    int64_t *ids = e->route_ids;
    double *cap = e->route_cap;
    e->stats.flows++;
    for (int i = 0; i < n; i++)
        if (e->ports[ids[i]].lone)
            adopt(e, e->ports[ids[i]].lone);
    batch_join(e);
    int err = sim_flow_start(e->flows, e->now, ids, cap, n, (double)m->bytes, m, &m->flow);
    if (err) {
        engine_fail(e, err, "cannot start the flow of a message from rank %d to rank %d: %s",
                    m->src, m->dst, cl_strerror(err));
        return;
    }
    for (int i = 0; i < n; i++)
        e->ports[ids[i]].flows++;
    double end = sim_flow_end(m->flow);
    if (isfinite(end))
        push_flow_event(e, m, EV_FLOW_END, end);
}

/* The solver's flow of m has ended. */
static void flow_end(sim_engine *e, sim_msg *m)
{
    int64_t ids[SIM_FLOW_MAX_ROUTE];
    double cap[SIM_FLOW_MAX_ROUTE];
    int n = flow_route(e, m, ids, cap, NULL);
    for (int i = 0; i < n; i++)
        e->ports[ids[i]].flows--;
    batch_join(e);
    sim_flow_finish(e->flows, e->now, m->flow);
    m->flow = NULL;
    flow_done(e, m, e->now);
}

/* resolve's record of r, settled at t: made, or rewritten when r is
 * settled again (unresolve).  Only when the run keeps records. */
__attribute__((noinline)) static void resolve_record(sim_engine *e, sim_req *r, double t)
{
    if (r->rec)
        e->job->records->v[r->rec - 1].finished = t;
    else if (user_ctx(r->ctx))
        r->rec = record_add(e, r->base.is_send ? REC_SEND : REC_RECV, r->owner,
                            r->base.is_send ? r->peer : r->base.status.source, r->tag, r->bytes,
                            r->msg_id, r->posted, r->started, t, r->base.blocking);
}

/* Settles r to complete at time t; wakes its owner's wait when r was the
 * last request of the wait set with an unknown time. */
static inline void resolve(sim_engine *e, sim_req *r, double t)
{
    r->done_at = t;
    if (e->job->records)
        resolve_record(e, r, t);
    if (r->waited) {
        sim_rank *owner = &e->ranks[r->owner];
        owner->wait_until = later(owner->wait_until, t);
        if (--owner->wait_unknown == 0)
            wake_at(e, owner->wait_until, r->owner);
    }
}

/* take's refusal: m does not fit r's buffer; fails the run. */
__attribute__((noinline)) static bool take_refused(sim_engine *e, sim_req *r, sim_msg *m)
{
    char a[UNITS_BUF], b[UNITS_BUF];
    r->base.err = CL_ETRUNC;
    engine_fail(e, CL_ETRUNC,
                "rank %d's receive buffer (%s, %llu bytes) is smaller than the message "
                "rank %d sent it (%s, %llu bytes, tag %d)",
                r->owner, units_size_str(a, r->bytes), (unsigned long long)r->bytes, m->src,
                units_size_str(b, m->bytes), (unsigned long long)m->bytes, m->link.tag);
    return false;
}

/* The receive r takes message m: checks the size, sets the status. */
static inline bool take(sim_engine *e, sim_req *r, sim_msg *m)
{
    r->msg_id = m->id;
    r->base.status.source = m->src;
    r->base.status.tag = m->link.tag;
    r->base.status.bytes = (size_t)m->bytes;
    return m->bytes <= r->bytes || take_refused(e, r, m);
}

/* Both ends of a rendezvous message are posted: the bytes move now (or
 * when the link frees up); both requests complete when they have landed. */
static void rendezvous_match(sim_engine *e, sim_req *recv, sim_msg *m, double recv_posted)
{
    double travel, inject, alpha;
    cost(e, m->src, m->dst, m->bytes, &travel, &inject, &alpha);
    double ready = later(m->posted, recv_posted);
    if (e->o->handshake)
        ready = later(m->posted + alpha, recv_posted) + alpha;
    if (shared(e, m)) {
        if (m->sbuf && recv->u.buf)
            memcpy(recv->u.buf, m->sbuf, (size_t)m->bytes);
        recv->started = m->sreq->started = ready;
        m->rreq = recv;
        if (ready > e->now)
            push_flow_event(e, m, EV_FLOW_START, ready);
        else
            flow_begin(e, m);
        return;
    }
    double start = reserve(e, m->src, m->dst, ready, inject);
    travel = travel_time(e, m, start, travel);
    if (m->sbuf && recv->u.buf && m->bytes)
        memcpy(recv->u.buf, m->sbuf, (size_t)m->bytes);
    recv->started = m->sreq->started = start;
    resolve(e, m->sreq, start + travel);
    resolve(e, recv, start + travel);
    msg_free(e, m);
}

/* A receive takes an eager message that waited unexpected. */
static void eager_match(sim_engine *e, sim_req *recv, sim_msg *m)
{
    if (m->data && recv->u.buf)
        memcpy(recv->u.buf, m->data, (size_t)m->bytes);
    recv->started = later(m->started, recv->posted); /* already here: starts when posted */
    m->rreq = recv;
    if (m->flow) {
        /* Still in flight: it lands at its flow's end (flow_end). */
        free(m->data);
        m->data = NULL;
        return;
    }
    if (m->lone_until > e->now) {
        /* Its lone flow still moves: a hand-over reopens this receive. */
        m->sreq->u.recv = recv;
        m->sreq->lone_queued = false;
    }
    resolve(e, recv, later(m->arrival, e->now));
    msg_free(e, m);
}

/* ---- operations (run on the rank's coroutine) ---- */

static sim_req *req_of(match_link *l);

/* The eager message m, from buf, reaches its receiver's queues with its
 * bytes starting to move at start: a receive posted already takes it
 * (*recv, its bytes copied now; NULL when their sizes clash, which fails
 * the run), else it waits unexpected with a copy of its payload.  Returns
 * 1 (taken by a receive), 0 (unexpected) or CL_ENOMEM (then m is in no
 * queue). */
static inline int eager_arrive(sim_engine *e, sim_msg *m, const void *buf, double start,
                               sim_req **recv)
{
    match_queues *mq = &e->ranks[m->dst].mq;
    *recv = NULL;
    match_link *l = match_arrive(mq, &m->link);
    if (l) {
        sim_req *r = req_of(l);
        if (take(e, r, m)) {
            if (r->u.buf && buf && m->bytes)
                memcpy(r->u.buf, buf, (size_t)m->bytes);
            r->started = start;
            *recv = r;
        }
        return 1;
    }
    if (buf && m->bytes && e->job->payload) {
        m->data = malloc((size_t)m->bytes);
        if (!m->data) {
            match_remove(mq, &m->link);
            return CL_ENOMEM;
        }
        memcpy(m->data, buf, (size_t)m->bytes);
    }
    return 0;
}

static sim_req *req_of(match_link *l)
{
    return (sim_req *)((char *)l - offsetof(sim_req, link));
}

static sim_msg *msg_of(match_link *l)
{
    return (sim_msg *)((char *)l - offsetof(sim_msg, link));
}

/* A request just posted: nothing matched, completion time unknown.  Every
 * field is written (pool memory is not zeroed), one by one: a compound
 * literal of the whole struct compiles to a string store that costs more
 * than the stores themselves. */
static void req_init(sim_engine *e, sim_req *r, int owner, int peer, int tag, uint32_t ctx,
                     void *buf, uint64_t bytes, bool is_send)
{
    r->base = (struct cl_request){.is_send = is_send,
                                  .blocking = e->ranks[owner].comm.blocking_call};
    r->link = (match_link){.src = peer, .tag = tag, .ctx = ctx}; /* a receive's envelope */
    r->u.buf = buf;
    r->bytes = bytes;
    r->msg_id = 0;
    r->posted = r->started = e->now;
    r->done_at = INFINITY;
    r->owner = owner;
    r->peer = peer;
    r->tag = tag;
    r->ctx = ctx;
    r->rec = 0;
    r->waited = r->lone_queued = false;
}

static int sim_isend(cl_comm *c, const void *buf, size_t bytes, int dst, int tag, uint32_t ctx,
                     cl_request **out)
{
    sim_rank *me = c->backend;
    sim_engine *e = me->eng;
    if (e->aborting)
        return CL_EPEER;
    int src = (int)(me - e->ranks);
    sim_req *s = req_new(e);
    sim_msg *m = msg_new(e);
    if (!s || !m) {
        if (s)
            req_free(e, s);
        if (m)
            pool_give(&e->free_msgs, m); /* not initialized: no payload to free */
        return CL_ENOMEM;
    }
    req_init(e, s, src, dst, tag, ctx, NULL, bytes, true);
    /* Field by field, as in req_init. */
    m->link = (match_link){.src = src, .tag = tag, .ctx = ctx};
    m->sreq = m->rreq = NULL;
    m->flow = NULL;
    m->gen = 0;
    m->alpha = m->lone_until = 0;
    m->data = NULL;
    m->sbuf = NULL;
    m->bytes = bytes;
    s->msg_id = m->id = ++e->next_msg;
    m->posted = e->now;
    m->arrival = m->started = 0;
    m->src = src;
    m->dst = dst;
    m->eager = bytes <= e->job->eager_limit;
    m->in_pattern = me->run.in_pattern;
    if (user_ctx(ctx)) {
        e->res->messages++;
        e->res->bytes += bytes;
    }
    if (++e->stats.total_messages == e->o->max_messages)
        engine_fail(e, CL_ETIMEOUT, "stopped after %llu messages (the run's message budget)",
                    (unsigned long long)e->o->max_messages);
    sim_rank *peer = &e->ranks[dst];
    sim_req *r;
    if (m->eager && shared(e, m)) {
        /* Its receive, if posted, completes when the flow has landed. */
        m->sreq = s;
        m->started = e->now;
        int got = eager_arrive(e, m, buf, e->now, &r);
        if (got < 0) {
            msg_free(e, m);
            req_free(e, s);
            return CL_ENOMEM;
        }
        if (got && !r) {
            msg_free(e, m); /* the run is failing: nothing more to price */
        } else {
            m->rreq = r;
            flow_begin(e, m);
        }
    } else if (m->eager) {
        double travel, inject, alpha;
        cost(e, src, dst, bytes, &travel, &inject, &alpha);
        double start = reserve(e, src, dst, e->now, inject);
        travel = travel_time(e, m, start, travel);
        m->started = s->started = start;
        m->arrival = start + travel;
        int got = eager_arrive(e, m, buf, start, &r);
        if (got < 0) {
            msg_free(e, m);
            req_free(e, s);
            return CL_ENOMEM;
        }
        if (got) {
            if (r)
                resolve(e, r, m->arrival);
            msg_free(e, m);
        }
        resolve(e, s, start + sooner(inject, travel));
    } else {
        m->sreq = s;
        m->sbuf = buf;
        match_link *l = match_arrive(&peer->mq, &m->link);
        if (l) {
            sim_req *r = req_of(l);
            if (take(e, r, m))
                rendezvous_match(e, r, m, r->posted);
            else
                msg_free(e, m);
        }
    }
    *out = &s->base;
    return 0;
}

static int sim_irecv(cl_comm *c, void *buf, size_t bytes, int src, int tag, uint32_t ctx,
                     cl_request **out)
{
    sim_rank *me = c->backend;
    sim_engine *e = me->eng;
    if (e->aborting)
        return CL_EPEER;
    sim_req *r = req_new(e);
    if (!r)
        return CL_ENOMEM;
    req_init(e, r, (int)(me - e->ranks), src, tag, ctx, buf, bytes, false);
    match_link *l = match_post_recv(&me->mq, &r->link);
    if (l) {
        sim_msg *m = msg_of(l);
        if (!take(e, r, m))
            msg_free(e, m);
        else if (m->eager)
            eager_match(e, r, m);
        else
            rendezvous_match(e, r, m, e->now);
    }
    *out = &r->base;
    return 0;
}

/* Blocks until every request of the set is complete: at once when all are
 * settled and due, else after one wake-up (resolve() or a time event). */
static int sim_wait(cl_comm *c, int n, cl_request **reqs, wf_op call)
{
    sim_rank *me = c->backend;
    sim_engine *e = me->eng;
    if (e->aborting)
        return CL_EPEER;
    int unknown = 0;
    double until = e->now;
    for (int i = 0; i < n; i++) {
        sim_req *r = (sim_req *)reqs[i];
        if (!r)
            continue;
        /* Marked: not complete yet, so this wait blocks on it (a settled
         * time may reopen: unresolve). */
        r->waited = r->done_at > e->now;
        if (r->done_at == INFINITY)
            unknown++;
        else if (r->done_at > until)
            until = r->done_at;
    }
    if (unknown || until > e->now) {
        me->wait_reqs = reqs;
        me->wait_n = n;
        me->wait_unknown = unknown;
        me->wait_until = until;
        me->wait_call = (uint8_t)call;
        me->wait_start = e->now;
        me->state = RANK_BLOCKED;
        if (!unknown)
            wake_at(e, until, (int)(me - e->ranks));
        sim_coro_yield(&e->sched, &me->co);
        me->wait_reqs = NULL;
        if (e->aborting)
            return CL_EPEER;
        if (call == WF_WAIT || call == WF_WAITALL)
            record(e, REC_WAIT, (int)(me - e->ranks), -1, -1, 0, 0, me->wait_start,
                   me->wait_start, e->now, true);
    }
    for (int i = 0; i < n; i++)
        if (reqs[i]) {
            ((sim_req *)reqs[i])->waited = false;
            reqs[i]->done = true;
        }
    return 0;
}

/* me failed a test of req after a failed test of another request at
 * this instant: it sleeps until the instant is over (polls_wake). */
static void poll_defer(sim_engine *e, sim_rank *me, cl_request *req)
{
    int32_t rank = (int32_t)(me - e->ranks);
    me->poll_late = req;
    me->poll_next = -1;
    if (e->poll_tail >= 0)
        e->ranks[e->poll_tail].poll_next = rank;
    else
        e->poll_head = rank;
    e->poll_tail = rank;
    me->state = RANK_COMPUTING;
    sim_coro_yield(&e->sched, &me->co);
}

/* The instant is over (no event left at e->now): every deferred rank
 * wakes at the next event or when one of the two requests it polled
 * completes, whichever is first, in the order they were deferred; one
 * with none of them in sight wakes now to wait for its last request. */
static void polls_wake(sim_engine *e)
{
    const sim_event *next = sim_queue_peek(e->q);
    double later = next ? next->time : INFINITY;
    while (e->poll_head >= 0) {
        sim_rank *r = &e->ranks[e->poll_head];
        e->poll_head = r->poll_next;
        double t = fmin(later, ((sim_req *)r->poll_late)->done_at);
        if (r->poll_req)
            t = fmin(t, ((sim_req *)r->poll_req)->done_at);
        r->poll_dry = t == INFINITY;
        wake_at(e, r->poll_dry ? e->now : t, (int)(r - e->ranks));
    }
    e->poll_tail = -1;
}

/* Not done yet.  Polling costs no virtual time, so what a failed test
 * tells the rank changes only when another rank acts or time moves on:
 *  - its first failed test at an instant lets every other event of the
 *    instant happen: it sleeps until the next event or the request's
 *    completion, whichever is first;
 *  - a second failed test of the same request at one instant has nothing
 *    to wait for but the request: the rank sleeps until it completes, as
 *    in cl_wait, and the test reports it done;
 *  - a failed test of another request at the same instant (a rank
 *    polling several in turn) is deferred to the end of the instant
 *    (poll_defer): once no event is left at this time, the rank sleeps
 *    until the next event or either request's completion.
 * Two ranks that poll would otherwise wake each other at one instant for
 * ever.  A completion that no event announces (a request settled before
 * the rank slept, and polled neither first nor last) may be seen late. */
static int sim_test(cl_comm *c, cl_request *req, bool *done)
{
    sim_rank *me = c->backend;
    sim_engine *e = me->eng;
    sim_req *r = (sim_req *)req;
    if (e->aborting)
        return CL_EPEER;
    if (r->done_at <= e->now) {
        req->done = *done = true;
        return 0;
    }
    *done = false;
    cl_request *set[1] = {req};
    if (me->poll_at == e->now && me->poll_req) {
        if (me->poll_req == req) {
            me->poll_req = NULL;
            int err = sim_wait(c, 1, set, WF_WAIT);
            *done = err == 0;
            return err;
        }
        poll_defer(e, me, req);
        if (e->aborting)
            return CL_EPEER;
        if (me->poll_dry) {
            me->poll_dry = false;
            int err = sim_wait(c, 1, set, WF_WAIT);
            *done = err == 0;
            return err;
        }
        return 0;
    }
    me->poll_req = req;
    me->poll_at = e->now;
    const sim_event *next = sim_queue_peek(e->q);
    if (r->done_at == INFINITY && !next) {
        int err = sim_wait(c, 1, set, WF_WAIT); /* only this can end it; deadlock otherwise */
        *done = err == 0;
        return err;
    }
    double t = next ? fmin(next->time, r->done_at) : r->done_at;
    wake_at(e, t, (int)(me - e->ranks));
    me->state = RANK_COMPUTING;
    sim_coro_yield(&e->sched, &me->co);
    return e->aborting ? CL_EPEER : 0;
}

static void sim_release(cl_comm *c, cl_request *req)
{
    sim_rank *me = c->backend;
    if (me->poll_req == req)
        me->poll_req = NULL;
    req_free(me->eng, (sim_req *)req);
}

static int sim_compute(cl_comm *c, double seconds)
{
    sim_rank *me = c->backend;
    sim_engine *e = me->eng;
    if (e->aborting)
        return CL_EPEER;
    if (seconds <= 0)
        return 0;
    int rank = (int)(me - e->ranks);
    double start = e->now;
    wake_at(e, e->now + seconds, rank);
    me->state = RANK_COMPUTING;
    sim_coro_yield(&e->sched, &me->co);
    if (e->aborting)
        return CL_EPEER;
    record(e, REC_COMPUTE, rank, -1, -1, 0, 0, start, start, e->now, true);
    return 0;
}

static double sim_reduce_time(const cl_comm *c, size_t bytes, cl_dtype t)
{
    const sim_rank *me = c->backend;
    return (double)bytes * sim_net_gamma(me->eng->o->net, t);
}

static double sim_now(const cl_comm *c)
{
    const sim_rank *me = c->backend;
    return me->eng->now;
}

static void *sim_alloc(cl_comm *c, size_t bytes)
{
    sim_rank *me = c->backend;
    void *p = sim_blocks_alloc(&me->blocks, &me->eng->blocks, bytes);
    if (!p)
        engine_fail(me->eng, CL_ENOMEM, "rank %d: out of memory allocating %zu bytes",
                    (int)(me - me->eng->ranks), bytes);
    return p;
}

static void sim_print(cl_comm *c, const char *line)
{
    sim_rank *me = c->backend;
    FILE *out = me->eng->job->out ? me->eng->job->out : stdout;
    fprintf(out, "rank %d: %s\n", (int)(me - me->eng->ranks), line);
}

static void sim_fail(cl_comm *c, const char *msg)
{
    sim_rank *me = c->backend;
    engine_fail(me->eng, CL_ECHECK, "rank %d: data check failed: %s",
                (int)(me - me->eng->ranks), msg);
}

static void sim_misuse(cl_comm *c, const char *msg)
{
    sim_rank *me = c->backend;
    engine_fail(me->eng, CL_ECHECK, "rank %d: misuse: %s", (int)(me - me->eng->ranks), msg);
}

static void sim_span(cl_comm *c, rec_op op, double start, double end)
{
    sim_rank *me = c->backend;
    record(me->eng, op, (int)(me - me->eng->ranks), -1, -1, 0, 0, start, start, end, true);
}

static const comm_ops sim_ops = {
    .isend = sim_isend,
    .irecv = sim_irecv,
    .wait = sim_wait,
    .test = sim_test,
    .release = sim_release,
    .compute = sim_compute,
    .reduce_time = sim_reduce_time,
    .now = sim_now,
    .alloc = sim_alloc,
    .print = sim_print,
    .fail = sim_fail,
    .misuse = sim_misuse,
    .span = sim_span,
};

/* ---- ranks ---- */

/* A rank's cl_alloc blocks are checked: rc, or CL_EPEER when the rank
 * wrote past one (the run then fails). */
static int blocks_check(sim_rank *r, int rc)
{
    sim_engine *e = r->eng;
    sim_blocks_fault f;
    if (sim_blocks_check(&r->blocks, &f)) {
        char why[sizeof e->res->diag.msg];
        int rank = (int)(r - e->ranks);
        sim_blocks_words(&f, rank, rank, NULL, why, sizeof why);
        engine_fail(e, CL_EPEER, "%s", why);
        rc = CL_EPEER;
    }
    return rc;
}

/* The driver's end of an iteration: its blocks are checked, and kept for
 * the next one's cl_alloc calls. */
static int iteration_end(run_rank *run, int rc)
{
    sim_rank *r = run->backend;
    rc = blocks_check(r, rc);
    sim_blocks_recycle(&r->blocks, &r->eng->blocks);
    return rc;
}

/* A rank's life: the iterations of core/run.h's driver. */
static void rank_main(void *arg)
{
    sim_rank *r = arg;
    sim_engine *e = r->eng;
    const char *during = NULL;
    int rc = run_rank_iterations(&r->run, &during);
    /* A call that failed because the run is aborting is a consequence of
     * the failure already reported. */
    if (rc && !e->aborting)
        engine_fail(e, rc, "rank %d: %s: %s (%s)", (int)(r - e->ranks), during, cl_strerror(rc),
                    cl_errname(rc));
    blocks_check(r, 0);
    sim_blocks_release(&r->blocks, &e->blocks);
    r->state = RANK_DONE;
    e->ndone++;
}

/* ---- deadlock ---- */

/* Prints the wait-for report of every rank (core/waitfor): at a deadlock
 * every unfinished rank is blocked; at the time limit some may still run.
 * A rank blocked outside its pattern (in the barrier between iterations)
 * counts as run_outside_state says: returned, when its pattern of the
 * iteration the others are blocked in has.  *blocked: the ranks that count
 * as blocked; *deadlock: the analysis found one (the report is printed
 * only then when only_deadlock).  0, or CL_ENOMEM when there is no memory
 * left to analyze. */
static int report_ranks(sim_engine *e, bool only_deadlock, int *blocked, bool *deadlock)
{
    wf_rank *wr = calloc((size_t)e->n, sizeof *wr);
    size_t total = 0;
    for (int i = 0; i < e->n; i++)
        if (e->ranks[i].state == RANK_BLOCKED)
            total += (size_t)e->ranks[i].wait_unknown;
    wf_pending *pend = calloc(total ? total : 1, sizeof *pend);
    if (!wr || !pend) {
        free(wr);
        free(pend);
        return CL_ENOMEM;
    }
    size_t k = 0;
    int iter = 0;
    bool known = false;
    for (int i = 0; i < e->n && !known; i++)
        if (e->ranks[i].state == RANK_BLOCKED && e->ranks[i].run.in_pattern) {
            iter = e->ranks[i].run.iter;
            known = true;
        }
    *blocked = 0;
    for (int i = 0; i < e->n; i++) {
        sim_rank *r = &e->ranks[i];
        wr[i].state = r->state == RANK_DONE      ? WF_DONE
                      : r->state != RANK_BLOCKED ? WF_RUNNING
                      : r->run.in_pattern        ? WF_BLOCKED
                                                 : run_outside_state(r->run.returned, iter, known);
        if (wr[i].state != WF_BLOCKED)
            continue;
        wr[i].call = (wf_op)r->wait_call;
        wr[i].pending = &pend[k];
        for (int j = 0; j < r->wait_n; j++) {
            sim_req *q = (sim_req *)r->wait_reqs[j];
            if (!q || q->done_at != INFINITY)
                continue;
            pend[k].op = q->base.is_send ? WF_SEND : WF_RECV;
            pend[k].peer = q->peer;
            pend[k].tag = q->tag;
            pend[k].bytes = q->bytes;
            k++;
            wr[i].npending++;
        }
        /* Every operation of its wait due to complete: it is in motion. */
        if (wr[i].npending == 0)
            wr[i].state = WF_RUNNING;
        *blocked += wr[i].state == WF_BLOCKED;
    }
    wf_result res;
    wf_report_opts ro = {.eager_limit = e->job->eager_limit, .time = e->now};
    *deadlock = false;
    if (waitfor_analyze(wr, (size_t)e->n, &res) == 0) {
        *deadlock = res.deadlock;
        if (res.deadlock || !only_deadlock)
            waitfor_report(e->job->report ? e->job->report : stderr, wr, (size_t)e->n, &ro,
                           &res);
        waitfor_result_release(&res);
    }
    free(wr);
    free(pend);
    return 0;
}

static void report_deadlock(sim_engine *e)
{
    char t[UNITS_BUF];
    int blocked;
    bool deadlock;
    if (report_ranks(e, false, &blocked, &deadlock))
        engine_fail(e, CL_EDEADLOCK, "deadlock (no memory left to analyze it)");
    else
        engine_fail(e, CL_EDEADLOCK, "deadlock at t = %s: %d of %d ranks blocked",
                    units_time_str(t, e->now), blocked, e->n);
}

/* A fault at addr past the end of a rank's cl_alloc block (r's own, the
 * likely one, first): the words naming it into why.  Else why is kept. */
static void block_named(sim_engine *e, const sim_rank *r, const void *addr, const char *where,
                        char *why, size_t len)
{
    sim_blocks_fault f;
    int owner = -1;
    if (sim_blocks_find(&r->blocks, addr, &f))
        owner = (int)(r - e->ranks);
    for (int i = 0; i < e->n && owner < 0; i++)
        if (sim_blocks_find(&e->ranks[i].blocks, addr, &f))
            owner = i;
    if (owner >= 0)
        sim_blocks_words(&f, (int)(r - e->ranks), owner, where, why, len);
}

/* sim_coro_resume failed for r (in state `was` before): it overflowed its
 * stack, crashed, called exit() or ran past the time limit, or the limit
 * stopped the run at its turn, before it ran (sim/fault.h tells which).  A
 * rank stopped where it stood never runs again; the others unwind. */
static void rank_stopped(sim_engine *e, sim_rank *r, uint8_t was, int err)
{
    char where[64], why[sizeof e->res->diag.msg], t[UNITS_BUF];
    if (r->comm.call.name)
        snprintf(where, sizeof where, "in %s", r->comm.call.name);
    else
        snprintf(where, sizeof where, "in its own code");
    const void *addr = sim_fault_addr(&e->fault);
    bool blame = sim_fault_why(&e->fault, err, (int)(r - e->ranks),
                               sim_stacks_stack_bytes(e->stacks), where, why, sizeof why);
    if (addr)
        block_named(e, r, addr, where, why, sizeof why);
    if (!blame)
        r->state = was; /* it never ran: still waiting as it was */
    /* The limit stopping the scheduler between ranks finds it running
     * events: the ranks make progress, and no rank is blamed.  The wait-for
     * report is printed only when some ranks are deadlocked among
     * themselves meanwhile (a message in flight is no edge of it). */
    int blocked = 0;
    bool deadlock = false;
    if (err == CL_ETIMEOUT && !e->aborting)
        report_ranks(e, !blame, &blocked, &deadlock);
    units_time_str(t, e->now);
    if (blame)
        engine_fail(e, err, "%s", why);
    else if (deadlock)
        engine_fail(e, err, "%s: ranks are deadlocked among themselves (the report above), "
                    "while others went on (stopped at t = %s of modeled time, after %llu "
                    "events)", why, t, (unsigned long long)e->stats.events);
    else
        engine_fail(e, err, "%s, its ranks still making progress (stopped at t = %s of "
                    "modeled time, after %llu events): a long run, not a stuck one; raise "
                    "--timeout, or 0 for no limit", why, t, (unsigned long long)e->stats.events);
}

/* ---- the run ---- */

static void handle(sim_engine *e, const sim_event *ev)
{
    sim_msg *m = ev->ptr;
    switch (ev->type) {
    case EV_WAKE:
        if (ev->arg == e->ranks[ev->rank].wake_gen)
            resume(e, &e->ranks[ev->rank]);
        break;
    case EV_FLOW_START:
        if (ev->arg == m->gen)
            flow_begin(e, m);
        break;
    case EV_FLOW_END:
        if (ev->arg == m->gen && m->flow)
            flow_end(e, m);
        break;
    default:
        assert(!"unknown event");
    }
}

/* Ranks above which the requests a waking rank reads come from memory
 * too (10,000 ranks' fit the cache: fetching them measured 10.1 -> 9.8 M
 * messages/s; see prefetch_soon). */
#define REQS_COLD_ABOVE 32768

/* Called after each pop: a rank about to run is likely cold, so fetch its
 * stack (without reading the rank, sim_stacks_prefetch) and its state's
 * hot lines (sim_rank's first fields) while this event runs.  Which rank:
 * with few, the next event's; with many (e->lookahead), whose lines come
 * from memory in longer than one event takes, the rank two events after
 * the next in the queue's sorted run (in lockstep; the next one's was
 * fetched two events ago).  Above REQS_COLD_ABOVE ranks also the requests
 * that the rank of the event after the next waits for: its state and stack
 * were fetched one event ago, so reading its wait set no longer misses.
 * Measured with allreduce-ring --no-payload, 1 MiB, infiniband (M
 * messages/s of CPU time, 3 runs each): looking two ahead, 10,000 ranks
 * 8.9-9.1 -> 10.1-10.3 and 100,000 ranks 4.7-4.8 -> 5.5-6.3 (at 1,000
 * ranks it measured 10.7 -> 10.1-10.4, so there it does not); the
 * requests, 100,000 ranks 5.8-6.0 -> 6.3-6.6. */
static void prefetch_soon(sim_engine *e)
{
    const sim_event *next = sim_queue_peek(e->q), *soon;
    if (e->lookahead && (soon = sim_queue_soon(e->q, e->lookahead)))
        next = soon;
    if (next && next->type == EV_WAKE) {
        const char *r = (const char *)&e->ranks[next->rank];
        sim_stacks_prefetch(e->stacks, (size_t)next->rank);
#pragma GCC unroll 8
        for (size_t at = 0; at < offsetof(sim_rank, comm) + RANK_COMM_HOT; at += 64)
            __builtin_prefetch(r + at);
    }
    if (!e->prefetch_reqs || !(soon = sim_queue_soon(e->q, 1)) || soon->type != EV_WAKE)
        return;
    const sim_rank *r = &e->ranks[soon->rank];
    int n = r->wait_reqs ? (r->wait_n < 4 ? r->wait_n : 4) : 0;
    for (int i = 0; i < n; i++) {
        const char *q = (const char *)r->wait_reqs[i];
        if (q) { /* both lines of a sim_req, to be written */
            __builtin_prefetch(q, 1);
            __builtin_prefetch(q + 64, 1);
        }
    }
}

/* After a failure: every rank still inside the pattern is resumed once;
 * its calls now fail with CL_EPEER, so it unwinds and frees what it holds. */
static void unwind(sim_engine *e)
{
    e->aborting = true;
    for (int i = 0; i < e->n; i++) {
        sim_rank *r = &e->ranks[i];
        while (r->state != RANK_DONE && !sim_coro_done(&r->co)) {
            if (sim_coro_resume(&e->sched, &r->co))
                break;
        }
    }
}

static int engine_init(sim_engine *e, const sim_opts *o, run_result *res)
{
    const run_job *j = &o->job;
    e->q = NULL;
    int err = sim_queue_create(&e->q);
    if (!err)
        err = sim_stacks_create(&e->stacks, (size_t)j->nranks, o->stack_bytes);
    e->ranks = calloc((size_t)j->nranks, sizeof *e->ranks);
    e->iter_time = calloc((size_t)j->nranks * (size_t)j->iters, sizeof(double));
    if (err || !e->ranks || !e->iter_time || run_result_init(res, j->iters))
        return diag_set(&res->diag, CL_ENOMEM, "out of memory setting up %d ranks", j->nranks);
    sim_links_init(&e->links);
    sim_blocks_pool_init(&e->blocks);
    if (o->sharing == SIM_SHARE_MAXMIN && sim_net_can_share(o->net) &&
        (sim_flow_create(&e->flows, flow_moved, e) ||
         !(e->ports = calloc((size_t)sim_net_flow_ids(o->net), sizeof *e->ports))))
        return diag_set(&res->diag, CL_ENOMEM, "out of memory setting up %d ranks", j->nranks);
    if (e->flows) {
        sim_flow_keep_idle(e->flows);
        sim_net_flow_mesh(o->net, &e->mesh_bw, &e->mesh_alpha);
    }
    e->lookahead = sim_stacks_cold(e->stacks) ? 2 : 0;
    e->prefetch_reqs = j->nranks > REQS_COLD_ABOVE;
    sim_sched_init(&e->sched);
    for (int i = 0; i < j->nranks; i++) {
        sim_rank *r = &e->ranks[i];
        r->eng = e;
        r->link_dst = -1;
        comm_world_init(&r->comm, &sim_ops, r, i, j->nranks, j->payload);
        /* Checks cost no modeled time: they run on every iteration. */
        r->run = (run_rank){.comm = &r->comm, .job = j, .check_all = true, .end = iteration_end,
                            .iter_time = &e->iter_time[(size_t)i * (size_t)j->iters],
                            .backend = r};
        match_queues_init(&r->mq);
        if (j->debug && debug_attach(&r->comm))
            return diag_set(&res->diag, CL_ENOMEM, "out of memory for --debug on rank %d", i);
        if ((err = sim_coro_init(&r->co, e->stacks, (size_t)i, rank_main, r)))
            return diag_set(&res->diag, err, "cannot set up rank %d: %s", i, cl_strerror(err));
    }
    return 0;
}

/* What the ranks forked and left running, killed as the run ended
 * (sim/fault.h), is said: the run itself stands, as on the measured
 * backends, whose ranks' groups are killed at the end too. */
static void report_forked(sim_engine *e)
{
    const sim_fault *f = &e->fault;
    FILE *out = e->job->report ? e->job->report : stderr;
    for (size_t i = 0; i < f->left && i < SIM_FAULT_SHOWN; i++) {
        int rank = 0;
        while (rank < e->n && &e->ranks[rank].co != f->shown[i].co)
            rank++;
        fprintf(out, "commlab: rank %d forked process %d, %s when the run ended: killed (what "
                "a rank forks ends with the run)\n", rank, (int)f->shown[i].pid,
                f->shown_running[i] ? "still running"
                                    : "which ended but left processes running in its group");
    }
    if (f->left > SIM_FAULT_SHOWN)
        fprintf(out, "commlab: and %zu more processes the ranks forked were left running: "
                "killed\n", f->left - SIM_FAULT_SHOWN);
}

static void engine_release(sim_engine *e)
{
    sim_event ev;
    while (e->q && sim_queue_pop(e->q, &ev))
        ;
    /* Messages still queued unexpected hold eager copies. */
    if (e->ranks)
        for (int i = 0; i < e->n; i++) {
            match_queues *mq = &e->ranks[i].mq;
            while (mq->unexpected.head) {
                match_link *l = mq->unexpected.head;
                match_remove(mq, l);
                sim_msg *m = (sim_msg *)((char *)l - offsetof(sim_msg, link));
                free(m->data);
            }
            match_queues_release(mq);
        }
    while (e->slabs) {
        slab *s = e->slabs;
        e->slabs = s->next;
        free(s);
    }
    if (e->ranks)
        for (int i = 0; i < e->n; i++) {
            /* a rank stopped where it stood kept its own */
            sim_blocks_release(&e->ranks[i].blocks, &e->blocks);
            debug_detach(&e->ranks[i].comm);
            run_lines_release(&e->ranks[i].run.held);
        }
    sim_links_release(&e->links);
    sim_flow_destroy(e->flows);
    free(e->ports);
    sim_queue_destroy(e->q);
    sim_stacks_destroy(e->stacks);
    free(e->ranks);
    free(e->iter_time);
}

int sim_run(const sim_opts *o, run_result *res, sim_stats *stats)
{
    const run_job *j = &o->job;
    memset(res, 0, sizeof *res);
    if (stats)
        memset(stats, 0, sizeof *stats);
    if (j->nranks < 1 || j->iters < 1 || j->warmup < 0 || !o->net || !j->fn)
        return diag_set(&res->diag, CL_EINVAL, "bad simulation options");
    if (sim_net_ranks(o->net) < j->nranks)
        return diag_set(&res->diag, CL_EINVAL, "the network has %d ranks, %d were asked for",
                        sim_net_ranks(o->net), j->nranks);
    sim_engine e = {.o = o, .job = j, .res = res, .n = j->nranks, .poll_head = -1,
                    .poll_tail = -1};
    int err = engine_init(&e, o, res);
    if (!err)
        err = sim_fault_begin(&e.fault, &e.sched, j->timeout, &res->diag);
    if (!err) {
        for (int i = 0; i < e.n && !e.aborting; i++)
            resume(&e, &e.ranks[i]);
        sim_event ev;
        for (;;) {
            /* Flows started or ended at one instant are solved before time
             * moves on (their ends may come before events already queued). */
            const sim_event *next;
            if (e.batch_open && (!(next = sim_queue_peek(e.q)) || next->time > e.batch_time)) {
                e.batch_open = false;
                sim_flow_batch_end(e.flows);
                continue;
            }
            if (e.poll_head >= 0 && (!(next = sim_queue_peek(e.q)) || next->time > e.now)) {
                polls_wake(&e);
                continue;
            }
            if (e.aborting || !sim_queue_pop(e.q, &ev))
                break;
            prefetch_soon(&e);
            e.now = ev.time;
            e.stats.events++;
            handle(&e, &ev);
        }
        if (!e.aborting && e.ndone < e.n)
            report_deadlock(&e);
        e.stats.end_time = e.now;
        if (e.aborting)
            unwind(&e);
        sim_fault_end(&e.fault);
        report_forked(&e);
        run_iter_times(e.iter_time, e.n, j->iters, res->iter_time);
        if (!e.aborting) {
            int median = run_median_iter(res->iter_time, j->iters);
            for (int i = 0; i < e.n; i++)
                run_rank_print_held(&e.ranks[i].run, median);
        }
        if (e.flows) {
            const sim_flow_stats *fs = sim_flow_stats_get(e.flows);
            e.stats.solves = fs->solves;
            e.stats.solve_s = fs->solve_s;
        }
        if (stats)
            *stats = e.stats;
    }
    engine_release(&e);
    return err;
}
