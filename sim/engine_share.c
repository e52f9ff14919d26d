/* engine_share.c - shared links (--sharing maxmin): a message's bytes as
 * a flow of sim/flow.h, lone flows priced on the spot, and their hand-over
 * to the solver (adopt). */
#include "sim/engine_impl.h"

#include <math.h>

#include "sim/flow.h"
#include "sim/net.h"

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

void engine__flow_event(sim_engine *e, sim_msg *m, uint32_t type, double t)
{
    m->gen = ++e->next_gen;
    sim_event ev = {.time = t, .type = type, .arg = m->gen, .ptr = m};
    if (sim_queue_push(e->q, &ev))
        engine__fail(e, CL_ENOMEM, "out of memory in the event queue");
}

/* sim/flow.h's callback: m's flow will end at end. */
void engine__flow_moved(void *ctx, sim_flow *f, double end)
{
    engine__flow_event(ctx, sim_flow_owner(f), EV_FLOW_END, end);
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
        engine__fail(e, CL_ERANGE, "the route from rank %d to rank %d crosses more than %d links, "
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
        engine__resolve(e, m->sreq, arrival);
        engine__resolve(e, m->rreq, arrival);
        engine__msg_free(e, m);
        return;
    }
    engine__resolve(e, m->sreq, end);
    if (m->rreq) {
        engine__resolve(e, m->rreq, arrival);
        engine__msg_free(e, m);
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
        if (!(m = engine__msg_new(e))) {
            engine__fail(e, CL_ENOMEM, "out of memory sharing a link");
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
        engine__fail(e, err, "cannot share the link of a message from rank %d to rank %d: %s",
                     m->src, m->dst, cl_strerror(err));
        return;
    }
    e->stats.adopted++;
    engine__flow_event(e, m, EV_FLOW_END, sim_flow_end(m->flow));
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
void engine__flow_begin(sim_engine *e, sim_msg *m)
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

/* engine__flow_begin's m meets other flows on its route (e->route_ids, n
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
        engine__fail(e, err, "cannot start the flow of a message from rank %d to rank %d: %s",
                     m->src, m->dst, cl_strerror(err));
        return;
    }
    for (int i = 0; i < n; i++)
        e->ports[ids[i]].flows++;
    double end = sim_flow_end(m->flow);
    if (isfinite(end))
        engine__flow_event(e, m, EV_FLOW_END, end);
}

/* The solver's flow of m has ended. */
void engine__flow_end(sim_engine *e, sim_msg *m)
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
