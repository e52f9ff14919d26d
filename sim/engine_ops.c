/* engine_ops.c - the operations table of a modeled rank (core/comm.h):
 * waits, the polling rules of cl_test, compute, and the calls that cost no
 * modeled time.  cl_isend and cl_irecv are engine_proto.c's. */
#include "sim/engine_impl.h"

#include <math.h>
#include <stdio.h>

#include "sim/blocks.h"
#include "sim/net.h"

/* ---- waits ---- */

/* Blocks until every request of the set is complete: at once when all are
 * settled and due, else after one wake-up (engine__resolve() or a time
 * event). */
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
            engine__wake_at(e, until, (int)(me - e->ranks));
        engine__block(e, me);
        me->wait_reqs = NULL;
        if (e->aborting)
            return CL_EPEER;
        if (call == WF_WAIT || call == WF_WAITALL)
            engine__record(e, REC_WAIT, (int)(me - e->ranks), -1, -1, 0, 0, me->wait_start,
                           me->wait_start, e->now, true);
    }
    for (int i = 0; i < n; i++)
        if (reqs[i]) {
            ((sim_req *)reqs[i])->waited = false;
            reqs[i]->done = true;
        }
    return 0;
}

/* ---- polling (cl_test) ---- */

/* me failed a test of req after a failed test of another request at
 * this instant: it sleeps until the instant is over (engine__polls_wake). */
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
void engine__polls_wake(sim_engine *e)
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
        engine__wake_at(e, r->poll_dry ? e->now : t, (int)(r - e->ranks));
    }
    e->poll_tail = -1;
}

/* Not done yet.  Polling costs no virtual time, so what a failed test
 * tells the rank changes only when another rank acts or time moves on:
 *  - its first failed test at an instant returns at once: a rank that
 *    goes on computing (progressing a collective between slices of its
 *    work, as DDP's buckets do) loses no time to having looked;
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
    return 0;
}

/* ---- the rest of the table ---- */

static void sim_release(cl_comm *c, cl_request *req)
{
    sim_rank *me = c->backend;
    if (me->poll_req == req)
        me->poll_req = NULL;
    engine__req_free(me->eng, (sim_req *)req);
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
    engine__wake_at(e, e->now + seconds, rank);
    me->state = RANK_COMPUTING;
    engine__block(e, me);
    if (e->aborting)
        return CL_EPEER;
    engine__record(e, REC_COMPUTE, rank, -1, -1, 0, 0, start, start, e->now, true);
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
        engine__fail(me->eng, CL_ENOMEM, "rank %d: out of memory allocating %zu bytes",
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
    engine__fail(me->eng, CL_ECHECK, "rank %d: data check failed: %s",
                 (int)(me - me->eng->ranks), msg);
}

static void sim_misuse(cl_comm *c, const char *msg)
{
    sim_rank *me = c->backend;
    engine__fail(me->eng, CL_ECHECK, "rank %d: misuse: %s", (int)(me - me->eng->ranks), msg);
}

static void sim_span(cl_comm *c, rec_op op, double start, double end)
{
    sim_rank *me = c->backend;
    engine__record(me->eng, op, (int)(me - me->eng->ranks), -1, -1, 0, 0, start, start, end, true);
}

const comm_ops engine__ops = {
    .isend = engine__isend,
    .irecv = engine__irecv,
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
