/* cmd_validate.c - `commlab validate`: every tutorial pattern of the course
 * measured on a transport next to its calibrated model (the machinery of
 * cli/compare.h, one pattern after the other in one session), a line each:
 * the median and the worst |error| over its sizes, and where the worst
 * is. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/compare.h"
#include "cli/near.h"
#include "cli/plot.h"
#include "core/json.h"
#include "core/pattern.h"
#include "core/table.h"
#include "core/units.h"

const char cmd_validate_usage[] =
    "usage: commlab validate [--backend shm|tcp|rdma] [options]\n"
    "\n"
    "Measures every tutorial pattern of the course on a transport and models it\n"
    "with that transport's calibrated machine file, size by size, as `commlab\n"
    "compare` does, and prints one line per pattern: its median |error| over the\n"
    "sizes, its worst |error| and the size of the worst.  A pattern is within\n"
    "bounds when its median |error| is at most 10 % and every size's at most\n"
    "25 %.  error = 100 (modeled - measured median) / measured median.\n"
    "\n"
    "The patterns, in this order: pingpong, relay, ring, exchange, chunked,\n"
    "relay-chunked, pipeline-gpipe and pipeline-1f1b (--schedule), overlap (with\n"
    "their default options: no compute), every collective of chapter 04 in its\n"
    "default algorithm (`commlab patterns` marks it), and incast: measured over a\n"
    "netlab (--backend tcp, as root; at least 3 ranks, two senders sharing rank\n"
    "0's port) and modeled on one switch of its ports, from the netlab's own\n"
    "machine file; skipped, with the reason, on other backends, when not root or\n"
    "when this machine cannot build a netlab.\n"
    "\n"
    "  -b, --backend NAME       shm (the default), tcp or rdma\n"
    "      --model FILE         machine file (default\n"
    "                           configs/machines/<host>-<backend>.yaml; when it does\n"
    "                           not exist, calibration runs first and writes it)\n"
    "      --cache MODE         the buffers' lines when each iteration starts: fresh\n"
    "                           (the default), warm or cold (`run --cache`); a model of\n"
    "                           another mode is refused\n"
    "      --mixed-cache        use a model of another --cache mode anyway: every line\n"
    "                           says so\n"
    "      --quick              7 sizes (8:4MiB:x8), about 0.02 s of iterations a size\n"
    "                           (10 to 100), a --quick calibration when one runs\n"
    "                           first: a minute or so in all on a quiet machine\n"
    "  -n, --ranks N            ranks (default 2; incast takes 3 at least)\n"
    "  -s, --sizes LIST         sizes (default 8:4MiB:x2, 20 sizes)\n"
    "  -i, --iters N            timed iterations a size (default: about 0.2 s of them,\n"
    "                           10 to 1000, as compare)\n"
    "      --warmup N           untimed iterations first (default 2)\n"
    "      --patterns LIST      only these lines, by their names in the table\n"
    "                           (pingpong,pipeline-1f1b,allreduce-ring,incast)\n"
    "      --netlab RATE        incast's ports (default 1Gbit/s)\n"
    "      --incast-model FILE  incast's machine file (default\n"
    "                           <host>-tcp-netlab-<rate>.yaml, calibrated over the\n"
    "                           netlab first when missing)\n"
    "      --bind WHERE         core (the default) or none\n"
    "      --listen ADDR        tcp: the numeric address ranks listen on\n"
    "      --provider NAME      rdma: the libfabric provider (default auto)\n"
    "      --timeout TIME       end a size that takes longer (default 600s; 0: no limit)\n"
    "      --regime-wait TIME   how long, in all, to wait for the machine to come back\n"
    "                           to the regime of the reference probe (default 60s,\n"
    "                           or $COMMLAB_REGIME_WAIT; 0: no gate), as compare\n"
    "output:\n"
    "      --json               patterns[i].median_abs_error_pct, .worst_abs_error_pct,\n"
    "                           .worst_bytes, .within, .other_regime_sizes, .results\n"
    "                           (as compare's), or .skipped with the reason; drift,\n"
    "                           reference, regime\n"
    "      --plot[=TERMS]       also write plots/out/validate-BACKEND.csv and draw it:\n"
    "                           every pattern's error per size, the bounds marked\n"
    "                           (TERMS: png,svg (the default), dumb, all)\n"
    "  -h, --help               this text\n"
    "\n"
    "The reference probe of the machine file (compare's drift) is measured before\n"
    "and after the patterns; a drift line says when the machine changed meanwhile.\n"
    "Every size is measured between two 8 B probes in the reference's regime, as\n"
    "compare does (`commlab compare --help`, Regime); a line whose sizes were kept\n"
    "from another regime says how many, and a last line what the gate did.\n"
    "One run is one sample of a noisy machine: run it again before believing a\n"
    "line (chapter 06).\n"
    "\n"
    "exit status: 0 every pattern measured (within bounds or not), 1 a data check\n"
    "failed, 2 bad usage or machine file, 3 deadlock, 4 a rank failed, 128+N\n"
    "stopped by signal N\n"
    "\n"
    "examples:\n"
    "  commlab calibrate --backend shm && commlab validate --backend shm\n"
    "  commlab validate --backend tcp --quick --plot\n"
    "  commlab validate --patterns pingpong,relay --json\n"
    "  sudo commlab validate --backend tcp --patterns incast --netlab 1Gbit/s\n";

enum {
    OPT_MODEL = 256, OPT_QUICK, OPT_WARMUP, OPT_BIND, OPT_LISTEN, OPT_PROVIDER, OPT_JSON,
    OPT_TIMEOUT, OPT_CACHE, OPT_MIXED_CACHE, OPT_PATTERNS, OPT_NETLAB, OPT_INCAST_MODEL,
    OPT_PLOT, OPT_REGIME_WAIT,
};

#define BOUND_MEDIAN_PCT 10.0 /* a pattern's median |error| over its sizes */
#define BOUND_WORST_PCT 25.0  /* every size's |error| */
#define QUICK_BUDGET 0.02     /* seconds of timed iterations a size with --quick ... */
#define QUICK_MAX_ITERS 100   /* ... and at most this many */
#define MAX_LINES 64
#define INCAST_RANKS 3        /* the fewest: two senders share rank 0's port */

/* One line of the table: a pattern with its options. */
typedef struct vline {
    char id[48];              /* its name in the table: "pipeline-1f1b" */
    const pattern_info *p;
    const char *schedule;     /* pipeline: gpipe or 1f1b; NULL for the others */
    bool netlab;              /* incast: over a netlab */
    bool selected;            /* in --patterns (all without it) */
    /* what came of it */
    bool measured;
    compare_row *rows;        /* its sizes, measured and modeled */
    size_t n;
    int ranks;
    double median, worst;     /* |error| %, over rows */
    uint64_t worst_bytes;
    bool within;              /* median <= 10 %, worst <= 25 % */
    size_t outside;           /* rows kept from another regime (cli/regime.h) */
    bool mismatch;            /* its model was of another --cache mode (--mixed-cache) */
    int cores;                /* cores of the machine it ran on; fewer than ranks: the
                                 ranks took turns on a core (said on its line) */
    char skipped[400];        /* why it was not measured; "" when it was */
} vline;

typedef struct validate_opts {
    compare_opts co;          /* backend, model, cache, sizes, iterations, output */
    const char *only;         /* --patterns LIST, or NULL */
    double netlab;            /* incast's port rate, bytes/s */
    const char *incast_model; /* --incast-model FILE, or NULL */
    unsigned plot;            /* PLOT_* bits; 0: no --plot */
    vline line[MAX_LINES];
    size_t nlines;
} validate_opts;

/* The lines, in the order of the course: chapter 02's patterns, every
 * collective's default algorithm, incast. */
static void plan_lines(validate_opts *v)
{
    static const char *const p2p[] = {"pingpong", "relay", "ring", "exchange", "chunked",
                                      "relay-chunked", "pipeline", "overlap"};
    static const char *const schedules[] = {"gpipe", "1f1b"};
    size_t n = 0;
    for (size_t i = 0; i < sizeof p2p / sizeof p2p[0]; i++) {
        const pattern_info *p = pattern_find(p2p[i]);
        for (size_t s = 0; s < (p->schedules ? 2 : 1); s++) {
            vline *l = &v->line[n++];
            l->p = p;
            l->schedule = p->schedules ? schedules[s] : NULL;
            cli_textf(l->id, sizeof l->id, "%s%s%s", p->name, l->schedule ? "-" : "",
                      l->schedule ? l->schedule : "");
        }
    }
    const collective_info *c;
    for (size_t i = 0; (c = collective_at(i)) != NULL && n + 1 < MAX_LINES; i++) {
        vline *l = &v->line[n++];
        l->p = collective_algo(c, c->algo);
        cli_textf(l->id, sizeof l->id, "%s", l->p->name);
    }
    vline *l = &v->line[n++];
    l->p = pattern_find("incast");
    l->netlab = true;
    cli_textf(l->id, sizeof l->id, "incast");
    v->nlines = n;
}

/* --patterns: marks the lines named; an unknown name is a usage error
 * naming the nearest. */
static int select_lines(validate_opts *v)
{
    for (size_t i = 0; i < v->nlines; i++)
        v->line[i].selected = v->only == NULL;
    for (const char *s = v->only; s && *s;) {
        size_t len = strcspn(s, ",");
        char name[48];
        cli_textf(name, sizeof name, "%.*s", (int)len, s);
        bool found = false;
        cli_near near;
        cli_near_init(&near, name);
        for (size_t i = 0; i < v->nlines; i++) {
            cli_near_add(&near, v->line[i].id);
            if (strcmp(v->line[i].id, name) == 0)
                found = v->line[i].selected = true;
        }
        if (!found && near.best)
            return cli_error("--patterns: unknown pattern '%s'; did you mean '%s'? (`commlab "
                             "help validate` lists them)", name, near.best);
        if (!found)
            return cli_error("--patterns: unknown pattern '%s' (`commlab help validate` lists "
                             "them)", name);
        s += len + (s[len] == ',');
    }
    for (size_t i = 0; i < v->nlines; i++)
        if (v->line[i].selected)
            return 0;
    return cli_error("--patterns names no pattern (`commlab help validate` lists them)");
}

static int parse(int argc, char **argv, validate_opts *v)
{
    static const struct option opts[] = {
        {"backend", required_argument, NULL, 'b'},
        {"model", required_argument, NULL, OPT_MODEL},
        {"cache", required_argument, NULL, OPT_CACHE},
        {"mixed-cache", no_argument, NULL, OPT_MIXED_CACHE},
        {"quick", no_argument, NULL, OPT_QUICK},
        {"ranks", required_argument, NULL, 'n'},
        {"sizes", required_argument, NULL, 's'},
        {"iters", required_argument, NULL, 'i'},
        {"warmup", required_argument, NULL, OPT_WARMUP},
        {"patterns", required_argument, NULL, OPT_PATTERNS},
        {"netlab", required_argument, NULL, OPT_NETLAB},
        {"incast-model", required_argument, NULL, OPT_INCAST_MODEL},
        {"bind", required_argument, NULL, OPT_BIND},
        {"listen", required_argument, NULL, OPT_LISTEN},
        {"provider", required_argument, NULL, OPT_PROVIDER},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"regime-wait", required_argument, NULL, OPT_REGIME_WAIT},
        {"json", no_argument, NULL, OPT_JSON},
        {"plot", optional_argument, NULL, OPT_PLOT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    compare_opts *co = &v->co;
    run_opts *o = &co->run;
    const char *sizes_s = NULL;
    cl_diag d = {{0}};
    int c, rc = 0;
    while (!rc && (c = getopt_long(argc, argv, ":b:n:s:i:h", opts, NULL)) != -1) {
        switch (c) {
        case 'b': o->backend = optarg; break;
        case OPT_MODEL: co->model = optarg; break;
        case OPT_CACHE: rc = run_parse_cache(optarg, &o->real.cache); break;
        case OPT_MIXED_CACHE: co->mixed_cache = true; break;
        case OPT_QUICK: co->quick = true; break;
        case 'n': rc = cli_parse_int("--ranks", optarg, 1, 256, &o->ranks); break;
        case 's': sizes_s = optarg; break;
        case 'i': rc = cli_parse_int("--iters", optarg, 1, 1000000, &o->iters); break;
        case OPT_WARMUP: rc = cli_parse_int("--warmup", optarg, 0, 1000000, &o->warmup); break;
        case OPT_PATTERNS: v->only = optarg; break;
        case OPT_NETLAB:
            rc = run_parse_netlab(optarg, &v->netlab);
            backend_give(&o->given, BOPT_NETLAB, "netlab", optarg);
            break;
        case OPT_INCAST_MODEL: v->incast_model = optarg; break;
        case OPT_BIND: rc = cli_parse_bind(optarg, &o->real.bind); break;
        case OPT_LISTEN:
            o->real.listen = optarg;
            backend_give(&o->given, BOPT_LISTEN, "listen", optarg);
            break;
        case OPT_PROVIDER:
            o->real.provider = optarg;
            backend_give(&o->given, BOPT_PROVIDER, "provider", optarg);
            break;
        case OPT_TIMEOUT: rc = run_parse_timeout(optarg, &o->timeout); break;
        case OPT_REGIME_WAIT: rc = regime_parse_wait(optarg, &v->co.regime_wait); break;
        case OPT_JSON: o->fmt = CLI_JSON; break;
        case OPT_PLOT: rc = cli_plot_terms(optarg, &v->plot); break;
        case 'h': fputs(cmd_validate_usage, stdout); return -1;
        default: return cli_bad_option("validate", opts, argv, c);
        }
    }
    if (rc || (rc = cli_no_extra("validate", argc, argv)))
        return rc;
    if ((rc = calibrate_find_backend("validate", o->backend, &o->given, &o->be)) ||
        (rc = calibrate_check_netlab(v->netlab, o->real.listen)) || (rc = select_lines(v)))
        return rc;
    if (units_parse_sizes(sizes_s ? sizes_s : co->quick ? "8:4MiB:x8" : "8:4MiB:x2", "--sizes",
                          &o->sizes, &o->nsizes, &d))
        return cli_diag(&d, CLI_EXIT_USAGE);
    for (size_t i = 0; i < o->nsizes; i++)
        if (o->sizes[i] > SIZE_MAX / 4)
            return cli_error("size %llu is too large", (unsigned long long)o->sizes[i]);
    if (co->quick) {
        co->budget = QUICK_BUDGET;
        co->max_iters = QUICK_MAX_ITERS;
    }
    return 0;
}

/* l's figures over its rows: median and worst |error|, where the worst is. */
static void summarize(vline *l)
{
    l->median = compare_median_abs_error(l->rows, l->n);
    l->worst = 0;
    for (size_t i = 0; i < l->n; i++) {
        double e = fabs(compare_error_pct(&l->rows[i]));
        if (i == 0 || e > l->worst) {
            l->worst = e;
            l->worst_bytes = l->rows[i].bytes;
        }
    }
    l->within = l->median <= BOUND_MEDIAN_PCT && l->worst <= BOUND_WORST_PCT;
    l->outside = compare_rows_outside(l->rows, l->n);
    l->measured = true;
}

/* Measures line l with co's options in session s (co->run's pattern,
 * arguments and ranks set here).  The run's status. */
static int measure_line(compare_opts *co, compare_session *s, vline *l, bool first)
{
    run_opts *o = &co->run;
    o->pattern = l->p;
    o->args = (cl_args){.microbatches = 4, .schedule = l->schedule};
    l->ranks = o->ranks;
    l->mismatch = s->mismatch;
    if (o->ranks < l->p->min_ranks) {
        cli_textf(l->skipped, sizeof l->skipped, "needs at least %d ranks, not -n %d",
                  l->p->min_ranks, o->ranks);
        return 0;
    }
    l->rows = calloc(o->nsizes, sizeof *l->rows);
    if (!l->rows) {
        cli_error("out of memory");
        return CL_ENOMEM;
    }
    int status = compare_measure(co, s, first, l->rows, &l->n);
    l->cores = s->env.cores;
    if (l->n > 0 && status == 0)
        summarize(l);
    return status;
}

/* Why incast cannot run here, into l->skipped; false when it can try. */
static bool incast_skips(const validate_opts *v, vline *l)
{
    const run_opts *o = &v->co.run;
    if (!(o->be->takes & BOPT(BOPT_NETLAB)))
        cli_textf(l->skipped, sizeof l->skipped, "measured over a netlab, which --backend %s "
                  "has not: give --backend tcp, as root", o->backend);
    else if (geteuid() != 0)
        cli_textf(l->skipped, sizeof l->skipped, "a netlab needs root (this runs as uid %u)",
                  (unsigned)geteuid());
    return l->skipped[0] != 0;
}

/* incast over a netlab of its own rate, with its own machine file, in a
 * session of its own.  A machine that cannot build the netlab (no ip or
 * tc, a kernel without namespaces) skips the line, saying why.  The run's
 * status, or an exit status from the session (its error printed), as
 * *exit_rc. */
static int measure_incast(validate_opts *v, vline *l, int *exit_rc)
{
    if (incast_skips(v, l))
        return 0;
    compare_opts co = v->co;
    co.run.real.netlab = v->netlab;
    co.run.ranks = co.run.ranks > INCAST_RANKS ? co.run.ranks : INCAST_RANKS;
    co.model = v->incast_model;
    co.recalibrate = false;
    compare_session s = {0};
    cl_diag d = {{0}};
    int err = run_lab_try(&s.lab, co.run.ranks, co.run.real.netlab, &d);
    if (err == CL_ENOSYS || err == CL_EINVAL) {
        cli_textf(l->skipped, sizeof l->skipped, "no netlab here: %s", d.msg);
        return 0;
    }
    if (err) {
        *exit_rc = cli_diag(&d, CLI_EXIT_FAILED);
        return 0;
    }
    int status = 0;
    if ((*exit_rc = compare_open(&co, &s)) == 0)
        status = measure_line(&co, &s, l, false);
    *exit_rc = compare_close(&s, *exit_rc);
    return status;
}

static void print_text(const validate_opts *v, const compare_session *s, size_t within,
                       size_t measured)
{
    const compare_opts *co = &v->co;
    const run_opts *o = &co->run;
    char lo[UNITS_BUF], hi[UNITS_BUF], sizes[80], runs[240] = "";
    if (o->nsizes == 1)
        cli_textf(sizes, sizeof sizes, "1 size, %s", units_size_str(lo, o->sizes[0]));
    else
        cli_textf(sizes, sizeof sizes, "%zu sizes %s..%s", o->nsizes,
                  units_size_str(lo, o->sizes[0]), units_size_str(hi, o->sizes[o->nsizes - 1]));
    if (co->hi_iters > 0 && co->lo_iters == co->hi_iters)
        cli_textf(runs, sizeof runs, ", %s, %d iteration%s after %d warm-up", s->env.binding,
                  co->lo_iters, co->lo_iters == 1 ? "" : "s", o->warmup);
    else if (co->hi_iters > 0)
        cli_textf(runs, sizeof runs, ", %s, %d to %d iterations after %d warm-up",
                  s->env.binding, co->lo_iters, co->hi_iters, o->warmup);
    printf("validate %s, %d rank%s: every tutorial pattern measured (--cache %s, %s%s) vs "
           "modeled by %s (calibrated --cache %s%s)\n\n", o->backend, o->ranks,
           o->ranks == 1 ? "" : "s", cache_mode_name(o->real.cache), sizes, runs, s->path,
           cache_mode_name(s->m.cache), s->m.cache_recorded ? "" : ", no cache key");
    compare_drift_print(stdout, &s->dr, "drift: ");
    if (s->dr.any)
        putchar('\n');
    const char *h[] = {"pattern", "ranks", "sizes", "median |error|", "worst |error|",
                       "worst at", "within 10 % / 25 %"};
    table t;
    if (table_init(&t, 7, h))
        return;
    for (size_t i = 0; i < v->nlines; i++) {
        const vline *l = &v->line[i];
        if (!l->selected || !l->measured)
            continue;
        char at[UNITS_BUF];
        table_add(&t, "%s", l->id);
        table_add(&t, "%d", l->ranks);
        table_add(&t, "%zu", l->n);
        table_add(&t, "%.1f %%", l->median);
        table_add(&t, "%.1f %%", l->worst);
        table_add(&t, "%s", units_size_str(at, l->worst_bytes));
        char turns[64] = "";
        if (l->cores > 0 && l->cores < l->ranks)
            cli_textf(turns, sizeof turns, " (%d ranks on %d cores take turns)", l->ranks,
                      l->cores);
        char other[64] = "";
        if (l->outside)
            cli_textf(other, sizeof other, " (%zu size%s from another regime)", l->outside,
                      l->outside == 1 ? "" : "s");
        table_add(&t, "%s%s%s%s", l->within ? "yes" : "no",
                  l->mismatch ? " (--mixed-cache: model of another --cache)" : "", turns, other);
    }
    table_print(&t, stdout, 0);
    table_release(&t);
    for (size_t i = 0; i < v->nlines; i++) {
        const vline *l = &v->line[i];
        if (l->selected && !l->measured)
            printf("%s: skipped: %s\n", l->id,
                   l->skipped[0] ? l->skipped : "not measured (an earlier pattern failed)");
    }
    printf("\n%zu of %zu pattern%s within bounds (median |error| <= %.0f %%, every size <= "
           "%.0f %%)\n", within, measured, measured == 1 ? "" : "s", BOUND_MEDIAN_PCT,
           BOUND_WORST_PCT);
    regime_print(stdout, &s->gate, "regime: ");
}

static void json_rows(json_writer *w, const vline *l)
{
    json_key(w, "results");
    json_begin_array(w);
    for (size_t i = 0; i < l->n; i++) {
        json_begin_object(w);
        compare_row_json(w, &l->rows[i]);
        json_end_object(w);
    }
    json_end_array(w);
}

static void print_json(const validate_opts *v, const compare_session *s, size_t within,
                       size_t measured, int status)
{
    const run_opts *o = &v->co.run;
    json_writer w;
    json_init(&w, stdout, true);
    json_begin_object(&w);
    json_kv_string(&w, "command", "validate");
    json_kv_string(&w, "backend", o->backend);
    json_kv_uint(&w, "ranks", (uint64_t)o->ranks);
    json_kv_string(&w, "binding", s->env.binding);
    json_kv_string(&w, "cache", cache_mode_name(o->real.cache));
    json_kv_string(&w, "model", s->path);
    json_kv_string(&w, "model_cache", cache_mode_name(s->m.cache));
    json_key(&w, "model_cache_recorded");
    json_bool(&w, s->m.cache_recorded);
    json_kv_uint(&w, "warmup", (uint64_t)o->warmup);
    json_kv_string(&w, "status", status == 0 ? "ok" : cl_errname(status));
    compare_drift_json(&w, &s->dr);
    regime_json(&w, &s->gate);
    json_kv_number(&w, "bound_median_pct", BOUND_MEDIAN_PCT);
    json_kv_number(&w, "bound_worst_pct", BOUND_WORST_PCT);
    json_kv_uint(&w, "measured", measured);
    json_kv_uint(&w, "within", within);
    json_key(&w, "patterns");
    json_begin_array(&w);
    for (size_t i = 0; i < v->nlines; i++) {
        const vline *l = &v->line[i];
        if (!l->selected)
            continue;
        json_begin_object(&w);
        json_kv_string(&w, "id", l->id);
        json_kv_string(&w, "pattern", l->p->name);
        if (l->schedule)
            json_kv_string(&w, "schedule", l->schedule);
        if (!l->measured) {
            json_kv_string(&w, "skipped", l->skipped[0] ? l->skipped : "not measured");
            json_end_object(&w);
            continue;
        }
        json_kv_uint(&w, "ranks", (uint64_t)l->ranks);
        if (l->netlab)
            json_kv_number(&w, "netlab_port_Bps", v->netlab);
        json_kv_number(&w, "median_abs_error_pct", l->median);
        json_kv_number(&w, "worst_abs_error_pct", l->worst);
        json_kv_uint(&w, "worst_bytes", l->worst_bytes);
        json_key(&w, "within");
        json_bool(&w, l->within);
        json_kv_uint(&w, "other_regime_sizes", l->outside);
        json_key(&w, "cache_mismatch");
        json_bool(&w, l->mismatch);
        json_kv_uint(&w, "cores", (uint64_t)l->cores);
        json_rows(&w, l);
        json_end_object(&w);
    }
    json_end_array(&w);
    json_finish(&w);
}

/* --plot: every measured row of every line, its figure drawn.  0, or the
 * exit status after saying why. */
static int plot(const validate_opts *v, const compare_session *s)
{
    size_t n = 0, k = 0;
    for (size_t i = 0; i < v->nlines; i++)
        n += v->line[i].measured ? v->line[i].n : 0;
    if (n == 0)
        return 0;
    plot_validate_row *rows = calloc(n, sizeof *rows);
    if (!rows)
        return cli_error("out of memory");
    for (size_t i = 0; i < v->nlines; i++)
        for (size_t j = 0; v->line[i].measured && j < v->line[i].n; j++) {
            const compare_row *r = &v->line[i].rows[j];
            rows[k++] = (plot_validate_row){v->line[i].id, r->bytes, r->modeled,
                                            r->measured.median};
        }
    const run_opts *o = &v->co.run;
    char what[PLOT_TITLE_MAX];
    cli_textf(what, sizeof what, "%s, %d ranks, --cache %s, model %s", o->backend, o->ranks,
              cache_mode_name(o->real.cache), s->path);
    int rc = cli_plot_validate(o->backend, what, rows, n, v->plot,
                               o->fmt == CLI_TEXT ? stdout : stderr);
    free(rows);
    return rc;
}

int cmd_validate(int argc, char **argv)
{
    validate_opts *v = calloc(1, sizeof *v);
    if (!v)
        return cli_error("out of memory");
    v->co = (compare_opts){
        .run = {.backend = "shm", .ranks = 2, .iters = 0, .warmup = 2, .payload = true,
                .real.bind = true, .real.copy = RUN_COPY_AUTO, .real.deadlock_timeout = 2.0,
                .timeout = RUN_TIMEOUT_DEFAULT, .fmt = CLI_TEXT},
        .repeat = 1,
    };
    v->netlab = 125e6; /* 1 Gbit/s */
    plan_lines(v);
    compare_opts *co = &v->co;
    run_opts *o = &co->run;
    int rc = regime_default_wait(&co->regime_wait), joined = -1;
    if (!rc)
        rc = parse(argc, argv, v);
    /* mpi: every process of a 2-process MPI job runs it all, as compare. */
    if (rc == 0 && o->be->join && o->ranks != 2)
        rc = cli_error("validate --backend mpi runs on 2 ranks (its MPI job runs the 2-rank "
                       "drift probe and calibration too), got -n %d", o->ranks);
    if (rc == 0 && o->be->join)
        joined = o->be->join(o->ranks, &o->eager_limit, argc, argv);
    compare_session s = {0};
    if (rc || joined >= 0) {
        rc = joined >= 0 ? joined : rc == -1 ? CLI_EXIT_OK : rc;
        goto out;
    }
    if ((rc = compare_open(co, &s)))
        goto out;
    int status = compare_probe(co, &s, false) ? CL_EPEER : 0;
    bool first = true;
    vline *incast = NULL;
    for (size_t i = 0; i < v->nlines && status == 0; i++) {
        vline *l = &v->line[i];
        if (!l->selected)
            continue;
        if (l->netlab) {
            incast = l;
            continue;
        }
        status = measure_line(co, &s, l, first);
        first = first && !l->measured;
    }
    if (status == 0 && compare_probe(co, &s, true))
        status = CL_EPEER;
    if (status == 0)
        compare_drift_judge(&s.dr);
    int lab_rc = 0;
    if (status == 0 && incast)
        status = measure_incast(v, incast, &lab_rc);
    size_t within = 0, measured = 0;
    for (size_t i = 0; i < v->nlines; i++) {
        measured += v->line[i].measured;
        within += v->line[i].measured && v->line[i].within;
    }
    bool speaks = backend_speaks(o->be);
    if (speaks && o->fmt == CLI_JSON)
        print_json(v, &s, within, measured, status);
    else if (speaks)
        print_text(v, &s, within, measured);
    if (o->fmt == CLI_JSON)
        compare_drift_print(stderr, &s.dr, "commlab: drift: ");
    rc = run_exit_code(status, &s.env);
    if (rc == CLI_EXIT_OK)
        rc = lab_rc;
    if (rc == CLI_EXIT_OK && v->plot && speaks)
        rc = plot(v, &s);
out:
    rc = compare_close(&s, rc);
    for (size_t i = 0; i < v->nlines; i++)
        free(v->line[i].rows);
    free(o->sizes);
    free(v);
    return rc;
}
