/* run.c - the per-rank iteration driver, the iteration time, the row. */
#include "core/run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/comm.h"
#include "core/debug.h"
#include "core/sync.h"

const char *run_sync_name(run_sync s)
{
    return s == RUN_SYNC_BARRIER ? "barrier" : "window";
}

int run_result_init(run_result *res, int iters)
{
    size_t n = (size_t)(iters > 0 ? iters : 1);
    res->iters = iters;
    res->skewed = false;
    res->iter_time = calloc(n, sizeof(double));
    res->start_skew = calloc(n, sizeof(double));
    if (!res->iter_time || !res->start_skew) {
        run_result_release(res);
        return diag_set(&res->diag, CL_ENOMEM, "out of memory for %d iteration times", iters);
    }
    return 0;
}

bool run_result_vfail(run_result *res, int status, const char *fmt, va_list ap)
{
    if (res->status)
        return false;
    res->status = status;
    vsnprintf(res->diag.msg, sizeof res->diag.msg, fmt, ap);
    return true;
}

void run_result_release(run_result *res)
{
    free(res->iter_time);
    free(res->start_skew);
    res->iter_time = NULL;
    res->start_skew = NULL;
}

void run_lines_add(run_lines *l, const char *line)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 8;
        run_line *v = realloc(l->v, cap * sizeof *v);
        if (!v) {
            l->lost = true;
            return;
        }
        l->v = v;
        l->cap = cap;
    }
    char *text = strdup(line);
    if (!text) {
        l->lost = true;
        return;
    }
    l->v[l->n++] = (run_line){l->iter, text};
}

void run_lines_release(run_lines *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i].text);
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

/* Iteration i's time comes before iteration j's: earlier, or as early
 * and numbered lower (a total order on finite times). */
static bool iter_before(const double *t, int i, int j)
{
    return t[i] < t[j] || (t[i] == t[j] && i < j);
}

/* Iteration i lies strictly between lo and hi in time order (-1: no
 * bound). */
static bool iter_between(const double *t, int lo, int i, int hi)
{
    return (lo < 0 || iter_before(t, lo, i)) && (hi < 0 || iter_before(t, i, hi));
}

int run_median_iter(const double *t, int iters)
{
    /* Quickselect that moves nothing: the candidates are the iterations
     * strictly between lo and hi in time order (-1: no bound); each round
     * counts a pivot's place among all and drops it and one side.  No
     * memory, expected O(iters log iters) (the pivot is a pseudo-random
     * candidate); a run may time millions of round trips, so the plain
     * O(iters^2) count is too slow.  Each round drops at least the pivot,
     * so iters rounds always end it. */
    int want = (iters - 1) / 2, lo = -1, hi = -1;
    uint32_t seed = 2463534242u;
    for (int round = 0; round < iters; round++) {
        int candidates = 0;
        for (int i = 0; i < iters; i++)
            candidates += iter_between(t, lo, i, hi);
        if (!candidates)
            break;
        seed ^= seed << 13, seed ^= seed >> 17, seed ^= seed << 5;
        int skip = (int)(seed % (uint32_t)candidates), pivot = -1;
        for (int i = 0; i < iters && pivot < 0; i++)
            if (iter_between(t, lo, i, hi) && skip-- == 0)
                pivot = i;
        int place = 0;
        for (int i = 0; i < iters; i++)
            place += iter_before(t, i, pivot);
        if (place == want)
            return pivot;
        if (place < want)
            lo = pivot;
        else
            hi = pivot;
    }
    return 0; /* unreachable for finite times */
}

void run_rank_print_held(run_rank *r, int iter)
{
    cl_comm *c = r->comm;
    c->held = NULL;
    for (size_t i = 0; i < r->held.n; i++)
        if (r->held.v[i].iter == iter)
            c->ops->print(c, r->held.v[i].text);
    run_lines_release(&r->held);
}

/* The blocking call r never came back from, as a stalled record (comm.c
 * keeps what the call was), from the end of the rank's last record of the
 * iteration (when it made the call: a clock read per call would cost
 * measured latencies) to now.  Where the records are the driver's to
 * write: a measured run's launcher writes its ranks' from the waits they
 * publish (real/launch.c).  A record that cannot be kept is only a
 * figure's bar short: its error is not the run's. */
static void record_stalled(run_rank *r)
{
    const cl_comm *c = r->comm;
    const comm_call *call = &c->call;
    rec_log *log = r->job->records;
    if (!call->open || !log || r->records_elsewhere)
        return;
    double now = c->ops->now(c), since = now;
    /* Backwards: a rank's latest records are near the end.  The
     * iteration's own span, just written, is not a call. */
    for (size_t k = log->n; k-- > 0;)
        if (log->v[k].rank == c->rank && log->v[k].iter == r->iter &&
            log->v[k].op != REC_ITER) {
            since = log->v[k].finished;
            break;
        }
    cl_record made = {.bytes = call->bytes, .rank = c->rank, .peer = call->peer,
                      .tag = call->tag, .iter = r->iter, .op = call->op};
    (void)rec_log_stalled(log, &made, since, now);
}

/* The window way learns iteration i's spread of starts at the barrier of
 * iteration i + 1: only then are its times written.  end: the rank's end,
 * seconds after i's release. */
static void window_times(run_rank *r, int i, double end, const sync_spread *sp)
{
    if (i < 0)
        return;
    r->iter_time[i] = end - sp->first;
    if (r->iter_skew)
        r->iter_skew[i] = sp->last - sp->first;
}

/* After the window way's last iteration: the barrier that gives its start
 * skew (still the last iteration's, so the records of a run stay within
 * its iterations), then its times.  0, or the barrier's error with
 * *during saying so. */
static int window_finish(run_rank *r, sync_state *sync, double end, const char **during)
{
    sync_spread last;
    int err = sync_finish(r->comm, sync, &last);
    if (err) {
        record_stalled(r);
        *during = "the barrier after the last iteration failed";
        run_rank_print_held(r, 0);
        return err;
    }
    window_times(r, r->job->iters - 1, end, &last);
    return 0;
}

int run_rank_iterations(run_rank *r, const char **during)
{
    const run_job *j = r->job;
    cl_comm *c = r->comm;
    bool window = j->sync == RUN_SYNC_WINDOW && c->ops->wait_until;
    sync_state sync = {0};
    double end = 0; /* window: the last iteration's end, after its release */
    c->held = j->iters > 1 ? &r->held : NULL;
    if (window && !r->clock_shared) {
        int err = sync_clock_offset(c, &sync);
        if (err) {
            record_stalled(r);
            *during = "estimating the clock offsets between ranks failed";
            return err;
        }
    }
    r->returned = -j->warmup - 1;
    for (int it = -j->warmup; it < j->iters; it++) {
        r->iter = it;
        c->call.open = false;
        if (r->begin)
            r->begin(r);
        /* Everything the iteration needs is set before its barrier, so
         * nothing but the pattern runs between its start and its end. */
        cl_args a = j->args;
        a.iteration = it;
        c->printing = c->held ? it >= 0 : it == 0;
        r->held.iter = it;
        c->checking = run_checks(j, r->check_all, it);
        debug_iteration(c);
        c->refused[0] = 0;
        sync_spread prev;
        int err = window ? sync_start(c, &sync, &prev) : cl_barrier(c);
        if (err) {
            record_stalled(r);
            *during = "the barrier before an iteration failed";
            run_rank_print_held(r, 0);
            return err;
        }
        if (!window && c->ops->settle)
            c->ops->settle(c); /* the window way's is in sync_start */
        /* The start is read here, not by the wait that ended on the
         * release: leaving that spin (and the calls above) costs a rank
         * as much as a clock reading, the same on every rank, and it is
         * the driver's, not the pattern's. */
        c->printed = 0;
        double t0 = cl_now(c);
        r->in_pattern = true;
        err = j->fn(c, &a);
        r->in_pattern = false;
        r->returned = it;
        /* Formatting a line is not the pattern's communication, and the
         * model charges none: the rank's time in cl_printf comes off its
         * end (core/run.h). */
        double t1 = cl_now(c) - c->printed;
        if (r->end)
            err = r->end(r, err);
        if (c->ops->span)
            c->ops->span(c, REC_ITER, t0, t1);
        if (err) {
            record_stalled(r);
            /* A refused call's words say more than "invalid argument". */
            *during = err == CL_EINVAL && c->world->refused[0] ? c->world->refused
                                                              : "the pattern failed";
            run_rank_print_held(r, 0);
            return err;
        }
        if (window) {
            window_times(r, it - 1, end, &prev);
            sync.late = sync_since_release(&sync, t0);
            end = sync_since_release(&sync, t1);
        } else if (it >= 0) {
            r->iter_time[it] = t1 - t0;
        }
    }
    if (window) {
        int err = window_finish(r, &sync, end, during);
        if (err)
            return err;
    }
    r->iter = j->iters;
    c->held = NULL; /* lines after the iterations print at once */
    return 0;
}

bool run_checks(const run_job *j, bool check_all, int it)
{
    return check_all || it < 0 || (it == 0 && (!j->check_warmup || j->warmup == 0));
}

wf_state run_outside_state(int r_returned, int k, bool k_known)
{
    if (!k_known)
        return WF_BLOCKED;
    return r_returned >= k ? WF_DONE : WF_RUNNING;
}

void run_iter_times(const double *per_rank, int nranks, int iters, double *out)
{
    for (int i = 0; i < iters; i++) {
        double t = 0;
        for (int r = 0; r < nranks; r++) {
            double d = per_rank[(size_t)r * (size_t)iters + (size_t)i];
            if (d > t)
                t = d;
        }
        out[i] = t;
    }
}

int run_row_fill(run_row *row, run_result *res, const pattern_info *p, uint64_t bytes,
                 int runs)
{
    for (int i = 0; i < res->iters; i++)
        res->iter_time[i] /= p->time_divisor;
    int err = stats_compute(res->iter_time, (size_t)res->iters, &row->t);
    if (err)
        return err;
    row->skew = (cl_stats){0};
    if (res->skewed && (err = stats_compute(res->start_skew, (size_t)res->iters, &row->skew)))
        return err;
    row->bytes = bytes;
    row->messages = runs > 0 ? res->messages / (uint64_t)runs : 0;
    row->bandwidth = row->t.median > 0 ? (double)bytes / row->t.median : 0;
    return 0;
}
