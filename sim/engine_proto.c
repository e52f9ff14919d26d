/* engine_proto.c - cl_isend and cl_irecv on the model: matching (core/
 * match.h), the eager protocol (a send completes once injected; its
 * message waits unexpected with a copy of its payload) and rendezvous
 * (the bytes move once both ends are posted, after the handshake if it is
 * on).  Priced alone (engine_price.c) or as a flow (engine_share.c). */
#include "sim/engine_impl.h"

#include <string.h>

#include "core/units.h"

/* ---- matching ---- */

/* take's refusal: m does not fit r's buffer; fails the run. */
__attribute__((noinline)) static bool take_refused(sim_engine *e, sim_req *r, sim_msg *m)
{
    char a[UNITS_BUF], b[UNITS_BUF];
    r->base.err = CL_ETRUNC;
    engine__fail(e, CL_ETRUNC,
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

/* When the bytes of rendezvous message m may move, its receive posted at
 * recv_posted: once both ends are, after the request/clear-to-send round
 * trip (alpha each way) when the handshake is on. */
static inline double rendezvous_ready(const sim_engine *e, const sim_msg *m, double recv_posted,
                                      double alpha)
{
    if (e->o->handshake)
        return engine__later(m->posted + alpha, recv_posted) + alpha;
    return engine__later(m->posted, recv_posted);
}

/* rendezvous_match over shared links: the bytes are a flow from ready
 * (engine_share.c). */
static void rendezvous_shared(sim_engine *e, sim_req *recv, sim_msg *m, double ready)
{
    if (m->sbuf && recv->u.buf)
        memcpy(recv->u.buf, m->sbuf, (size_t)m->bytes);
    recv->started = m->sreq->started = ready;
    m->rreq = recv;
    if (ready > e->now)
        engine__flow_event(e, m, EV_FLOW_START, ready);
    else
        engine__flow_begin(e, m);
}

/* ---- pricing at the end of the instant ----
 *
 * A machine file with posted gaps (core/machine.h) spaces an eager message
 * by its posted gap when its receive was posted by the end of the instant
 * it was sent in, else by its gap.  At one instant the ranks run one after
 * another, so a sender that runs first cannot know at its send whether its
 * receiver will post in the same instant (a chunked transfer's receives
 * are posted at the instant its sends are).  So on such a file (e->defer)
 * every message but one to oneself is matched as it comes and priced when
 * the instant ends: defer_pricing queues it, and engine__price_pending
 * prices the queue in order, as the messages became priceable (an eager
 * one at its send, a rendezvous one at its match), so every link and
 * every duplex window sees them in the order it would without deferring.
 * Its requests stay unsettled until then (done_at INFINITY): a wait on one
 * blocks and wakes when it is priced, a test of one fails.  A message
 * whose receive comes later waits unexpected, priced, as any other. */

static void defer_pricing(sim_engine *e, sim_msg *m)
{
    m->pending = true;
    m->next_pending = NULL;
    if (e->pending_tail)
        e->pending_tail->next_pending = m;
    else
        e->pending_head = m;
    e->pending_tail = m;
}

/* Prices rendezvous message m, its receive recv posted at recv_posted and
 * its bytes already copied: the bytes move once both ends are posted (or
 * when the link frees up); both requests complete when they have landed. */
static void rendezvous_price(sim_engine *e, sim_req *recv, sim_msg *m, double recv_posted)
{
    double travel, inject, alpha;
    engine__cost(e, m->src, m->dst, m->bytes, false, &travel, &inject, &alpha);
    double start = engine__reserve(e, m->src, m->dst, rendezvous_ready(e, m, recv_posted, alpha),
                                   inject);
    travel = engine__travel_time(e, m, start, travel);
    recv->started = m->sreq->started = start;
    engine__resolve(e, m->sreq, start + travel);
    engine__resolve(e, recv, start + travel);
    engine__msg_free(e, m);
}

/* Both ends of a rendezvous message are posted: priced now, or when the
 * instant ends (e->defer). */
static void rendezvous_match(sim_engine *e, sim_req *recv, sim_msg *m, double recv_posted)
{
    double travel, inject, alpha = 0;
    if (engine__shared(e, m)) {
        /* A flow's time is the solver's: of the cost alone only the
         * handshake's alpha counts, so the network is asked only then. */
        if (e->o->handshake)
            engine__cost(e, m->src, m->dst, m->bytes, false, &travel, &inject, &alpha);
        rendezvous_shared(e, recv, m, rendezvous_ready(e, m, recv_posted, alpha));
        return;
    }
    if (m->sbuf && recv->u.buf && m->bytes)
        memcpy(recv->u.buf, m->sbuf, (size_t)m->bytes);
    if (e->defer && m->src != m->dst) {
        m->rreq = recv;
        defer_pricing(e, m);
        return;
    }
    rendezvous_price(e, recv, m, recv_posted);
}

/* Prices eager message m of send s, sent at m->posted, spaced by its
 * posted gap when its receive (m->rreq) was posted in time: the send
 * completes once injected, the message lands after its travel, in its
 * receive or, without one yet, unexpected. */
static void eager_price(sim_engine *e, sim_req *s, sim_msg *m)
{
    double travel, inject, alpha;
    sim_req *r = m->rreq;
    engine__cost(e, m->src, m->dst, m->bytes, r != NULL, &travel, &inject, &alpha);
    double start = engine__reserve(e, m->src, m->dst, m->posted, inject);
    travel = engine__travel_time(e, m, start, travel);
    m->started = s->started = start;
    m->arrival = start + travel;
    m->sreq = m->rreq = NULL;
    if (r) {
        r->started = start;
        engine__resolve(e, r, m->arrival);
        engine__msg_free(e, m);
    }
    engine__resolve(e, s, start + engine__sooner(inject, travel));
}

void engine__price_pending(sim_engine *e)
{
    sim_msg *m;
    while ((m = e->pending_head)) {
        e->pending_head = m->next_pending;
        m->pending = false;
        if (m->eager)
            eager_price(e, m->sreq, m);
        else
            rendezvous_price(e, m->rreq, m, m->rreq->posted);
    }
    e->pending_tail = NULL;
}

/* A receive takes an eager message that waited unexpected. */
static void eager_match(sim_engine *e, sim_req *recv, sim_msg *m)
{
    if (m->data && recv->u.buf)
        memcpy(recv->u.buf, m->data, (size_t)m->bytes);
    recv->started = engine__later(m->started, recv->posted); /* already here: starts when posted */
    m->rreq = recv;
    if (m->flow || m->pending) {
        /* Still in flight, or not priced yet: it lands at its flow's end
         * (engine__flow_end), or when its instant ends (eager_price). */
        free(m->data);
        m->data = NULL;
        return;
    }
    if (m->lone_until > e->now) {
        /* Its lone flow still moves: a hand-over reopens this receive. */
        m->sreq->u.recv = recv;
        m->sreq->lone_queued = false;
    }
    engine__resolve(e, recv, engine__later(m->arrival, e->now));
    engine__msg_free(e, m);
}

/* ---- cl_isend and cl_irecv (run on the rank's coroutine) ---- */

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
        sim_req *r = engine__req_of(l);
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

/* m, the message of send s from src: every field written, one by one, as
 * in req_init. */
static inline void msg_init(sim_engine *e, sim_msg *m, sim_req *s, int src, int dst, int tag,
                            uint32_t ctx, uint64_t bytes, bool in_pattern)
{
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
    m->in_pattern = in_pattern;
    m->pending = false;
}

/* The eager message m of send s, from buf, reaches its receiver's queues
 * now (eager_arrive): 1 with *recv its receive, or NULL when it waits
 * unexpected; 0 when the receive refused it, so the run is failing (m
 * freed: nothing more to price); CL_ENOMEM with m and s freed. */
static inline int eager_arrive_now(sim_engine *e, sim_req *s, sim_msg *m, const void *buf,
                                   sim_req **recv)
{
    int got = eager_arrive(e, m, buf, e->now, recv);
    if (got < 0) {
        engine__msg_free(e, m);
        engine__req_free(e, s);
        return CL_ENOMEM;
    }
    if (got && !*recv) {
        engine__msg_free(e, m);
        return 0;
    }
    return 1;
}

/* The eager message m of send s, from buf, over shared links: its
 * receive, if posted, completes when the flow has landed.  0, or
 * CL_ENOMEM with m and s freed. */
static inline int eager_shared(sim_engine *e, sim_req *s, sim_msg *m, const void *buf)
{
    sim_req *r;
    m->sreq = s;
    m->started = e->now;
    int ok = eager_arrive_now(e, s, m, buf, &r);
    if (ok <= 0)
        return ok;
    m->rreq = r;
    engine__flow_begin(e, m);
    return 0;
}

/* eager_alone's message when the instant's end prices it (e->defer):
 * matched now, its bytes copied or held, priced by eager_price. */
static int eager_deferred(sim_engine *e, sim_req *s, sim_msg *m, const void *buf)
{
    sim_req *r;
    int ok = eager_arrive_now(e, s, m, buf, &r);
    if (ok <= 0)
        return ok;
    m->sreq = s;
    m->rreq = r;
    defer_pricing(e, m);
    return 0;
}

/* The eager message m of send s, from buf, priced alone: the send
 * completes once injected, the message lands after its travel.  0, or
 * CL_ENOMEM with m and s freed. */
static inline int eager_alone(sim_engine *e, sim_req *s, sim_msg *m, const void *buf)
{
    if (e->defer && m->src != m->dst)
        return eager_deferred(e, s, m, buf);
    sim_req *r;
    double travel, inject, alpha;
    engine__cost(e, m->src, m->dst, m->bytes, false, &travel, &inject, &alpha);
    double start = engine__reserve(e, m->src, m->dst, e->now, inject);
    travel = engine__travel_time(e, m, start, travel);
    m->started = s->started = start;
    m->arrival = start + travel;
    int got = eager_arrive(e, m, buf, start, &r);
    if (got < 0) {
        engine__msg_free(e, m);
        engine__req_free(e, s);
        return CL_ENOMEM;
    }
    if (got) {
        if (r)
            engine__resolve(e, r, m->arrival);
        engine__msg_free(e, m);
    }
    engine__resolve(e, s, start + engine__sooner(inject, travel));
    return 0;
}

/* A rank posting to peers a fixed step apart (an all-to-all's loop) will
 * most likely post to the next ones too, with the same tag and ctx: the
 * lookups those posts will make are fetched ahead, a step of each chain
 * every GUESS_APART posts (core/match.h, match_prefetch), so that by the
 * time a post comes its lines are in the cache.  Sends look up the peer's
 * posted receives, from the peer's queues on; receives their own rank's
 * unexpected messages, whose queues are in the cache.  Measured on the
 * 1,024-rank linear all-to-all (AMD 2-core VM, CPU time, medians of 6 in
 * turn): a step every post 1.54-1.66 s, every 2 posts 1.42-1.50, every 3
 * 1.57.  Called only by a rank whose own queues are indexed (long), so a
 * pattern of short queues pays one test a post. */
#define GUESS_APART 2 /* posts between a step of a chain and the next */

static void guess_matches(sim_engine *e, int me, bool send, int peer, int tag, uint32_t ctx)
{
    sim_guess *g = &e->guess[me];
    int32_t stride = peer - g->peer[send];
    g->peer[send] = peer;
    if (stride == 0 || stride != g->stride[send] || peer < 0) {
        g->stride[send] = stride;
        return;
    }
    /* Step 3 for the next post, step 2 for the one GUESS_APART after it,
     * ... step 0, and GUESS_APART further on the peer's queues themselves
     * (a receive's are its own). */
    for (int step = 3; step >= (send ? -1 : 1); step--) {
        int64_t k = 1 + (int64_t)(3 - step) * GUESS_APART;
        int64_t next = ((int64_t)peer + k * stride) % e->n;
        if (next < 0)
            next += e->n;
        const match_queues *mq = &e->ranks[send ? next : me].mq;
        if (step < 0)
            __builtin_prefetch(mq);
        else
            match_prefetch(mq, send, send ? me : (int)next, tag, ctx, step);
    }
}

int engine__isend(cl_comm *c, const void *buf, size_t bytes, int dst, int tag, uint32_t ctx,
                  cl_request **out)
{
    sim_rank *me = c->backend;
    sim_engine *e = me->eng;
    if (e->aborting)
        return CL_EPEER;
    int src = (int)(me - e->ranks);
    if (e->guess && me->mq.ix)
        guess_matches(e, src, true, dst, tag, ctx);
    sim_req *s = engine__req_new(e);
    sim_msg *m = engine__msg_new(e);
    if (!s || !m) {
        if (s)
            engine__req_free(e, s);
        if (m)
            sim_pool_give(&e->msgs, m); /* not initialized: no payload to free */
        return CL_ENOMEM;
    }
    req_init(e, s, src, dst, tag, ctx, NULL, bytes, true);
    msg_init(e, m, s, src, dst, tag, ctx, bytes, me->run.in_pattern);
    if (engine__user_ctx(ctx))
        e->res->messages++;
    if (++e->stats.total_messages == e->o->max_messages)
        engine__fail(e, CL_ETIMEOUT, "stopped after %llu messages (the run's message budget)",
                     (unsigned long long)e->o->max_messages);
    if (m->eager && engine__shared(e, m)) {
        if (eager_shared(e, s, m, buf))
            return CL_ENOMEM;
    } else if (m->eager) {
        if (eager_alone(e, s, m, buf))
            return CL_ENOMEM;
    } else {
        m->sreq = s;
        m->sbuf = buf;
        match_link *l = match_arrive(&e->ranks[dst].mq, &m->link);
        if (l) {
            sim_req *r = engine__req_of(l);
            if (take(e, r, m))
                rendezvous_match(e, r, m, r->posted);
            else
                engine__msg_free(e, m);
        }
    }
    *out = &s->base;
    return 0;
}

int engine__irecv(cl_comm *c, void *buf, size_t bytes, int src, int tag, uint32_t ctx,
                  cl_request **out)
{
    sim_rank *me = c->backend;
    sim_engine *e = me->eng;
    if (e->aborting)
        return CL_EPEER;
    if (e->guess && me->mq.ix)
        guess_matches(e, (int)(me - e->ranks), false, src, tag, ctx);
    sim_req *r = engine__req_new(e);
    if (!r)
        return CL_ENOMEM;
    req_init(e, r, (int)(me - e->ranks), src, tag, ctx, buf, bytes, false);
    match_link *l = match_post_recv(&me->mq, &r->link);
    if (l) {
        sim_msg *m = engine__msg_of(l);
        if (!take(e, r, m))
            engine__msg_free(e, m);
        else if (m->eager)
            eager_match(e, r, m);
        else
            rendezvous_match(e, r, m, e->now);
    }
    *out = &r->base;
    return 0;
}
