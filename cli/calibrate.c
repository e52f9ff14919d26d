/* calibrate.c - measuring a transport and fitting its machine model
 * (cli/calibrate.h): the reference probe, the ping-pong in interleaved
 * rounds, the gap and the exchange; the machine file's default path; the
 * CSV that calibrate and compare print. */
#include "cli/calibrate.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/run_size.h"
#include "core/pattern.h"
#include "core/units.h"

/* ---- measuring ---- */

static int add_size(uint64_t *v, size_t *n, uint64_t s)
{
    for (size_t i = 0; i < *n; i++)
        if (v[i] == s)
            return 0;
    v[(*n)++] = s;
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The sizes: 1 B and 2^k, 1.5 x 2^k to 64 MiB (quick: 2^k to 4 MiB), plus
 * the eager limit so the forced break falls on a point.  v has room for
 * 128. */
static size_t plan_sizes(bool quick, uint64_t eager, uint64_t *v)
{
    size_t n = 0;
    uint64_t top = quick ? 4u << 20 : 64u << 20;
    for (uint64_t s = 1; s <= top; s *= 2) {
        add_size(v, &n, s);
        if (!quick && s >= 2 && s + s / 2 < top)
            add_size(v, &n, s + s / 2);
    }
    if (eager >= 1 && eager <= top)
        add_size(v, &n, eager);
    qsort(v, n, sizeof *v, cmp_u64);
    return n;
}

/* Rank 0's side of the streaming windows: a->microbatches messages of
 * a->bytes isent back to back from one buffer, then the answer. */
static int window_send(cl_comm *c, const cl_args *a, unsigned char *buf, unsigned char *ack)
{
    cl_request *req[CALIB_POSTED_WINDOW];
    for (int i = 0; i < a->microbatches; i++)
        CL_TRY(cl_isend(c, buf, a->bytes, 1, 0, &req[i]));
    CL_TRY(cl_waitall(c, a->microbatches, req, NULL));
    return cl_recv(c, ack, 0, 1, 1, NULL);
}

/* The streaming window: rank 0 sends (window_send); rank 1 takes the
 * messages one at a time with blocking receives into one buffer, as the
 * course's patterns do (a pipeline stage, a relay), so messages that
 * arrive before their receive pay the transport's unexpected-message path
 * as they do there; then it answers with one empty message, so rank 0's
 * clock spans the whole stream.  Not a course pattern: it checks no
 * data. */
static int window(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), w = a->microbatches;
    if (rank > 1 || w < 1 || w > CALIB_WINDOW)
        return 0;
    unsigned char *ack = cl_alloc(c, 1), *buf = cl_alloc(c, a->bytes);
    if (rank == 0)
        return window_send(c, a, buf, ack);
    for (int i = 0; i < w; i++)
        CL_TRY(cl_recv(c, buf, a->bytes, 0, 0, NULL));
    return cl_send(c, ack, 0, 0, 1);
}

/* The same window with every receive posted first (irecv, then one
 * waitall), as chunked does: each message finds its receive and lands in
 * its buffer at once, which is what the posted gap measures. */
static int window_posted(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), w = a->microbatches;
    if (rank > 1 || w < 1 || w > CALIB_POSTED_WINDOW)
        return 0;
    unsigned char *ack = cl_alloc(c, 1), *buf = cl_alloc(c, a->bytes);
    if (rank == 0)
        return window_send(c, a, buf, ack);
    cl_request *req[CALIB_POSTED_WINDOW];
    for (int i = 0; i < w; i++)
        CL_TRY(cl_irecv(c, buf, a->bytes, 0, 0, &req[i]));
    CL_TRY(cl_waitall(c, w, req, NULL));
    return cl_send(c, ack, 0, 0, 1);
}

static const pattern_info window_pattern = {
    .name = "calibrate-window", .fn = window,
    .summary = "a window of back-to-back messages and one answer", .min_ranks = 2,
    .time_divisor = 1,
};

static const pattern_info window_posted_pattern = {
    .name = "calibrate-window-posted", .fn = window_posted,
    .summary = "a window of back-to-back messages into receives posted first, and one answer",
    .min_ranks = 2, .time_divisor = 1,
};

/* One calibration under way: the runs' options, where they ran, and the
 * progress bar's steps. */
typedef struct calib_ctx {
    const calib_opts *o;
    run_opts ro;        /* the run being measured (pattern, iterations) */
    run_env env;
    size_t step, steps; /* progress: runs done, runs planned */
    bool first;         /* no run yet: the launcher's warnings may print */
    regime_gate *gate;  /* every run in the reference probe's regime */
    uint64_t bytes;     /* the size being measured, and */
    run_row row;        /* its run's row */
} calib_ctx;

static void progress(const calib_ctx *c, uint64_t bytes)
{
    if (!c->o->progress)
        return;
    char b[UNITS_BUF];
    size_t done = c->step < c->steps ? c->step : c->steps, n = c->steps;
    int width = 30, fill = (int)(width * done / n);
    fprintf(stderr, "\rcalibrate %s [%.*s%*s] %zu/%zu %-10s", c->o->backend, fill,
            "##############################", width - fill, "", done, n,
            done < n ? units_size_str(b, bytes) : "");
    if (done == n)
        fprintf(stderr, "\r%*s\r", 70, "");
    fflush(stderr);
}

/* c->ro's run of c->bytes, for regime_measure. */
static int run_once(void *arg)
{
    calib_ctx *c = arg;
    int status = run_size(&c->ro, &c->env, c->bytes, NULL, c->first, &c->row);
    c->first = false;
    return status;
}

/* One size of c->ro's pattern, iters timed iterations, in the gate's
 * regime, into *t: CLI_EXIT_OK, or the exit status after ending the
 * progress bar's line. */
static int measure(calib_ctx *c, uint64_t bytes, int iters, cl_stats *t)
{
    progress(c, bytes);
    c->ro.iters = iters;
    c->bytes = bytes;
    bool outside;
    int status = regime_measure(c->gate, &c->env, run_once, c, &outside);
    c->step++;
    if (status) {
        if (c->o->progress)
            fputc('\n', stderr);
        return run_exit_code(status, &c->env);
    }
    *t = c->row.t;
    return CLI_EXIT_OK;
}

/* Iterations for a run expected to take t seconds: about budget seconds. */
static int iters_for(double budget, double t, int lo, int hi)
{
    double it = budget / (t + 2e-6);
    return it < lo ? lo : it > hi ? hi : (int)it;
}

/* A size's time over rounds: the median of the rounds' medians, the least
 * minimum and the largest maximum, n the iterations of all rounds. */
static void combine_rounds(const cl_stats *round, int rounds, cl_stats *out)
{
    double med[CALIB_MAX_ROUNDS];
    cl_stats all = round[0];
    for (int k = 0; k < rounds; k++) {
        med[k] = round[k].median;
        all.min = fmin(all.min, round[k].min);
        all.max = fmax(all.max, round[k].max);
        if (k)
            all.n += round[k].n;
    }
    cl_stats m;
    stats_compute(med, (size_t)rounds, &m); /* finite medians: cannot fail */
    all.median = m.median;
    all.mean = m.mean;
    *out = all;
}

/* One thing calibrate times at one size: a pattern (and its window), the
 * time one of its iterations is guessed to take before it ran (0: the
 * previous task's, measured), and where its stats go. */
typedef struct calib_task {
    const pattern_info *pattern;
    int window;       /* the window pattern's messages; 0 for the others */
    uint64_t bytes;
    double guess;     /* seconds an iteration takes, before any round */
    double per_iter;  /* an iteration's seconds per unit of the time reported */
    double share;     /* of a ping-pong size's budget */
    cl_stats *out;
} calib_task;

/* Tasks t[0..k) in rounds: each round runs every task once, in order,
 * for about 1/rounds of its budget, so a slow spell of the machine lands
 * on a few runs of many tasks instead of on every run of a few; a task's
 * time is the median of its rounds' medians (combine_rounds). */
static int measure_tasks(calib_ctx *c, const calib_task *task, size_t k)
{
    const calib_opts *o = c->o;
    int rounds = o->quick ? CALIB_ROUNDS_QUICK : CALIB_ROUNDS;
    double budget = (o->quick ? 0.05 : 0.2) / rounds;
    int lo = CALIB_ROUND_ITERS, hi = (o->quick ? 500 : 1000) / rounds;
    cl_stats *t = calloc(k * (size_t)rounds, sizeof *t);
    if (!t)
        return cli_error("out of memory");
    int rc = CLI_EXIT_OK;
    for (int round = 0; round < rounds && !rc; round++) {
        for (size_t j = 0; j < k && !rc; j++) {
            const calib_task *tk = &task[j];
            double guess = round > 0 ? tk->per_iter * t[j * (size_t)rounds].median
                           : tk->guess > 0 ? tk->guess
                           : j > 0 ? tk->per_iter * t[(j - 1) * (size_t)rounds].median : 0;
            c->ro.pattern = tk->pattern;
            c->ro.args.microbatches = tk->window;
            rc = measure(c, tk->bytes, iters_for(tk->share * budget, guess, lo, hi),
                         &t[j * (size_t)rounds + (size_t)round]);
        }
    }
    for (size_t j = 0; j < k && !rc; j++)
        combine_rounds(&t[j * (size_t)rounds], rounds, task[j].out);
    free(t);
    return rc;
}

/* The ping-pong at the points idx[0..k) of r (increasing sizes), in
 * rounds.  A point measured before starts from its old time; a new one
 * from the previous point's. */
static int measure_points(calib_ctx *c, calib_result *r, const size_t *idx, size_t k)
{
    calib_task *task = calloc(k, sizeof *task);
    if (!task)
        return cli_error("out of memory");
    for (size_t j = 0; j < k; j++) {
        calib_point *p = &r->points[idx[j]];
        /* the round trip: twice the one-way time reported */
        task[j] = (calib_task){.pattern = pattern_find("pingpong"), .bytes = p->bytes,
                               .guess = p->t.n ? 2 * p->t.median : 0, .per_iter = 2,
                               .share = 1, .out = &p->t};
    }
    int rc = measure_tasks(c, task, k);
    for (size_t j = 0; j < k && !rc; j++)
        r->points[idx[j]].iters = (int)r->points[idx[j]].t.n;
    free(task);
    return rc;
}

/* Whether point p is streamed (its windows measured), and with its
 * receives posted first too (eager sizes: a rendezvous message waits for
 * its receive either way). */
static bool streamed(const calib_point *p)
{
    return p->bytes <= CALIB_STREAM_TOP;
}

static bool streamed_posted(const calib_point *p, uint64_t eager_limit)
{
    return streamed(p) && p->bytes <= eager_limit;
}

/* The gap's windows (1 and CALIB_WINDOW messages, and CALIB_WINDOW into
 * receives posted first up to the eager limit) at every point up to
 * CALIB_STREAM_TOP and the exchange's span at every point, in rounds like
 * the ping-pong, each about half a ping-pong size's budget.  Sets each
 * point's t1, tw and tp (NAN where not streamed) and x. */
static int measure_streams(calib_ctx *c, calib_result *r)
{
    calib_task *task = calloc(4 * r->n, sizeof *task);
    cl_stats *win = calloc(3 * r->n, sizeof *win);
    int rc = CLI_EXIT_OK;
    if (!task || !win) {
        free(task);
        free(win);
        return cli_error("out of memory");
    }
    size_t k = 0;
    for (size_t i = 0; i < r->n; i++) {
        calib_point *p = &r->points[i];
        for (int w = 0; w < 3 && streamed(p); w++) {
            if (w == 2 && !streamed_posted(p, c->o->eager_limit))
                break;
            int msgs = w == 2 ? CALIB_POSTED_WINDOW : w ? CALIB_WINDOW : 1;
            /* msgs one way, the answer back */
            task[k++] = (calib_task){.pattern = w == 2 ? &window_posted_pattern : &window_pattern,
                                     .window = msgs, .bytes = p->bytes,
                                     .guess = (msgs + 1) * p->t.median, .per_iter = 1,
                                     .share = 0.5, .out = &win[3 * i + (size_t)w]};
        }
        /* an exchange: one way each, at once */
        task[k++] = (calib_task){.pattern = pattern_find("exchange"), .bytes = p->bytes,
                                 .guess = p->t.median, .per_iter = 1, .share = 0.5,
                                 .out = &p->x};
    }
    rc = measure_tasks(c, task, k);
    for (size_t i = 0; i < r->n && !rc; i++) {
        calib_point *p = &r->points[i];
        p->t1 = streamed(p) ? win[3 * i].median : NAN;
        p->tw = streamed(p) ? win[3 * i + 1].median : NAN;
        p->tp = streamed_posted(p, c->o->eager_limit) ? win[3 * i + 2].median : NAN;
        p->gap = p->posted_gap = NAN;
    }
    free(task);
    free(win);
    return rc;
}

/* The machine segments of fit f over r's points: gap and gap_bandwidth
 * none (segment_gap sets them). */
static size_t segments_of(const calib_result *r, const fit_result *f, machine_segment *out)
{
    for (size_t s = 0; s < f->n; s++) {
        const fit_segment *g = &f->seg[s];
        out[s] = (machine_segment){
            .upto = r->points[g->first + g->n - 1].bytes, .alpha = g->alpha,
            .bandwidth = fit_bandwidth(g->beta), .r2 = g->r2,
            .max_residual_pct = 100 * g->max_residual, .gap = NAN,
            .gap_bandwidth = INFINITY, .posted_gap = NAN, .posted_gap_bandwidth = INFINITY,
        };
    }
    return f->n;
}

/* Segment f's gaps into s (core/fit's fit_gap over its points'),
 * and each point's: the posted gap pg = (T(posted window) - T(window of
 * 1)) / (P - 1) where the point has one; the gap from the window of
 * blocking receives, whose first message finds its receive posted (so is
 * spaced by pg, as the simulator spaces it) and the other W - 2 do not:
 * (T(window) - T(window of 1) - pg) / (W - 2), or (T(window) - T(window of
 * 1)) / (W - 1) without pg.  A segment gets each gap only where some of
 * its points have a positive one, and a posted gap only with a gap. */
static void segment_gap(calib_result *r, const fit_segment *f, machine_segment *s)
{
    double x[FIT_MAX_POINTS], gaps[FIT_MAX_POINTS], posted[FIT_MAX_POINTS];
    const int w = CALIB_WINDOW;
    for (size_t i = 0; i < f->n; i++) {
        calib_point *p = &r->points[f->first + i];
        x[i] = (double)p->bytes;
        posted[i] = (p->tp - p->t1) / (CALIB_POSTED_WINDOW - 1);
        gaps[i] = isfinite(posted[i]) ? (p->tw - p->t1 - posted[i]) / (w - 2)
                                      : (p->tw - p->t1) / (w - 1);
        p->gap = isfinite(gaps[i]) ? gaps[i] : NAN;
        p->posted_gap = isfinite(posted[i]) ? posted[i] : NAN;
    }
    fit_segment g;
    s->gap = s->posted_gap = NAN;
    s->gap_bandwidth = s->posted_gap_bandwidth = INFINITY;
    if (fit_gap(x, gaps, f->n, &g) > 0) {
        s->gap = g.alpha;
        s->gap_bandwidth = fit_bandwidth(g.beta);
        if (fit_gap(x, posted, f->n, &g) > 0) {
            s->posted_gap = g.alpha;
            s->posted_gap_bandwidth = fit_bandwidth(g.beta);
        }
    }
}

static void segment_range(char *buf, size_t len, const calib_result *r, const fit_segment *f)
{
    char a[UNITS_BUF], b[UNITS_BUF];
    snprintf(buf, len, "%s..%s", units_size_str(a, r->points[f->first].bytes),
             units_size_str(b, r->points[f->first + f->n - 1].bytes));
}

/* Fits the ping-pong's medians into r->fit.  A segment that is not fit to
 * be written (fit_segment_usable) has its points measured again, up to
 * CALIB_ATTEMPTS measurements in all.  Noise moves between measurements;
 * the transport's own shape does not: when two measurements in a row agree
 * within CALIB_AGREE at every point of such a segment, it is kept as
 * measured, with a warning (its residuals are in the file).  CLI_EXIT_OK,
 * or the exit status after saying which segment could not be fitted. */
static int fit_pingpong(calib_ctx *c, calib_result *r)
{
    double x[128], y[128], prev[128], brk = (double)c->o->eager_limit;
    fit_opts fo = FIT_OPTS_DEFAULT;
    bool agree = false; /* the last measurement agreed with the one before */
    for (int attempt = 1;; attempt++) {
        for (size_t i = 0; i < r->n; i++) {
            x[i] = (double)r->points[i].bytes;
            y[i] = r->points[i].t.median;
        }
        cl_diag d = {{0}};
        if (fit_piecewise(x, y, r->n, &brk, 1, &fo, &r->fit, &d))
            return cli_error("calibrate: the fit failed: %s", d.msg);
        size_t idx[128], k = 0;
        const fit_segment *bad = NULL;
        for (size_t s = 0; s < r->fit.n; s++) {
            const fit_segment *f = &r->fit.seg[s];
            if (fit_segment_usable(f))
                continue;
            bad = bad ? bad : f;
            for (size_t i = 0; i < f->n; i++)
                idx[k++] = f->first + i;
        }
        if (!bad)
            return CLI_EXIT_OK;
        char range[80];
        segment_range(range, sizeof range, r, bad);
        if (c->o->progress)
            fputc('\n', stderr);
        if (agree) {
            fprintf(stderr, "commlab: calibrate: warning: segment %s fits a line poorly (R^2 "
                            "%.2f, a point %.1f %% off it), but two measurements agree within "
                            "%.0f %%: the transport's time is not a line there; kept as "
                            "measured\n", range, bad->r2, 100 * bad->max_residual,
                    100 * CALIB_AGREE);
            return CLI_EXIT_OK;
        }
        if (attempt == CALIB_ATTEMPTS && c->o->netlab && r->points[bad->first].bytes <
                                                              run_lab_burst(c->o->netlab)) {
            char burst[UNITS_BUF];
            fprintf(stderr, "commlab: calibrate: warning: segment %s fits a line poorly after "
                            "%d measurements (R^2 %.2f, a point %.1f %% off it): over a "
                            "netlab a message below a port's burst (%s) moves at once or at "
                            "the port's rate, as its token bucket holds; kept as measured, "
                            "its residuals in the file\n", range, CALIB_ATTEMPTS, bad->r2,
                    100 * bad->max_residual,
                    units_size_str(burst, (uint64_t)run_lab_burst(c->o->netlab)));
            return CLI_EXIT_OK;
        }
        if (attempt == CALIB_ATTEMPTS && c->o->strict) {
            cli_error("calibrate: segment %s cannot be fitted after %d measurements (R^2 "
                      "%.2f, a point %.1f %% off its line): the machine is too noisy now; "
                      "nothing written (--strict; calibrate again when it is quieter)",
                      range, CALIB_ATTEMPTS, bad->r2, 100 * bad->max_residual);
            return CLI_EXIT_FAILED;
        }
        if (attempt == CALIB_ATTEMPTS) {
            /* A busy machine, not the transport: no two measurements agreed.
             * A model of the noise is still a model the student can
             * compare against, and the warning and the residuals say what
             * it is worth; --strict refuses it. */
            fprintf(stderr, "commlab: calibrate: warning: segment %s fits a line poorly after "
                            "%d measurements that did not agree (R^2 %.2f, a point %.1f %% off "
                            "it): the machine was too busy for a line there; kept as last "
                            "measured, its residuals in the file (calibrate again when it is "
                            "quieter, or use --strict to refuse such a fit)\n",
                    range, CALIB_ATTEMPTS, bad->r2, 100 * bad->max_residual);
            return CLI_EXIT_OK;
        }
        fprintf(stderr, "commlab: calibrate: segment %s cannot be fitted (R^2 %.2f, a point "
                        "%.1f %% off its line): measuring its %zu size%s again\n",
                range, bad->r2, 100 * bad->max_residual, k, k == 1 ? "" : "s");
        for (size_t j = 0; j < k; j++)
            prev[j] = r->points[idx[j]].t.median;
        c->steps += k * (size_t)(c->o->quick ? CALIB_ROUNDS_QUICK : CALIB_ROUNDS);
        int rc = measure_points(c, r, idx, k);
        if (rc)
            return rc;
        agree = true;
        for (size_t j = 0; j < k; j++)
            agree = agree && fabs(r->points[idx[j]].t.median - prev[j]) <= CALIB_AGREE * prev[j];
    }
}

_Static_assert(CALIB_ROUNDS <= CALIB_MAX_ROUNDS && CALIB_ROUNDS_QUICK <= CALIB_MAX_ROUNDS &&
                   CALIB_PROBE_ROUNDS <= CALIB_MAX_ROUNDS,
               "combine_rounds holds CALIB_MAX_ROUNDS");

int calibrate_probe(const run_opts *base, run_env *env, machine_ref ref[CALIB_NREF])
{
    static const uint64_t bytes[CALIB_NREF] = {CALIB_REF_SMALL, CALIB_REF_LARGE};
    static const int iters[CALIB_NREF] = {300, 30};
    run_opts ro = regime_probe_opts(base); /* the gate's probe is this one, shorter */
    cl_stats t[CALIB_NREF][CALIB_PROBE_ROUNDS];
    for (int round = 0; round < CALIB_PROBE_ROUNDS; round++)
        for (int i = 0; i < CALIB_NREF; i++) {
            ro.iters = iters[i];
            run_row row;
            int status = run_size(&ro, env, bytes[i], NULL, false, &row);
            if (status)
                return run_exit_code(status, env);
            t[i][round] = row.t;
        }
    for (int i = 0; i < CALIB_NREF; i++) {
        cl_stats all;
        combine_rounds(t[i], CALIB_PROBE_ROUNDS, &all);
        ref[i] = (machine_ref){bytes[i], all.median};
    }
    return CLI_EXIT_OK;
}

int calibrate_measure(const calib_opts *o, calib_result *r)
{
    memset(r, 0, sizeof *r);
    uint64_t sizes[128];
    size_t n = plan_sizes(o->quick, o->eager_limit, sizes);
    r->points = calloc(n, sizeof *r->points);
    if (!r->points)
        return cli_error("out of memory");
    size_t windows = 0, idx[128];
    for (size_t i = 0; i < n; i++) {
        calib_point *p = &r->points[i];
        *p = (calib_point){.bytes = sizes[i], .t1 = NAN, .tw = NAN, .tp = NAN, .gap = NAN,
                           .posted_gap = NAN};
        windows += streamed(p) ? 2u + streamed_posted(p, o->eager_limit) : 0u;
        idx[i] = i;
    }
    r->n = n;
    calib_ctx c = {
        .o = o, .first = true,
        .ro = {.backend = o->backend, .be = o->be, .ranks = 2, .warmup = 2,
               .eager_limit = o->eager_limit, .real.bind = o->bind, .real.copy = RUN_COPY_AUTO,
               .real.listen = o->listen, .real.provider = o->provider, .real.netlab = o->netlab,
               .real.lab = o->lab, .real.deadlock_timeout = 5.0, .timeout = RUN_TIMEOUT_DEFAULT,
               .real.cache = o->cache},
        .steps = (2 * n + windows) * (size_t)(o->quick ? CALIB_ROUNDS_QUICK : CALIB_ROUNDS),
    };
    /* The regime: the reference probe first (its runs are not on the bar),
     * taken again while the probes after it say it caught a passing one. */
    machine *m = &r->m;
    int rc;
    for (int tries = 1;; tries++) {
        bool prevails;
        if ((rc = calibrate_probe(&c.ro, &c.env, m->ref)))
            return rc;
        r->gate = regime_gate_of(&c.ro, m->ref[0].time, REGIME_TOL_PCT, o->regime_wait);
        if ((rc = regime_confirm(&r->gate, &c.env, &prevails)))
            return run_exit_code(rc, &c.env);
        if (prevails || tries == CALIB_REF_TRIES)
            break;
        r->passing[r->npassing++] = m->ref[0].time;
    }
    m->nref = CALIB_NREF;
    c.first = false;
    c.gate = &r->gate;
    if ((rc = measure_points(&c, r, idx, n)) || (rc = fit_pingpong(&c, r)))
        return rc;
    if ((rc = measure_streams(&c, r)))
        return rc;
    c.step = c.steps;
    progress(&c, 0);

    double x[128], yx[128], brk = (double)o->eager_limit;
    for (size_t i = 0; i < r->n; i++) {
        x[i] = (double)r->points[i].bytes;
        yx[i] = r->points[i].x.median;
    }
    fit_opts fo = FIT_OPTS_DEFAULT;
    cl_diag d = {{0}};
    if (fit_piecewise(x, yx, r->n, &brk, 1, &fo, &r->duplex, &d))
        return cli_error("calibrate: the fit failed: %s", d.msg);

    calibrate_hostname(m->host, sizeof m->host);
    snprintf(m->backend, sizeof m->backend, "%s", o->backend);
    if ((rc = calibrate_provider(o->be, o->provider, m->provider, sizeof m->provider)))
        return rc;
    m->eager_limit = o->eager_limit;
    m->netlab = o->netlab;
    m->cache = o->cache;
    m->cache_recorded = true;
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(m->date, sizeof m->date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    int rounds = o->quick ? CALIB_ROUNDS_QUICK : CALIB_ROUNDS;
    snprintf(m->method, sizeof m->method,
             "pingpong, 2 ranks%s: one-way = half the round trip, median of %d rounds' "
             "medians; piecewise fit, relative residuals; gaps: windows of %d and 1 up "
             "to %u MiB, posted: %d into receives posted first; duplex: an exchange's "
             "span%s",
             o->bind ? " bound to cores" : "", rounds, CALIB_WINDOW, CALIB_STREAM_TOP >> 20,
             CALIB_POSTED_WINDOW, o->quick ? " (--quick)" : "");
    m->nseg = segments_of(r, &r->fit, m->seg);
    for (size_t s = 0; s < r->fit.n; s++)
        segment_gap(r, &r->fit.seg[s], &m->seg[s]);
    m->nduplex = segments_of(r, &r->duplex, m->duplex);
    return CLI_EXIT_OK;
}

void calibrate_release(calib_result *r)
{
    free(r->points);
    r->points = NULL;
    r->n = 0;
}

void calibrate_hostname(char *buf, size_t len)
{
    if (gethostname(buf, len) != 0 || !*buf)
        snprintf(buf, len, "localhost");
    buf[len - 1] = 0;
}

int calibrate_check_netlab(double netlab_Bps, const char *listen)
{
    if (netlab_Bps > 0 && listen)
        return cli_error("--netlab gives every rank an address of its own: leave --listen "
                         "out");
    return 0;
}

int calibrate_provider(const backend_info *be, const char *asked, char *buf, size_t len)
{
    cl_diag d = {{0}};
    *buf = 0;
    if (!(be->takes & BOPT(BOPT_PROVIDER)))
        return 0;
    if (asked && strcmp(asked, "auto") != 0) {
        snprintf(buf, len, "%s", asked);
        return 0;
    }
    if (backend_provider_auto(buf, len, &d))
        return cli_diag(&d, CLI_EXIT_USAGE);
    return 0;
}

/* The folder of machine files: configs/machines beside the shipped
 * configs where this user may write (a checkout, or an install of their
 * own), else their own data folder (~/.local/share/commlab/machines): an
 * installed copy's share folder belongs to root.  0, or prints why not. */
static int machines_dir(char *dir, size_t len)
{
    char configs[1024];
    cl_diag d = {{0}};
    if (cli_data_path(configs, sizeof configs, "configs/tiers.yaml", &d))
        return cli_diag(&d, CLI_EXIT_USAGE);
    *strrchr(configs, '/') = 0;
    cli_textf(dir, len, "%s/machines", configs);
    if (access(dir, W_OK) == 0 || (errno == ENOENT && access(configs, W_OK) == 0))
        return 0;
    if (!cli_user_dir(dir, len, "XDG_DATA_HOME", ".local/share"))
        return cli_error("'%s' is not writable and there is no HOME for a folder of your own: "
                         "give the machine file's path with --out", dir);
    size_t n = strlen(dir);
    cli_textf(dir + n, len - n, "/machines");
    return 0;
}

int calibrate_default_path(char *buf, size_t len, const char *backend, const char *provider,
                           double netlab_Bps)
{
    char tiers[1024], host[256], lab[48] = "";
    int rc = machines_dir(tiers, sizeof tiers);
    if (rc)
        return rc;
    calibrate_hostname(host, sizeof host);
    for (char *p = host; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '.' || *p == '_' || *p == '-'))
            *p = '-';
    if (netlab_Bps > 0) {
        /* "1 Gbit/s" -> "-netlab-1gbit" */
        char rate[UNITS_BUF];
        units_rate_str(rate, netlab_Bps);
        size_t n = (size_t)snprintf(lab, sizeof lab, "-netlab-");
        for (const char *p = rate; *p && *p != '/' && n + 1 < sizeof lab; p++)
            if (*p != ' ')
                lab[n++] = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
        lab[n] = 0;
    }
    bool rdma = provider && *provider;
    if ((size_t)snprintf(buf, len, "%s/%s-%s%s%s%s.yaml", tiers, host, backend,
                         rdma ? "-" : "", rdma ? provider : "", lab) >= len)
        return cli_error("the machine file's path is too long: set COMMLAB_HOME or use --out");
    return 0;
}

/* ---- the CSV shared with compare ---- */

double compare_error_pct(const compare_row *r)
{
    return 100.0 * (r->modeled - r->measured.median) / r->measured.median;
}

void compare_print_csv(FILE *f, const char *pattern, const char *backend, int ranks,
                       uint64_t eager_limit, const char *note, const compare_row *rows,
                       size_t n, const compare_row *curve, size_t ncurve)
{
    char host[256];
    calibrate_hostname(host, sizeof host);
    fprintf(f, "# commlab-plot: compare\n# title: %s, %s, %d ranks, host %s\n", pattern,
            backend, ranks, host);
    if (eager_limit) /* where the protocol changes: the figure marks it */
        fprintf(f, "# eager_limit_bytes: %llu\n", (unsigned long long)eager_limit);
    if (note)
        fprintf(f, "# note: %s\n", note);
    fputs("pattern,backend,ranks,bytes,modeled_s,measured_median_s,measured_min_s,"
          "measured_max_s,error_pct,measured_q1_s,measured_q3_s\n", f);
    for (size_t i = 0; i < n; i++) {
        const cl_stats *m = &rows[i].measured;
        fprintf(f, "%s,%s,%d,%llu,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g\n", pattern, backend,
                ranks, (unsigned long long)rows[i].bytes, rows[i].modeled, m->median, m->min,
                m->max, compare_error_pct(&rows[i]), m->q1, m->q3);
    }
    for (size_t i = 0; i < ncurve; i++)
        fprintf(f, "%s,%s,%d,%llu,%.6g,,,,,,\n", pattern, backend, ranks,
                (unsigned long long)curve[i].bytes, curve[i].modeled);
}

size_t compare_curve_sizes(const uint64_t *sizes, size_t n, uint64_t out[COMPARE_CURVE_MAX])
{
    if (n == 0)
        return 0;
    uint64_t lo = sizes[0], hi = sizes[0];
    for (size_t i = 1; i < n; i++) {
        lo = sizes[i] < lo ? sizes[i] : lo;
        hi = sizes[i] > hi ? sizes[i] : hi;
    }
    size_t m = 0;
    uint64_t last = 0;
    for (int k = 1; m < COMPARE_CURVE_MAX; k++) {
        uint64_t s = (uint64_t)llround((double)lo * exp2((double)k / COMPARE_CURVE_STEPS));
        if (s >= hi)
            break;
        bool measured = false;
        for (size_t i = 0; i < n && !measured; i++)
            measured = sizes[i] == s;
        if (s != last && !measured)
            out[m++] = s;
        last = s;
    }
    return m;
}
