/* calibrate.c - measuring a transport and fitting its machine model
 * (cli/calibrate.h): the reference probe, the ping-pong in interleaved
 * rounds, the gap and the exchange; the machine file's default path; the
 * CSV that calibrate and compare print. */
#include "cli/calibrate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/run_size.h"
#include "core/pattern.h"
#include "core/units.h"
#include "real/rdma.h"

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

/* The streaming window: rank 0 isends a->microbatches messages of a->bytes
 * back to back from one buffer; rank 1 takes them one at a time with
 * blocking receives into one buffer, as the course's patterns do (a
 * pipeline stage, a relay), so messages that arrive before their receive
 * pay the transport's unexpected-message path as they do there; then it
 * answers with one empty message, so rank 0's clock spans the whole
 * stream.  Not a course pattern: it checks no data. */
static int window(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), w = a->microbatches;
    cl_request *req[CALIB_WINDOW];
    if (rank > 1 || w < 1 || w > CALIB_WINDOW)
        return 0;
    unsigned char *ack = cl_alloc(c, 1), *buf = cl_alloc(c, a->bytes);
    if (rank == 0) {
        for (int i = 0; i < w; i++)
            CL_TRY(cl_isend(c, buf, a->bytes, 1, 0, &req[i]));
        CL_TRY(cl_waitall(c, w, req, NULL));
        return cl_recv(c, ack, 0, 1, 1, NULL);
    }
    for (int i = 0; i < w; i++)
        CL_TRY(cl_recv(c, buf, a->bytes, 0, 0, NULL));
    return cl_send(c, ack, 0, 0, 1);
}

static const pattern_info window_pattern = {
    "calibrate-window", window, NULL, "a window of back-to-back messages and one answer", 2,
    1, NULL,
};

static void progress(const calib_opts *o, size_t done, size_t n, uint64_t bytes)
{
    if (!o->progress)
        return;
    char b[UNITS_BUF];
    int width = 30, fill = (int)(width * done / n);
    fprintf(stderr, "\rcalibrate %s [%.*s%*s] %zu/%zu %-10s", o->backend, fill,
            "##############################", width - fill, "", done, n,
            done < n ? units_size_str(b, bytes) : "");
    if (done == n)
        fprintf(stderr, "\r%*s\r", 70, "");
    fflush(stderr);
}

/* One size of ro's pattern, measured into *t: CLI_EXIT_OK, or the exit
 * status after ending the progress bar's line. */
static int measure(const calib_opts *o, const run_opts *ro, run_env *env, uint64_t bytes,
                   bool first, cl_stats *t)
{
    run_row row;
    int status = run_size(ro, env, bytes, NULL, first, &row);
    if (status) {
        if (o->progress)
            fputc('\n', stderr);
        return run_exit_code(status, env);
    }
    *t = row.t;
    return CLI_EXIT_OK;
}

/* Iterations for a run expected to take t seconds: about budget seconds. */
static int iters_for(double budget, double t, int lo, int hi)
{
    double it = budget / (t + 2e-6);
    return it < lo ? lo : it > hi ? hi : (int)it;
}

/* The gap of every point up to CALIB_STREAM_TOP: windows of 1 and of
 * CALIB_WINDOW messages, (T_W - T_1) / (W - 1).  n counts the progress
 * steps done so far of total.  CLI_EXIT_OK or the exit status. */
static int measure_gaps(const calib_opts *o, run_opts *ro, run_env *env, calib_result *r,
                        double budget, int lo, int hi, size_t total)
{
    ro->pattern = &window_pattern;
    for (size_t i = 0; i < r->n; i++) {
        calib_point *p = &r->points[i];
        p->t1 = p->tw = p->gap = NAN;
        if (p->bytes > CALIB_STREAM_TOP)
            continue;
        progress(o, r->n + i, total, p->bytes);
        double t[2];
        for (int k = 0; k < 2; k++) {
            int w = k ? CALIB_WINDOW : 1;
            ro->args.microbatches = w;
            ro->iters = iters_for(budget / 2, (w + 1) * p->t.median, lo, hi);
            cl_stats st;
            int rc = measure(o, ro, env, p->bytes, false, &st);
            if (rc)
                return rc;
            t[k] = st.median;
        }
        p->t1 = t[0];
        p->tw = t[1];
    }
    return CLI_EXIT_OK;
}

/* The exchange's span at every point, progress steps from `done` of total.
 * CLI_EXIT_OK or the exit status. */
static int measure_exchanges(const calib_opts *o, run_opts *ro, run_env *env, calib_result *r,
                             double budget, int lo, int hi, size_t done, size_t total)
{
    ro->pattern = pattern_find("exchange");
    for (size_t i = 0; i < r->n; i++) {
        calib_point *p = &r->points[i];
        progress(o, done + i, total, p->bytes);
        ro->iters = iters_for(budget / 2, p->t.median, lo, hi); /* an exchange: one way */
        int rc = measure(o, ro, env, p->bytes, false, &p->x);
        if (rc)
            return rc;
    }
    return CLI_EXIT_OK;
}

/* The machine segments of fit f over r's points: gap and gap_bandwidth
 * none (segment_gap sets them). */
static size_t segments_of(const calib_result *r, const fit_result *f, machine_segment *out)
{
    for (size_t s = 0; s < f->n; s++) {
        const fit_segment *g = &f->seg[s];
        out[s] = (machine_segment){
            .upto = r->points[g->first + g->n - 1].bytes, .alpha = g->alpha,
            .bandwidth = g->beta > 0 ? 1.0 / g->beta : INFINITY, .r2 = g->r2,
            .max_residual_pct = 100 * g->max_residual, .gap = NAN,
            .gap_bandwidth = INFINITY,
        };
    }
    return f->n;
}

/* Segment f's gap (core/fit's fit_gap over its points' windows) into s,
 * and each point's gap; none when no point of it has a positive one. */
static void segment_gap(calib_result *r, const fit_segment *f, machine_segment *s)
{
    double x[FIT_MAX_POINTS], t1[FIT_MAX_POINTS], tw[FIT_MAX_POINTS], gaps[FIT_MAX_POINTS];
    for (size_t i = 0; i < f->n; i++) {
        const calib_point *p = &r->points[f->first + i];
        x[i] = (double)p->bytes;
        t1[i] = p->t1;
        tw[i] = p->tw;
    }
    fit_segment g;
    s->gap = NAN;
    s->gap_bandwidth = INFINITY;
    if (fit_gap(x, t1, tw, f->n, CALIB_WINDOW, gaps, &g) > 0) {
        s->gap = g.alpha;
        s->gap_bandwidth = g.beta > 0 ? 1.0 / g.beta : INFINITY;
    }
    for (size_t i = 0; i < f->n; i++)
        r->points[f->first + i].gap = gaps[i];
}

int calibrate_measure(const calib_opts *o, calib_result *r)
{
    memset(r, 0, sizeof *r);
    uint64_t sizes[128];
    size_t n = plan_sizes(o->quick, o->eager_limit, sizes);
    r->points = calloc(n, sizeof *r->points);
    if (!r->points)
        return cli_error("out of memory");
    size_t streamed = 0;
    for (size_t i = 0; i < n; i++)
        streamed += sizes[i] <= CALIB_STREAM_TOP;
    /* A size runs about budget seconds: its iterations follow from the
     * previous size's time (plus a barrier's few microseconds). */
    const double budget = o->quick ? 0.05 : 0.2;
    const int lo = 10, hi = o->quick ? 500 : 1000;
    run_opts ro = {
        .pattern = pattern_find("pingpong"), .backend = o->backend, .be = o->be, .ranks = 2,
        .warmup = 2, .eager_limit = o->eager_limit, .bind = o->bind,
        .copy = SHM_COPY_AUTO, .listen = o->listen, .provider = o->provider,
        .deadlock_timeout = 5.0,
    };
    run_env env = {0};
    double prev = 0;
    for (size_t i = 0; i < n; i++) {
        progress(o, i, 2 * n + streamed, sizes[i]);
        ro.iters = iters_for(budget, 2 * prev, lo, hi);
        cl_stats t;
        int rc = measure(o, &ro, &env, sizes[i], i == 0, &t);
        if (rc)
            return rc;
        r->points[r->n++] = (calib_point){
            .bytes = sizes[i], .iters = ro.iters, .t = t, .t1 = NAN, .tw = NAN, .gap = NAN};
        prev = t.median;
    }
    size_t total = 2 * n + streamed;
    int rc = measure_gaps(o, &ro, &env, r, budget, lo, hi, total);
    if (!rc)
        rc = measure_exchanges(o, &ro, &env, r, budget, lo, hi, n + streamed, total);
    if (rc)
        return rc;
    progress(o, total, total, 0);

    double x[128], y[128], yx[128], brk = (double)o->eager_limit;
    for (size_t i = 0; i < r->n; i++) {
        x[i] = (double)r->points[i].bytes;
        y[i] = r->points[i].t.median;
        yx[i] = r->points[i].x.median;
    }
    fit_opts fo = FIT_OPTS_DEFAULT;
    cl_diag d = {{0}};
    if (fit_piecewise(x, y, r->n, &brk, 1, &fo, &r->fit, &d) ||
        fit_piecewise(x, yx, r->n, &brk, 1, &fo, &r->duplex, &d))
        return cli_error("calibrate: the fit failed: %s", d.msg);

    machine *m = &r->m;
    calibrate_hostname(m->host, sizeof m->host);
    snprintf(m->backend, sizeof m->backend, "%s", o->backend);
    if ((rc = calibrate_provider(o->be, o->provider, m->provider, sizeof m->provider)))
        return rc;
    m->eager_limit = o->eager_limit;
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(m->date, sizeof m->date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(m->method, sizeof m->method,
             "pingpong, 2 ranks%s: one-way = half the round trip, median of %d to %d "
             "iterations a size after 2 warm-up; piecewise fit, relative residuals; "
             "gap = (T(window of %d) - T(window of 1)) / %d up to %u MiB; "
             "duplex: an exchange's span%s",
             o->bind ? " bound to cores" : "", lo, hi, CALIB_WINDOW, CALIB_WINDOW - 1,
             CALIB_STREAM_TOP >> 20, o->quick ? " (--quick)" : "");
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
    if (rdma_provider_auto(buf, len, false, &d))
        return cli_diag(&d, CLI_EXIT_USAGE);
    return 0;
}

int calibrate_default_path(char *buf, size_t len, const char *backend, const char *provider)
{
    char tiers[1024], host[256];
    cl_diag d = {{0}};
    if (cli_data_path(tiers, sizeof tiers, "configs/tiers.yaml", &d))
        return cli_diag(&d, CLI_EXIT_USAGE);
    *strrchr(tiers, '/') = 0; /* .../configs */
    calibrate_hostname(host, sizeof host);
    for (char *p = host; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '.' || *p == '_' || *p == '-'))
            *p = '-';
    bool rdma = provider && *provider;
    if ((size_t)snprintf(buf, len, "%s/machines/%s-%s%s%s.yaml", tiers, host, backend,
                         rdma ? "-" : "", rdma ? provider : "") >= len)
        return cli_error("the machine file's path is too long: set COMMLAB_HOME or use --out");
    return 0;
}

/* ---- the CSV shared with compare ---- */

double compare_error_pct(const compare_row *r)
{
    return 100.0 * (r->modeled - r->measured.median) / r->measured.median;
}

void compare_print_csv(FILE *f, const char *pattern, const char *backend, int ranks,
                       const compare_row *rows, size_t n)
{
    char host[256];
    calibrate_hostname(host, sizeof host);
    fprintf(f, "# commlab-plot: compare\n# title: %s, %s, %d ranks, host %s\n", pattern,
            backend, ranks, host);
    fputs("pattern,backend,ranks,bytes,modeled_s,measured_median_s,measured_min_s,"
          "measured_max_s,error_pct\n", f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s,%s,%d,%llu,%.6g,%.6g,%.6g,%.6g,%.6g\n", pattern, backend, ranks,
                (unsigned long long)rows[i].bytes, rows[i].modeled, rows[i].measured.median,
                rows[i].measured.min, rows[i].measured.max, compare_error_pct(&rows[i]));
}
