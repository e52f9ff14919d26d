/* cmd_compare.c - `commlab compare PATTERN`: the pattern measured on a
 * transport next to the same pattern modeled by that transport's
 * calibrated machine file, with the model's error per size. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/calibrate.h"
#include "cli/cli.h"
#include "core/pattern.h"
#include "cli/run_size.h"
#include "core/json.h"
#include "core/table.h"
#include "core/units.h"

const char cmd_compare_usage[] =
    "usage: commlab compare PATTERN [options]\n"
    "       commlab compare FILE.c [options]\n"
    "\n"
    "Runs a pattern measured on a transport and modeled on the simulator with that\n"
    "transport's calibrated machine file (`commlab calibrate`), and prints per\n"
    "size the modeled time, the measured median [min-max] and the model's error,\n"
    "100 (modeled - measured) / measured %.  Both sides run the same pattern,\n"
    "ranks, sizes and eager limit (the machine file's).  A FILE.c is your own\n"
    "pattern, compiled and loaded as `commlab run FILE.c` does.\n"
    "\n"
    "  -b, --backend NAME       shm (the default), tcp or rdma\n"
    "      --model FILE         machine file (default\n"
    "                           configs/machines/<host>-<backend>.yaml, for rdma\n"
    "                           <host>-rdma-<provider>.yaml; when it does not exist,\n"
    "                           calibration runs first and writes it)\n"
    "      --quick              a calibration run first is a --quick one\n"
    "  -n, --ranks N            ranks (default 2)\n"
    "      --bytes SIZE         one message size\n"
    "  -s, --sizes LIST         sizes: 8,1KiB,4MiB or 8:4MiB:x4 (default 8:4MiB:x2)\n"
    "  -i, --iters N            measured timed iterations (default: as calibrate, enough\n"
    "                           to take about 0.2 s by the model's time, 10 to 1000)\n"
    "      --warmup N           measured untimed iterations first (default 2)\n"
    "      --bind WHERE         core (the default) or none\n"
    "      --listen ADDR        tcp: the numeric address ranks listen on\n"
    "      --provider NAME      rdma: the libfabric provider (default auto)\n"
    "pattern options:\n"
    "      --microbatches M     pipeline: microbatches (default 4)\n"
    "      --compute TIME       pipeline: compute per stage per microbatch\n"
    "      --chunk SIZE         chunked: bytes per piece (default SIZE/8)\n"
    "output:\n"
    "      --csv                the `commlab plot` schema: pattern,backend,ranks,bytes,\n"
    "                           modeled_s,measured_median_s,measured_min_s,\n"
    "                           measured_max_s,error_pct,measured_q1_s,measured_q3_s;\n"
    "                           then rows of the model alone (measured columns\n"
    "                           empty) at 4 sizes a doubling between, for its curve\n"
    "      --json               results[i].modeled_s, .measured_s.{median,min,max},\n"
    "                           .error_pct\n"
    "  -h, --help               this text\n"
    "\n"
    "exit status: 0 ok, 1 a data check failed, 2 bad usage or machine file,\n"
    "3 deadlock, 4 a rank failed, 128+N stopped by signal N\n"
    "\n"
    "examples:\n"
    "  commlab compare pingpong --backend shm\n"
    "  commlab compare ring --backend tcp -n 2 --sizes 8,64KiB,1MiB\n"
    "  commlab compare pipeline --backend rdma --provider tcp --quick --sizes 8,1MiB\n"
    "  commlab compare pipeline --model /tmp/shm.yaml --compute 20us --csv > pipe.csv\n";

enum {
    OPT_MODEL = 256, OPT_QUICK, OPT_BYTES, OPT_WARMUP, OPT_BIND, OPT_LISTEN, OPT_PROVIDER,
    OPT_MICRO,
    OPT_COMPUTE, OPT_CHUNK, OPT_CSV, OPT_JSON,
};

typedef struct compare_opts {
    run_opts run;      /* pattern, backend, ranks, sizes, iters, pattern args */
    const char *model; /* --model, or NULL */
    bool quick;
    int lo_iters, hi_iters; /* the iterations the sizes ran: fewest, most */
} compare_opts;

/* Timed iterations for a size whose modeled iteration takes t seconds:
 * calibrate's budget, so both measure the same steady state (the first tens
 * of round trips of 2-32 KiB messages run 2-3x slower than the rest). */
static int planned_iters(double t)
{
    double it = 0.2 / (t + 2e-6);
    return it < 10 ? 10 : it > 1000 ? 1000 : (int)it;
}

static int parse(int argc, char **argv, compare_opts *co)
{
    static const struct option opts[] = {
        {"backend", required_argument, NULL, 'b'},
        {"model", required_argument, NULL, OPT_MODEL},
        {"quick", no_argument, NULL, OPT_QUICK},
        {"ranks", required_argument, NULL, 'n'},
        {"bytes", required_argument, NULL, OPT_BYTES},
        {"sizes", required_argument, NULL, 's'},
        {"iters", required_argument, NULL, 'i'},
        {"warmup", required_argument, NULL, OPT_WARMUP},
        {"bind", required_argument, NULL, OPT_BIND},
        {"listen", required_argument, NULL, OPT_LISTEN},
        {"provider", required_argument, NULL, OPT_PROVIDER},
        {"microbatches", required_argument, NULL, OPT_MICRO},
        {"compute", required_argument, NULL, OPT_COMPUTE},
        {"chunk", required_argument, NULL, OPT_CHUNK},
        {"csv", no_argument, NULL, OPT_CSV},
        {"json", no_argument, NULL, OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    run_opts *o = &co->run;
    const char *bytes_s = NULL, *sizes_s = NULL;
    cl_diag d = {{0}};
    int c, rc = 0, idx = 0;
    while (!rc && (c = getopt_long(argc, argv, ":b:n:s:i:h", opts, &idx)) != -1) {
        switch (c) {
        case 'b': o->backend = optarg; break;
        case OPT_MODEL: co->model = optarg; break;
        case OPT_QUICK: co->quick = true; break;
        case 'n': rc = cli_parse_int("--ranks", optarg, 1, 256, &o->ranks); break;
        case OPT_BYTES: bytes_s = optarg; break;
        case 's': sizes_s = optarg; break;
        case 'i': rc = cli_parse_int("--iters", optarg, 1, 1000000, &o->iters); break;
        case OPT_WARMUP: rc = cli_parse_int("--warmup", optarg, 0, 1000000, &o->warmup); break;
        case OPT_BIND: rc = cli_parse_bind(optarg, &o->bind); break;
        case OPT_LISTEN:
            o->listen = optarg;
            backend_give(&o->given, BOPT_LISTEN, "listen", optarg);
            break;
        case OPT_PROVIDER:
            o->provider = optarg;
            backend_give(&o->given, BOPT_PROVIDER, "provider", optarg);
            break;
        case OPT_MICRO: case OPT_COMPUTE: case OPT_CHUNK:
            rc = run_pattern_option(opts[idx].name, optarg, &o->args);
            break;
        case OPT_CSV: o->fmt = CLI_CSV; break;
        case OPT_JSON: o->fmt = CLI_JSON; break;
        case 'h': fputs(cmd_compare_usage, stdout); return -1;
        default: return cli_bad_option("compare", opts, argv, c);
        }
    }
    if (rc)
        return rc;
    if (optind >= argc)
        return cli_error("compare: which pattern? (`commlab patterns` lists them)\n"
                         "try 'commlab help compare'");
    const char *name = argv[optind++];
    if ((rc = cli_no_extra("compare", argc, argv)))
        return rc;
    if ((rc = run_find_pattern(o, name)))
        return rc;
    if (o->pattern->fixes)
        return cli_error("compare: '%s' is about deadlock, not time; compare another pattern",
                         name);
    if (o->ranks < o->pattern->min_ranks)
        return cli_error("%s needs at least %d ranks, got -n %d", name, o->pattern->min_ranks,
                         o->ranks);
    if ((rc = calibrate_find_backend("compare", o->backend, &o->given, &o->be)))
        return rc;
    if (bytes_s && sizes_s)
        return cli_error("compare: give either --bytes or --sizes, not both");
    if (units_parse_sizes(sizes_s ? sizes_s : bytes_s ? bytes_s : "8:4MiB:x2",
                          sizes_s ? "--sizes" : "--bytes", &o->sizes, &o->nsizes, &d))
        return cli_diag(&d, CLI_EXIT_USAGE);
    for (size_t i = 0; i < o->nsizes; i++)
        if (o->sizes[i] > SIZE_MAX / 4)
            return cli_error("size %llu is too large", (unsigned long long)o->sizes[i]);
    return 0;
}

/* The machine file: --model, or this host's, calibrated now when missing. */
static int get_machine(const compare_opts *co, machine *m, char *path, size_t len)
{
    const run_opts *o = &co->run;
    cl_diag d = {{0}};
    char provider[32];
    int rc = calibrate_provider(o->be, o->provider, provider, sizeof provider);
    if (rc)
        return rc;
    if (co->model) {
        snprintf(path, len, "%s", co->model);
    } else {
        if ((rc = calibrate_default_path(path, len, o->backend, provider)))
            return rc;
        if (access(path, F_OK) != 0) {
            fprintf(stderr, "commlab: no machine file for this host and %s at %s: "
                            "calibrating first%s\n",
                    o->backend, path, co->quick ? " (--quick)" : "");
            calib_opts cal = {.backend = o->backend, .be = o->be, .provider = o->provider,
                              .eager_limit = 64 * 1024, .quick = co->quick, .bind = o->bind,
                              .listen = o->listen, .progress = isatty(2)};
            calib_result r;
            rc = calibrate_measure(&cal, &r);
            if (rc == CLI_EXIT_OK && machine_save(&r.m, path, &d))
                rc = cli_diag(&d, CLI_EXIT_USAGE);
            calibrate_release(&r);
            if (rc)
                return rc;
        }
    }
    if (machine_load(m, path, &d))
        return cli_diag(&d, CLI_EXIT_USAGE);
    char host[256];
    calibrate_hostname(host, sizeof host);
    char mwhat[80], owhat[80];
    snprintf(mwhat, sizeof mwhat, "%s%s%s", m->backend, *m->provider ? "/" : "", m->provider);
    snprintf(owhat, sizeof owhat, "%s%s%s", o->backend, *provider ? "/" : "", provider);
    if (strcmp(mwhat, owhat) != 0 || strcmp(m->host, host) != 0)
        fprintf(stderr, "commlab: note: %s was calibrated for %s on %s; measuring %s on %s\n",
                path, mwhat, m->host, owhat, host);
    return 0;
}

static double median_abs_error(const compare_row *rows, size_t n)
{
    double *e = malloc(n * sizeof *e);
    cl_stats s = {0};
    if (!e)
        return NAN;
    for (size_t i = 0; i < n; i++)
        e[i] = fabs(compare_error_pct(&rows[i]));
    if (stats_compute(e, n, &s))
        s.median = NAN;
    free(e);
    return s.median;
}

static void print_text(const compare_opts *co, const machine *m, const char *path,
                       const run_env *env, const compare_row *rows, size_t n)
{
    const run_opts *o = &co->run;
    char el[UNITS_BUF];
    char its[40];
    if (co->lo_iters == co->hi_iters)
        snprintf(its, sizeof its, "%d iteration%s", co->lo_iters, co->lo_iters == 1 ? "" : "s");
    else
        snprintf(its, sizeof its, "%d to %d iterations", co->lo_iters, co->hi_iters);
    printf("%s, %d ranks: %s measured (%s, %s after %d warm-up) vs modeled by %s, eager "
           "limit %s\n\n", o->pattern->name, o->ranks, o->backend, env->binding, its,
           o->warmup, path, units_size_str(el, m->eager_limit));
    const char *h[] = {"size", "modeled", "measured (median)", "min", "max", "error"};
    table t;
    if (table_init(&t, 6, h))
        return;
    for (size_t i = 0; i < n; i++) {
        char b[UNITS_BUF], mo[UNITS_BUF], me[UNITS_BUF], lo[UNITS_BUF], hi[UNITS_BUF];
        table_add(&t, "%s", units_size_str(b, rows[i].bytes));
        table_add(&t, "%s", units_time_digits(mo, rows[i].modeled, 4));
        table_add(&t, "%s", units_time_digits(me, rows[i].measured.median, 4));
        table_add(&t, "%s", units_time_digits(lo, rows[i].measured.min, 4));
        table_add(&t, "%s", units_time_digits(hi, rows[i].measured.max, 4));
        table_add(&t, "%+.1f %%", compare_error_pct(&rows[i]));
    }
    table_print(&t, stdout, 0);
    table_release(&t);
    if (n > 0)
        printf("\nmedian |error|: %.1f %% over %zu size%s\n", median_abs_error(rows, n), n,
               n == 1 ? "" : "s");
}

static void print_json(const compare_opts *co, const machine *m, const char *path,
                       const compare_row *rows, size_t n, int status)
{
    const run_opts *o = &co->run;
    json_writer w;
    json_init(&w, stdout, true);
    json_begin_object(&w);
    json_kv_string(&w, "command", "compare");
    json_kv_string(&w, "pattern", o->pattern->name);
    json_kv_string(&w, "backend", o->backend);
    json_kv_uint(&w, "ranks", (uint64_t)o->ranks);
    json_kv_string(&w, "model", path);
    json_kv_string(&w, "model_host", m->host);
    json_kv_string(&w, "model_backend", m->backend);
    if (*m->provider)
        json_kv_string(&w, "model_provider", m->provider);
    json_kv_uint(&w, "eager_limit_bytes", m->eager_limit);
    json_kv_uint(&w, "warmup", (uint64_t)o->warmup);
    json_kv_string(&w, "status", status == 0 ? "ok" : cl_errname(status));
    if (n > 0)
        json_kv_number(&w, "median_abs_error_pct", median_abs_error(rows, n));
    json_key(&w, "results");
    json_begin_array(&w);
    for (size_t i = 0; i < n; i++) {
        json_begin_object(&w);
        json_kv_uint(&w, "bytes", rows[i].bytes);
        json_kv_uint(&w, "iters", rows[i].measured.n);
        json_kv_number(&w, "modeled_s", rows[i].modeled);
        json_key(&w, "measured_s");
        json_begin_object(&w);
        json_kv_number(&w, "median", rows[i].measured.median);
        json_kv_number(&w, "min", rows[i].measured.min);
        json_kv_number(&w, "max", rows[i].measured.max);
        json_end_object(&w);
        json_kv_number(&w, "error_pct", compare_error_pct(&rows[i]));
        json_end_object(&w);
    }
    json_end_array(&w);
    json_finish(&w);
}

/* The CSV: the measured rows, then the model alone at sizes between them
 * (compare_curve_sizes), so a figure draws the model as the curve it is
 * rather than straight lines between a few sizes.  A curve run moves no
 * bytes (the model's times do not depend on them) and says nothing; one
 * that fails only leaves its point out. */
static void print_csv(const run_opts *sim, run_env *env, const compare_row *rows, size_t n)
{
    uint64_t sizes[COMPARE_CURVE_MAX], at[COMPARE_CURVE_MAX];
    compare_row curve[COMPARE_CURVE_MAX];
    size_t nsizes = 0, ncurve = 0;
    for (size_t i = 0; i < n && i < COMPARE_CURVE_MAX; i++)
        sizes[nsizes++] = rows[i].bytes;
    size_t nat = compare_curve_sizes(sizes, nsizes, at);
    run_opts quiet = *sim;
    quiet.payload = false;
    quiet.quiet = fopen("/dev/null", "w");
    for (size_t i = 0; quiet.quiet && i < nat; i++) {
        run_row r;
        if (run_size_sim(&quiet, env, at[i], NULL, false, &r) == 0)
            curve[ncurve++] = (compare_row){.bytes = at[i], .modeled = r.t.median};
    }
    if (quiet.quiet)
        fclose(quiet.quiet);
    compare_print_csv(stdout, sim->pattern->name, sim->backend, sim->ranks, rows, n, curve,
                      ncurve);
}

int cmd_compare(int argc, char **argv)
{
    compare_opts co = {
        .run = {.backend = "shm", .ranks = 2, .iters = 0, .warmup = 2, .payload = true,
                .bind = true, .copy = SHM_COPY_AUTO,
                .deadlock_timeout = 2.0, .fmt = CLI_TEXT, .args = {.microbatches = 4}},
    };
    run_opts *o = &co.run;
    int rc = parse(argc, argv, &co);
    if (rc) {
        free(o->sizes);
        student_unload(&o->student);
        return rc == -1 ? CLI_EXIT_OK : rc;
    }
    machine m;
    char path[1100];
    run_env env = {0};
    compare_row *rows = NULL;
    if ((rc = get_machine(&co, &m, path, sizeof path)))
        goto out;
    cl_diag d = {{0}};
    if (sim_net_create_machine(&env.net, &m, o->ranks, &d)) {
        rc = cli_diag(&d, CLI_EXIT_USAGE);
        goto out;
    }
    rows = calloc(o->nsizes, sizeof *rows);
    if (!rows) {
        rc = cli_error("out of memory");
        goto out;
    }
    o->eager_limit = m.eager_limit;
    /* The modeled side: one exact iteration, no warm-up. */
    run_opts sim = *o;
    sim.sharing = SIM_SHARE_NONE; /* a machine mesh: its calibration holds it */
    sim.iters = 1;
    sim.warmup = 0;
    int status = 0;
    size_t done = 0;
    bool fixed = o->iters > 0;
    for (; done < o->nsizes && status == 0; done++) {
        run_row measured, modeled;
        status = run_size_sim(&sim, &env, o->sizes[done], NULL, false, &modeled);
        if (status)
            break;
        run_opts real = *o;
        if (!fixed)
            real.iters = planned_iters(modeled.t.median * o->pattern->time_divisor);
        co.lo_iters = done == 0 || real.iters < co.lo_iters ? real.iters : co.lo_iters;
        co.hi_iters = done == 0 || real.iters > co.hi_iters ? real.iters : co.hi_iters;
        status = run_size(&real, &env, o->sizes[done], NULL, done == 0, &measured);
        if (status)
            break;
        rows[done] = (compare_row){o->sizes[done], modeled.t.median, measured.t};
    }
    if (o->fmt == CLI_JSON)
        print_json(&co, &m, path, rows, done, status);
    else if (o->fmt == CLI_CSV)
        print_csv(&sim, &env, rows, done);
    else if (done > 0)
        print_text(&co, &m, path, &env, rows, done);
    rc = run_exit_code(status, &env);
out:
    free(rows);
    sim_net_destroy(env.net);
    free(o->sizes);
    student_unload(&o->student);
    return rc;
}
