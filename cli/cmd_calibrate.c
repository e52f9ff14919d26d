/* cmd_calibrate.c - `commlab calibrate`: measure ping-pong on a transport,
 * fit the piecewise alpha-beta model, write the machine file. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/calibrate.h"
#include "cli/cli.h"
#include "core/pattern.h"
#include "cli/run_size.h"
#include "core/json.h"
#include "core/table.h"
#include "core/units.h"
#include "real/rdma.h"

const char cmd_calibrate_usage[] =
    "usage: commlab calibrate --backend shm|tcp|rdma [options]\n"
    "\n"
    "Measures the one-way time of a blocking ping-pong (the pingpong pattern, 2\n"
    "ranks) from 1 B to 64 MiB, fits T(n) = alpha + n / bandwidth piecewise, and\n"
    "writes a machine file the simulator replays with `--model FILE`.  Then it\n"
    "measures the gap: how much each further message of a stream adds (LogGP's\n"
    "g + n G), from windows of 1 and 4 back-to-back messages up to 4 MiB, and\n"
    "fits it per segment; the simulator spaces a rank's back-to-back messages\n"
    "on a link by it.  Last it measures an exchange (chapter 02's pattern: both\n"
    "ranks send to and receive from the other at once) at every size and fits\n"
    "its time the same way: the duplex segments, which price a message that\n"
    "moves while one of its ranks moves another the opposite way.\n"
    "\n"
    "The fit: least squares on relative residuals (every size counts alike),\n"
    "alpha >= 0; segments always break at the eager limit (eager and rendezvous\n"
    "are different protocols), then a segment whose worst residual is above 5 %\n"
    "splits where two lines fit best, if that at least halves its squared\n"
    "residuals (3 points a side, 8 segments at most).  Each segment's alpha,\n"
    "bandwidth, R^2 (of the relative fit) and residuals are printed.\n"
    "\n"
    "  -b, --backend NAME       shm, tcp or rdma\n"
    "  -o, --out FILE           machine file to write (default\n"
    "                           configs/machines/<host>-<backend>.yaml; for rdma\n"
    "                           <host>-rdma-<provider>.yaml)\n"
    "      --eager-limit SIZE   the transport's eager limit while measuring, and the\n"
    "                           model's (default 64KiB)\n"
    "      --quick              1 B..4 MiB by factors of 2, 10 to 500 iterations of\n"
    "                           about 0.05 s a size: a few seconds instead of ten or more\n"
    "      --bind WHERE         core (the default) or none\n"
    "      --listen ADDR        tcp: the numeric address ranks listen on\n"
    "      --provider NAME      rdma: the libfabric provider (auto, tcp, verbs, ...);\n"
    "                           the file records the one it ran on\n"
    "      --csv                the points and the fit, in the schema of compare --csv\n"
    "      --json               segments and points as JSON\n"
    "  -h, --help               this text\n"
    "\n"
    "Sizes are 1 B and 2^k, 1.5 x 2^k up to 64 MiB; a size runs enough\n"
    "iterations (10 to 1000) to take about 0.2 s, after 2 warm-up ones; its time\n"
    "is their median.  The streaming windows run at the sizes up to 4 MiB with\n"
    "half that budget each.  A progress bar goes to stderr when it is a terminal.\n"
    "\n"
    "exit status: 0 ok, 2 bad usage, 4 a rank or transport failed\n"
    "\n"
    "examples:\n"
    "  commlab calibrate --backend shm\n"
    "  commlab calibrate --backend tcp --quick --out /tmp/tcp.yaml\n"
    "  commlab calibrate --backend rdma --provider tcp --quick\n"
    "  commlab run pingpong --model configs/machines/HOST-shm.yaml --sizes 8:4MiB:x8\n";

enum { OPT_EAGER = 256, OPT_QUICK, OPT_BIND, OPT_LISTEN, OPT_PROVIDER, OPT_CSV, OPT_JSON };

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
    .name = "calibrate-window", .fn = window,
    .summary = "a window of back-to-back messages and one answer", .min_ranks = 2,
    .time_divisor = 1,
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

/* ---- output ---- */

static void segment_range(char *buf, size_t len, const calib_result *r, const fit_segment *f)
{
    char a[UNITS_BUF], b[UNITS_BUF];
    snprintf(buf, len, "%s..%s", units_size_str(a, r->points[f->first].bytes),
             units_size_str(b, r->points[f->first + f->n - 1].bytes));
}

/* The fit's segments as a table; with gaps (the ping-pong's) the gap
 * columns too. */
static void print_segments(const calib_result *r, const fit_result *fit, bool gaps)
{
    const char *h[] = {"segment", "points", "alpha", "bandwidth", "R^2", "max residual",
                       "rms residual", "gap", "gap bandwidth"};
    table t;
    if (table_init(&t, gaps ? 9 : 7, h))
        return;
    for (size_t s = 0; s < fit->n; s++) {
        const fit_segment *f = &fit->seg[s];
        char range[80], al[UNITS_BUF], bw[UNITS_BUF];
        segment_range(range, sizeof range, r, f);
        table_add(&t, "%s", range);
        table_add(&t, "%zu", f->n);
        table_add(&t, "%s", units_time_digits(al, f->alpha, 4));
        table_add(&t, "%s", f->beta > 0 ? units_bandwidth_str(bw, 1.0 / f->beta) : "inf");
        table_add(&t, "%.4f", f->r2);
        table_add(&t, "%.1f %%", 100 * f->max_residual);
        table_add(&t, "%.1f %%", 100 * f->rms_residual);
        if (!gaps)
            continue;
        const machine_segment *m = &r->m.seg[s];
        if (isnan(m->gap)) {
            table_add(&t, "-");
            table_add(&t, "-");
        } else {
            table_add(&t, "%s", units_time_digits(al, m->gap, 4));
            table_add(&t, "%s", isinf(m->gap_bandwidth)
                                    ? "inf" : units_bandwidth_str(bw, m->gap_bandwidth));
        }
    }
    table_print(&t, stdout, 0);
    table_release(&t);
}

static void print_text(const calib_opts *o, const calib_result *r, const char *path)
{
    char a[UNITS_BUF], b[UNITS_BUF], e[UNITS_BUF];
    printf("calibrate %s on %s: pingpong between 2 ranks, %zu sizes %s..%s, eager limit %s\n\n",
           o->backend, r->m.host, r->n, units_size_str(a, r->points[0].bytes),
           units_size_str(b, r->points[r->n - 1].bytes), units_size_str(e, o->eager_limit));
    print_segments(r, &r->fit, true);
    printf("\ngap: each further message of a back-to-back stream adds gap + n / gap "
           "bandwidth (up to %u MiB)\n\n", CALIB_STREAM_TOP >> 20);
    printf("duplex: an exchange, both ranks sending to and receiving from the other at once\n\n");
    print_segments(r, &r->duplex, false);
    printf("\nmodel written to %s\n", path);
}

/* A fit's segments as a JSON array under key. */
static void json_segments(json_writer *w, const char *key, const calib_result *r,
                          const fit_result *fit, bool gaps)
{
    json_key(w, key);
    json_begin_array(w);
    for (size_t s = 0; s < fit->n; s++) {
        const fit_segment *f = &fit->seg[s];
        json_begin_object(w);
        json_kv_uint(w, "from_bytes", r->points[f->first].bytes);
        json_kv_uint(w, "upto_bytes", r->points[f->first + f->n - 1].bytes);
        json_kv_uint(w, "points", f->n);
        json_kv_number(w, "alpha_s", f->alpha);
        if (f->beta > 0)
            json_kv_number(w, "bandwidth_Bps", 1.0 / f->beta);
        else
            json_kv_string(w, "bandwidth_Bps", "inf");
        json_kv_number(w, "r2", f->r2);
        json_kv_number(w, "max_residual_pct", 100 * f->max_residual);
        json_kv_number(w, "rms_residual_pct", 100 * f->rms_residual);
        const machine_segment *m = &r->m.seg[s];
        if (gaps && !isnan(m->gap)) {
            json_kv_number(w, "gap_s", m->gap);
            if (isinf(m->gap_bandwidth))
                json_kv_string(w, "gap_bandwidth_Bps", "inf");
            else
                json_kv_number(w, "gap_bandwidth_Bps", m->gap_bandwidth);
        }
        json_end_object(w);
    }
    json_end_array(w);
}

static void json_stats(json_writer *w, const char *key, const cl_stats *t)
{
    json_key(w, key);
    json_begin_object(w);
    json_kv_number(w, "median", t->median);
    json_kv_number(w, "min", t->min);
    json_kv_number(w, "max", t->max);
    json_end_object(w);
}

static void print_json(const calib_opts *o, const calib_result *r, const char *path)
{
    json_writer w;
    json_init(&w, stdout, true);
    json_begin_object(&w);
    json_kv_string(&w, "command", "calibrate");
    json_kv_string(&w, "pattern", "pingpong");
    json_kv_string(&w, "backend", o->backend);
    if (*r->m.provider)
        json_kv_string(&w, "provider", r->m.provider);
    json_kv_uint(&w, "ranks", 2);
    json_kv_string(&w, "host", r->m.host);
    json_kv_uint(&w, "eager_limit_bytes", o->eager_limit);
    json_kv_string(&w, "machine_file", path);
    json_segments(&w, "segments", r, &r->fit, true);
    json_segments(&w, "duplex_segments", r, &r->duplex, false);
    json_key(&w, "results");
    json_begin_array(&w);
    for (size_t i = 0; i < r->n; i++) {
        const calib_point *p = &r->points[i];
        compare_row row = {p->bytes, machine_time(&r->m, p->bytes), p->t};
        json_begin_object(&w);
        json_kv_uint(&w, "bytes", p->bytes);
        json_kv_uint(&w, "iters", (uint64_t)p->iters);
        json_stats(&w, "time_s", &p->t);
        json_kv_number(&w, "modeled_s", row.modeled);
        json_kv_number(&w, "error_pct", compare_error_pct(&row));
        if (!isnan(p->gap))
            json_kv_number(&w, "gap_s", p->gap);
        json_stats(&w, "exchange_s", &p->x);
        double dx;
        if (machine_duplex_time(&r->m, p->bytes, &dx))
            json_kv_number(&w, "exchange_modeled_s", dx);
        json_end_object(&w);
    }
    json_end_array(&w);
    json_finish(&w);
}

static int parse(int argc, char **argv, calib_opts *o, const char **out, cli_format *fmt)
{
    static const struct option opts[] = {
        {"backend", required_argument, NULL, 'b'},
        {"out", required_argument, NULL, 'o'},
        {"eager-limit", required_argument, NULL, OPT_EAGER},
        {"quick", no_argument, NULL, OPT_QUICK},
        {"bind", required_argument, NULL, OPT_BIND},
        {"listen", required_argument, NULL, OPT_LISTEN},
        {"provider", required_argument, NULL, OPT_PROVIDER},
        {"csv", no_argument, NULL, OPT_CSV},
        {"json", no_argument, NULL, OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    cl_diag d = {{0}};
    backend_given given = {0};
    int c;
    while ((c = getopt_long(argc, argv, ":b:o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'b': o->backend = optarg; break;
        case 'o': *out = optarg; break;
        case OPT_EAGER:
            if (units_parse_size(optarg, "--eager-limit", &o->eager_limit, &d))
                return cli_diag(&d, CLI_EXIT_USAGE);
            break;
        case OPT_QUICK: o->quick = true; break;
        case OPT_BIND:
            if (cli_parse_bind(optarg, &o->bind))
                return CLI_EXIT_USAGE;
            break;
        case OPT_LISTEN:
            o->listen = optarg;
            backend_give(&given, BOPT_LISTEN, "listen", optarg);
            break;
        case OPT_PROVIDER:
            o->provider = optarg;
            backend_give(&given, BOPT_PROVIDER, "provider", optarg);
            break;
        case OPT_CSV: *fmt = CLI_CSV; break;
        case OPT_JSON: *fmt = CLI_JSON; break;
        case 'h': fputs(cmd_calibrate_usage, stdout); return -1;
        default: return cli_bad_option("calibrate", argv, c);
        }
    }
    int rc = cli_no_extra("calibrate", argc, argv);
    if (rc)
        return rc;
    return calibrate_find_backend("calibrate", o->backend, &given, &o->be);
}

int calibrate_find_backend(const char *cmd, const char *name, const backend_given *g,
                           const backend_info **out)
{
    char names[128];
    if (!name)
        return cli_error("%s: which transport? give --backend %s", cmd,
                         backend_names(names, sizeof names, true, " or "));
    int rc = backend_lookup(name, cmd, true, out);
    return rc ? rc : backend_check_options(*out, g);
}

/* Fails before the measuring rather than after it: makes the folder (as
 * machine_save would) and opens a probe file there, then removes it. */
static int check_writable(const char *path)
{
    char probe[1200];
    snprintf(probe, sizeof probe, "%s", path);
    char *slash = strrchr(probe, '/');
    if (slash && slash != probe) {
        *slash = 0;
        if (mkdir(probe, 0777) != 0 && errno != EEXIST)
            return cli_error("cannot write the machine file '%s': cannot create its folder: "
                             "%s (choose another with --out)", path, strerror(errno));
    }
    snprintf(probe, sizeof probe, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(probe, "w");
    if (!f)
        return cli_error("cannot write the machine file '%s': %s (choose another with --out)",
                         path, strerror(errno));
    fclose(f);
    unlink(probe);
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return cli_error("cannot write the machine file '%s': it is a folder (choose another "
                         "with --out)", path);
    return 0;
}

int cmd_calibrate(int argc, char **argv)
{
    calib_opts o = {.eager_limit = 64 * 1024, .bind = true, .progress = isatty(2)};
    const char *out = NULL;
    cli_format fmt = CLI_TEXT;
    int rc = parse(argc, argv, &o, &out, &fmt);
    if (rc)
        return rc == -1 ? CLI_EXIT_OK : rc;
    if (o.eager_limit < 1 || o.eager_limit >= (o.quick ? 4u << 20 : 64u << 20))
        return cli_error("--eager-limit must leave sizes on both sides of it: 1 B up to "
                         "below %s, got %llu", o.quick ? "4 MiB" : "64 MiB",
                         (unsigned long long)o.eager_limit);
    char path[1100], provider[32];
    if ((rc = calibrate_provider(o.be, o.provider, provider, sizeof provider)))
        return rc;
    if (out)
        snprintf(path, sizeof path, "%s", out);
    else if ((rc = calibrate_default_path(path, sizeof path, o.backend, provider)))
        return rc;
    if ((rc = check_writable(path)))
        return rc;
    calib_result r;
    rc = calibrate_measure(&o, &r);
    if (rc == CLI_EXIT_OK) {
        cl_diag d = {{0}};
        if (machine_save(&r.m, path, &d))
            rc = cli_diag(&d, CLI_EXIT_USAGE);
    }
    if (rc == CLI_EXIT_OK) {
        if (fmt == CLI_JSON) {
            print_json(&o, &r, path);
        } else if (fmt == CLI_CSV) {
            compare_row *rows = calloc(r.n, sizeof *rows);
            if (!rows) {
                rc = cli_error("out of memory");
            } else {
                for (size_t i = 0; i < r.n; i++)
                    rows[i] = (compare_row){r.points[i].bytes,
                                            machine_time(&r.m, r.points[i].bytes), r.points[i].t};
                compare_print_csv(stdout, "pingpong", o.backend, 2, rows, r.n);
                free(rows);
            }
        } else {
            print_text(&o, &r, path);
        }
    }
    calibrate_release(&r);
    return rc;
}
