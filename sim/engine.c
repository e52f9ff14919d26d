/* engine.c - the discrete-event engine's run: set-up and release, the
 * event loop, a rank's life, failures and records.  engine_impl.h says
 * which file holds the rest. */
#include "sim/engine.h"

#include <assert.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/comm.h"
#include "core/debug.h"
#include "core/match.h"
#include "sim/engine_impl.h"

/* ---- failure ---- */

void engine__fail(sim_engine *e, int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    run_result_vfail(e->res, err, fmt, ap);
    va_end(ap);
    e->aborting = true;
}

/* ---- records ---- */

uint32_t engine__record_add(sim_engine *e, rec_op op, int rank, int peer, int tag,
                            uint64_t bytes, uint64_t msg, double posted, double started,
                            double finished, bool blocking)
{
    rec_log *log = e->job->records;
    cl_record r = {
        .posted = posted, .started = started, .finished = finished, .bytes = bytes,
        .msg = msg, .rank = rank, .peer = peer, .tag = tag,
        .iter = e->ranks[rank].run.iter, .op = (uint8_t)op, .blocking = blocking,
    };
    size_t n = log->n;
    if (rec_log_add(log, &r))
        engine__fail(e, CL_ENOMEM, "out of memory keeping records");
    return log->n > n && log->n <= UINT32_MAX ? (uint32_t)log->n : 0;
}

/* Out of line: engine__resolve inlines only the check for records. */
void engine__resolve_record(sim_engine *e, sim_req *r, double t)
{
    if (r->rec)
        e->job->records->v[r->rec - 1].finished = t;
    else if (engine__user_ctx(r->ctx))
        r->rec = engine__record_add(e, r->base.is_send ? REC_SEND : REC_RECV, r->owner,
                                    r->base.is_send ? r->peer : r->base.status.source, r->tag,
                                    r->bytes, r->msg_id, r->posted, r->started, t,
                                    r->base.blocking);
}

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
        engine__fail(e, CL_EPEER, "%s", why);
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
        engine__fail(e, rc, "rank %d: %s: %s (%s)", (int)(r - e->ranks), during,
                     cl_strerror(rc), cl_errname(rc));
    blocks_check(r, 0);
    sim_blocks_release(&r->blocks, &e->blocks);
    r->state = RANK_DONE;
    e->ndone++;
}

/* ---- the run ---- */

static sim_rank *rank_of(sim_coro *co)
{
    return (sim_rank *)(void *)((char *)co - offsetof(sim_rank, co));
}

/* Runs r until the rank running last (r, or one the CPU was handed to,
 * engine__block) yields back; a failure is that rank's. */
static void resume(sim_engine *e, sim_rank *r)
{
    uint8_t was = r->state;
    r->state = RANK_READY;
    int err = sim_coro_resume(&e->sched, &r->co);
    if (err) {
        sim_coro *back = sim_sched_last(&e->sched);
        engine__rank_stopped(e, back ? rank_of(back) : r, was, err);
    }
}

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
            engine__flow_begin(e, m);
        break;
    case EV_FLOW_END:
        if (ev->arg == m->gen && m->flow)
            engine__flow_end(e, m);
        break;
    default:
        assert(!"unknown event");
    }
}

/* Ranks above which the requests a waking rank reads come from memory
 * too (see prefetch_soon).  Below it they are still cached (10,000 ranks'
 * requests fit the cache), and fetching them is only more work a step. */
#define REQS_COLD_ABOVE 32768

/* Every line of the object at p, of size bytes, to be written. */
static inline void prefetch_lines(const void *p, size_t size)
{
    for (size_t at = 0; at < size; at += 64)
        __builtin_prefetch((const char *)p + at, 1);
}

/* Flows ending one after another (every flow of a contended all-to-all
 * ends within a few instants): the message two events ahead, and the two
 * requests of the one after the next, whose message was fetched an event
 * ago.  Without it each flow's end waited on three lines from memory:
 * engine__flow_end was 7.6 % of a 1,024-rank all-to-all, 1.1 % with it. */
static void prefetch_flow_ends(sim_engine *e)
{
    const sim_event *soon = sim_queue_soon(e->q, 2);
    if (soon && soon->type == EV_FLOW_END)
        prefetch_lines(soon->ptr, sizeof(sim_msg));
    if ((soon = sim_queue_soon(e->q, 1)) && soon->type == EV_FLOW_END) {
        const sim_msg *m = soon->ptr;
        if (m->sreq)
            prefetch_lines(m->sreq, sizeof(sim_req));
        if (m->rreq)
            prefetch_lines(m->rreq, sizeof(sim_req));
    }
}

/* Called after each pop: a rank about to run is likely cold, so fetch its
 * stack (without reading the rank, sim_stacks_prefetch) and its state's
 * hot lines (sim_rank's first fields) while this event runs.  Which rank:
 * with few, the next event's; with many (e->lookahead), whose lines come
 * from memory in longer than one event takes, the rank two events after
 * the next in the queue's sorted run (in lockstep; the next one's was
 * fetched two events ago).  Above REQS_COLD_ABOVE ranks also the requests
 * that the rank of the event after the next waits for: its state and stack
 * were fetched one event ago, so reading its wait set no longer misses.
 * Looking ahead pays only where those lines come from memory: the next
 * event's rank, fetched one event ahead, arrives late once an event takes
 * less time than a line from memory, while with few ranks (1,000: stacks
 * not cold, sim_stacks_cold) everything a step touches is still cached and
 * the look-ahead's extra read of the queue is pure cost.  When the next
 * event ends a flow, prefetch_flow_ends too. */
static void prefetch_soon(sim_engine *e)
{
    const sim_event *next = sim_queue_peek(e->q), *soon;
    if (next && next->type == EV_FLOW_END)
        prefetch_flow_ends(e);
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

/* Event ev just came out of the queue: the clock moves to it, and what
 * the ranks after it will touch is fetched meanwhile. */
static inline void took(sim_engine *e, const sim_event *ev)
{
    prefetch_soon(e);
    e->now = ev->time;
    e->stats.events++;
}

/* One switch a step instead of two: a rank that blocks runs the next
 * rank itself when the event loop would do nothing else first: no
 * message to price, no flow batch to solve, no deferred poll, no failure
 * or stop, and the next event a live wake-up of another rank (its own
 * goes through the loop, which resumes it after the switch back).  The
 * loop's order of events is kept exactly.  Measured on the 1,000-rank
 * ring (allreduce-ring --no-payload, 1 MiB, infiniband; AMD 2-core VM,
 * quiet, perf stat -r 10, three rounds taking turns): 204-206 ms of CPU
 * to 160-163, with 0.6 % more instructions (a switch costs mostly its
 * mispredicted return).  Not before every rank has started: the loop
 * starts them all at time 0 first. */
void engine__block(sim_engine *e, sim_rank *me)
{
    const sim_event *next;
    if (e->passing && !e->pending_head && !e->batch_open && e->poll_head < 0 && !e->aborting &&
        !e->sched.stop && (next = sim_queue_peek(e->q)) && next->type == EV_WAKE &&
        next->rank != (uint32_t)(me - e->ranks) &&
        next->arg == e->ranks[next->rank].wake_gen && sim_coro_may_pass(&me->co)) {
        sim_event ev;
        sim_queue_pop(e->q, &ev);
        took(e, &ev);
        sim_rank *r = &e->ranks[ev.rank];
        r->state = RANK_READY;
        sim_coro_pass(&e->sched, &me->co, &r->co);
        return;
    }
    sim_coro_yield(&e->sched, &me->co);
}

/* Starts every rank, then handles events until none is left or the run
 * fails.  Out of line so that the loop's registers are allocated for the
 * loop alone: inlined into sim_run, whose set-up and tear-down keep other
 * values live, it spilled and reloaded around every resume. */
__attribute__((noinline)) static void run_events(sim_engine *e)
{
    for (int i = 0; i < e->n && !e->aborting; i++)
        resume(e, &e->ranks[i]);
    e->passing = true;
    sim_event ev;
    for (;;) {
        /* Messages sent or matched at one instant are priced, and flows
         * started or ended at one instant solved, before time moves on
         * (their ends may come before events already queued). */
        const sim_event *next;
        if (e->pending_head && !e->aborting &&
            (!(next = sim_queue_peek(e->q)) || next->time > e->now)) {
            engine__price_pending(e);
            continue;
        }
        if (e->batch_open && (!(next = sim_queue_peek(e->q)) || next->time > e->batch_time)) {
            e->batch_open = false;
            sim_flow_batch_end(e->flows);
            continue;
        }
        if (e->poll_head >= 0 && (!(next = sim_queue_peek(e->q)) || next->time > e->now)) {
            engine__polls_wake(e);
            continue;
        }
        if (e->aborting || !sim_queue_pop(e->q, &ev))
            break;
        took(e, &ev);
        handle(e, &ev);
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
    sim_pool_init(&e->reqs, sizeof(sim_req));
    sim_pool_init(&e->msgs, sizeof(sim_msg));
    int err = sim_queue_create(&e->q);
    if (!err)
        err = sim_stacks_create(&e->stacks, (size_t)j->nranks, o->stack_bytes);
    e->ranks = calloc((size_t)j->nranks, sizeof *e->ranks);
    e->iter_time = calloc((size_t)j->nranks * (size_t)j->iters, sizeof(double));
    if (j->nranks > GUESS_FROM && (e->guess = malloc((size_t)j->nranks * sizeof *e->guess)))
        for (int i = 0; i < j->nranks; i++)
            e->guess[i] = (sim_guess){.peer = {-1, -1}};
    if (err || !e->ranks || !e->iter_time || (j->nranks > GUESS_FROM && !e->guess) ||
        run_result_init(res, j->iters))
        return diag_set(&res->diag, CL_ENOMEM, "out of memory setting up %d ranks", j->nranks);
    sim_links_init(&e->links);
    sim_blocks_pool_init(&e->blocks);
    if (o->sharing == SIM_SHARE_MAXMIN && sim_net_can_share(o->net) &&
        (sim_flow_create(&e->flows, engine__flow_moved, e) ||
         !(e->ports = calloc((size_t)sim_net_flow_ids(o->net), sizeof *e->ports))))
        return diag_set(&res->diag, CL_ENOMEM, "out of memory setting up %d ranks", j->nranks);
    if (e->flows) {
        sim_flow_keep_idle(e->flows);
        sim_net_flow_mesh(o->net, &e->mesh_bw, &e->mesh_alpha);
    }
    e->defer = !e->flows && sim_net_posted_gaps(o->net);
    e->lookahead = sim_stacks_cold(e->stacks) ? 2 : 0;
    e->prefetch_reqs = j->nranks > REQS_COLD_ABOVE;
    sim_sched_init(&e->sched);
    for (int i = 0; i < j->nranks; i++) {
        sim_rank *r = &e->ranks[i];
        r->eng = e;
        r->link_dst = -1;
        comm_world_init(&r->comm, &engine__ops, r, i, j->nranks, j->payload);
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
                free(engine__msg_of(l)->data);
            }
            match_queues_release(mq);
        }
    sim_pool_release(&e->reqs);
    sim_pool_release(&e->msgs);
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
    free(e->guess);
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
        run_events(&e);
        if (!e.aborting && e.ndone < e.n)
            engine__report_deadlock(&e);
        e.stats.end_time = e.now;
        if (e.aborting)
            unwind(&e);
        sim_fault_end(&e.fault);
        engine__report_forked(&e);
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
