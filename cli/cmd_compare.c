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
#include "core/file.h"
#include "core/json.h"
#include "core/table.h"
#include "core/units.h"
#include "real/netlab.h"

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
    "      --recalibrate        calibrate first, even when the machine file exists, and\n"
    "                           write it (to --model FILE when given)\n"
    "      --repeat R           measure R times (default 1) and print the spread of\n"
    "                           the median |error| over the R runs; the table is the\n"
    "                           run whose median |error| is the median\n"
    "  -n, --ranks N            ranks (default 2)\n"
    "      --bytes SIZE         one message size\n"
    "  -s, --sizes LIST         sizes: 8,1KiB,4MiB or 8:4MiB:x4 (default 8:4MiB:x2)\n"
    "  -i, --iters N            measured timed iterations (default: as calibrate, enough\n"
    "                           to take about 0.2 s by the model's time, 10 to 1000)\n"
    "      --warmup N           measured untimed iterations first (default 2)\n"
    "      --bind WHERE         core (the default) or none\n"
    "      --listen ADDR        tcp: the numeric address ranks listen on\n"
    "      --netlab RATE        tcp, root only: measure over a switch of network\n"
    "                           namespaces whose ports `tc` limits to RATE (as `run\n"
    "                           --netlab`), and model the pattern on one switch of as\n"
    "                           many ports, each link the calibrated ping-pong's\n"
    "                           segment at that size (half its alpha a link, its\n"
    "                           bandwidth), with max-min sharing, so messages that\n"
    "                           meet on a port share it on both sides (default model\n"
    "                           <host>-tcp-netlab-<rate>.yaml, calibrated over the\n"
    "                           same netlab when missing)\n"
    "      --provider NAME      rdma: the libfabric provider (default auto)\n"
    "      --timeout TIME       end a size that takes longer than this, modeled or\n"
    "                           measured (default 600s; 0: no limit), as run does\n"
    "pattern options:\n"
    "      --microbatches M     pipeline: microbatches (default 4)\n"
    "      --compute TIME       pipeline: compute per stage per microbatch\n"
    "      --schedule NAME      pipeline: gpipe (the default) or 1f1b\n"
    "      --chunk SIZE         chunked: bytes per piece (default SIZE/8)\n"
    "      --pieces N           relay-chunked: pieces (default 8); overlap: gradient\n"
    "                           buckets (default 4), each computed for --compute\n"
    "output:\n"
    "      --csv                the `commlab plot` schema: pattern,backend,ranks,bytes,\n"
    "                           modeled_s,measured_median_s,measured_min_s,\n"
    "                           measured_max_s,error_pct,measured_q1_s,measured_q3_s;\n"
    "                           then rows of the model alone (measured columns\n"
    "                           empty) at 4 sizes a doubling between, for its curve\n"
    "      --json               results[i].modeled_s, .measured_s.{median,min,max},\n"
    "                           .error_pct; reference, drift; repeat runs\n"
    "      --save FILE.csv      also write the table's rows, in the --csv schema, to\n"
    "                           FILE.csv: a figure of the very run printed\n"
    "  -h, --help               this text\n"
    "\n"
    "Drift: when the machine file records a reference probe (8 B and 1 MiB\n"
    "ping-pong at calibration), compare probes it again before and after its\n"
    "measurements.  Where either moved from the file's figure by more than the\n"
    "model claims to be right to (its segment's max residual, and at least 20 %,\n"
    "the probe's own spread on a shared machine), one line says so with the\n"
    "figures: the errors then reflect a machine that changed, not the model.\n"
    "\n"
    "exit status: 0 ok, 1 a data check failed, 2 bad usage or machine file,\n"
    "3 deadlock, 4 a rank failed, 128+N stopped by signal N\n"
    "\n"
    "examples:\n"
    "  commlab compare pingpong --backend shm\n"
    "  commlab compare pingpong --backend shm --repeat 5\n"
    "  commlab compare ring --backend tcp -n 2 --sizes 8,64KiB,1MiB\n"
    "  commlab compare pipeline --backend rdma --provider tcp --quick --sizes 8,1MiB\n"
    "  commlab compare pipeline --model /tmp/shm.yaml --compute 20us --csv > pipe.csv\n"
    "  sudo commlab compare incast -n 5 --backend tcp --netlab 1Gbit/s --bytes 16MiB\n";

enum {
    OPT_MODEL = 256, OPT_QUICK, OPT_BYTES, OPT_WARMUP, OPT_BIND, OPT_LISTEN, OPT_PROVIDER,
    OPT_MICRO, OPT_COMPUTE, OPT_CHUNK, OPT_CSV, OPT_JSON, OPT_TIMEOUT, OPT_RECAL, OPT_REPEAT,
    OPT_SAVE, OPT_NETLAB, OPT_PIECES, OPT_SCHEDULE,
};

/* The least move of a reference called drift, %: the probe's own spread
 * between runs in one regime.  On the shared 2-core VM of chapter 06, ten
 * compares after one calibration probed 8 B at 105-110 ns against 120 ns
 * calibrated (up to 12.5 % apart, errors 2.4-5.0 %), while the other
 * regime is 3.5 x slower. */
#define DRIFT_FLOOR_PCT 20.0

typedef struct compare_opts {
    run_opts run;      /* pattern, backend, ranks, sizes, iters, pattern args */
    const char *model; /* --model, or NULL */
    const machine *m;  /* the model's machine file, loaded */
    bool quick;
    bool recalibrate;  /* --recalibrate */
    int repeat;        /* --repeat R: measurements of every size, >= 1 */
    const char *save;  /* --save FILE.csv, or NULL */
    int lo_iters, hi_iters; /* the iterations the sizes ran: fewest, most */
} compare_opts;

/* The reference probe against the machine file's (core/machine.h). */
typedef struct drift {
    size_t n;                             /* probes: the file's, 0 if it has none */
    machine_ref cal[MACHINE_MAX_REFS];    /* at calibration */
    double before[MACHINE_MAX_REFS];      /* seconds, before the measurements */
    double after[MACHINE_MAX_REFS];       /* seconds, after them */
    double threshold_pct[MACHINE_MAX_REFS]; /* the model's claimed residual there */
    bool moved[MACHINE_MAX_REFS];
    bool any;                             /* some probe moved */
} drift;

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
        {"schedule", required_argument, NULL, OPT_SCHEDULE},
        {"chunk", required_argument, NULL, OPT_CHUNK},
        {"pieces", required_argument, NULL, OPT_PIECES},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"csv", no_argument, NULL, OPT_CSV},
        {"json", no_argument, NULL, OPT_JSON},
        {"recalibrate", no_argument, NULL, OPT_RECAL},
        {"repeat", required_argument, NULL, OPT_REPEAT},
        {"save", required_argument, NULL, OPT_SAVE},
        {"netlab", required_argument, NULL, OPT_NETLAB},
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
        case OPT_MICRO: case OPT_COMPUTE: case OPT_CHUNK: case OPT_PIECES:
            rc = run_pattern_option(opts[idx].name, optarg, &o->args);
            break;
        case OPT_SCHEDULE: o->args.schedule = optarg; break;
        case OPT_TIMEOUT: rc = run_parse_timeout(optarg, &o->timeout); break;
        case OPT_CSV: o->fmt = CLI_CSV; break;
        case OPT_JSON: o->fmt = CLI_JSON; break;
        case OPT_RECAL: co->recalibrate = true; break;
        case OPT_REPEAT: rc = cli_parse_int("--repeat", optarg, 1, 1000, &co->repeat); break;
        case OPT_SAVE: co->save = optarg; break;
        case OPT_NETLAB:
            rc = run_parse_netlab(optarg, &o->netlab);
            backend_give(&o->given, BOPT_NETLAB, "netlab", optarg);
            break;
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
    if ((rc = run_check_pattern_args(o)))
        return rc;
    if (o->ranks < o->pattern->min_ranks)
        return cli_error("%s needs at least %d ranks, got -n %d", name, o->pattern->min_ranks,
                         o->ranks);
    if ((rc = calibrate_find_backend("compare", o->backend, &o->given, &o->be)) ||
        (rc = calibrate_check_netlab(o->netlab, o->listen)))
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

/* The machine file: --model, or this host's; calibrated now when this
 * host's is missing, or with --recalibrate. */
static int get_machine(const compare_opts *co, machine *m, char *path, size_t len)
{
    const run_opts *o = &co->run;
    cl_diag d = {{0}};
    char provider[32];
    int rc = calibrate_provider(o->be, o->provider, provider, sizeof provider);
    if (rc)
        return rc;
    if (co->model)
        snprintf(path, len, "%s", co->model);
    else if ((rc = calibrate_default_path(path, len, o->backend, provider, o->netlab)))
        return rc;
    bool missing = !co->model && access(path, F_OK) != 0;
    if (missing || co->recalibrate) {
        if (missing)
            fprintf(stderr, "commlab: no machine file for this host and %s at %s: calibrating "
                            "first%s\n", o->backend, path, co->quick ? " (--quick)" : "");
        else
            fprintf(stderr, "commlab: --recalibrate: calibrating %s into %s%s\n", o->backend,
                    path, co->quick ? " (--quick)" : "");
        calib_opts cal = {.backend = o->backend, .be = o->be, .provider = o->provider,
                          .eager_limit = o->eager_limit ? o->eager_limit : 64 * 1024,
                          .quick = co->quick, .bind = o->bind, .listen = o->listen,
                          .netlab = o->netlab, .lab = o->lab, .progress = isatty(2)};
        calib_result r;
        rc = calibrate_measure(&cal, &r);
        if (rc == CLI_EXIT_OK && machine_save(&r.m, path, &d))
            rc = cli_diag(&d, CLI_EXIT_USAGE);
        calibrate_release(&r);
        if (rc)
            return rc;
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
    if (m->netlab != o->netlab) {
        char was[40] = "no netlab", now[40] = "no netlab";
        if (m->netlab > 0)
            netlab_rate_str(was, sizeof was, m->netlab);
        if (o->netlab > 0)
            netlab_rate_str(now, sizeof now, o->netlab);
        fprintf(stderr, "commlab: note: %s was calibrated over %s%s; measuring over %s%s\n",
                path, m->netlab > 0 ? "a netlab of " : "", was, o->netlab > 0 ? "a netlab of "
                : "", now);
    }
    return 0;
}

/* The network a size is modeled on over a netlab: one switch of ranks
 * ports, every link half of the calibrated ping-pong segment's alpha at
 * that size and its bandwidth, so that a message alone costs alpha +
 * n/bandwidth, the calibrated time, and messages that cross one port at
 * once share it (max-min).  A segment without a per-byte cost gets a
 * bandwidth no message notices, the topology file having no infinity.
 * 0, or the exit status after saying why. */
static int switch_net(const machine *m, int ranks, uint64_t bytes, sim_net **out)
{
    const machine_segment *seg = machine_segment_of(m, bytes);
    double bw = isinf(seg->bandwidth) ? 1e30 : seg->bandwidth;
    char yaml[256];
    snprintf(yaml, sizeof yaml, "topology: [Switch]\nnpus_count: [%d]\nbandwidth: [%.17gB/s]\n"
             "latency: [%.17gs]\n", ranks, bw, seg->alpha / 2);
    cl_diag d = {{0}};
    if (sim_net_load_string(out, m->path, yaml, NULL, &d))
        return cli_diag(&d, CLI_EXIT_USAGE);
    return 0;
}

/* One size modeled: on env's machine mesh, or over a netlab on the
 * switch of switch_net.  The run's status (0 or CL_E*, reported). */
static int model_size(const compare_opts *co, const run_opts *sim, run_env *env,
                      uint64_t bytes, run_row *row)
{
    if (!co->run.netlab)
        return run_size_sim(sim, env, bytes, NULL, false, row);
    run_env on = {0};
    if (switch_net(co->m, sim->ranks, bytes, &on.net))
        return CL_ECONFIG;
    int status = run_size_sim(sim, &on, bytes, NULL, false, row);
    sim_net_destroy(on.net);
    return status;
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

/* The reference probe before or after the measurements, into dr's
 * before or after; nothing when the file has no reference.  CLI_EXIT_OK
 * or the exit status of a failed run. */
static int probe(const compare_opts *co, run_env *env, drift *dr, bool after)
{
    if (dr->n == 0)
        return CLI_EXIT_OK;
    machine_ref now[CALIB_NREF];
    int rc = calibrate_probe(&co->run, env, now);
    if (rc)
        return rc;
    for (size_t i = 0; i < dr->n; i++) {
        double t = NAN;
        for (size_t k = 0; k < CALIB_NREF; k++)
            if (now[k].bytes == dr->cal[i].bytes)
                t = now[k].time;
        (after ? dr->after : dr->before)[i] = t;
    }
    return CLI_EXIT_OK;
}

/* The threshold at each reference size: the model's claimed residual
 * there (its segment's max residual), at least DRIFT_FLOOR_PCT. */
static void drift_init(drift *dr, const machine *m)
{
    memset(dr, 0, sizeof *dr);
    dr->n = m->nref;
    for (size_t i = 0; i < dr->n; i++) {
        dr->cal[i] = m->ref[i];
        dr->before[i] = dr->after[i] = NAN;
        double claim = machine_segment_of(m, m->ref[i].bytes)->max_residual_pct;
        dr->threshold_pct[i] = isnan(claim) || claim < DRIFT_FLOOR_PCT ? DRIFT_FLOOR_PCT : claim;
    }
}

static double moved_pct(double now, double cal)
{
    return 100.0 * (now - cal) / cal;
}

/* Which references moved by more than their threshold, before or after. */
static void drift_judge(drift *dr)
{
    for (size_t i = 0; i < dr->n; i++) {
        double c = dr->cal[i].time;
        dr->moved[i] = fabs(moved_pct(dr->before[i], c)) > dr->threshold_pct[i] ||
                       fabs(moved_pct(dr->after[i], c)) > dr->threshold_pct[i];
        dr->any = dr->any || dr->moved[i];
    }
}

/* The one drift line (without "commlab: "), or nothing when none moved. */
static void drift_print(FILE *f, const drift *dr, const char *prefix)
{
    if (!dr->any)
        return;
    fputs(prefix, f);
    bool first = true;
    for (size_t i = 0; i < dr->n; i++) {
        if (!dr->moved[i])
            continue;
        char b[UNITS_BUF], t0[UNITS_BUF], t1[UNITS_BUF], tc[UNITS_BUF];
        fprintf(f, "%sthe %s reference took %s before and %s after the measurements, %s at "
                   "calibration", first ? "" : "; ", units_size_str(b, dr->cal[i].bytes),
                units_time_digits(t0, dr->before[i], 4), units_time_digits(t1, dr->after[i], 4),
                units_time_digits(tc, dr->cal[i].time, 4));
        first = false;
    }
    fputs(": the machine changed since calibration (by more than the model's claimed "
          "residual and the probe's own spread); the errors reflect that (--recalibrate "
          "measures the model again)\n", f);
}

/* The spread of the median |error| over the runs of --repeat. */
static void print_repeats(const double *err, int runs, int shown)
{
    cl_stats st;
    if (runs < 2 || stats_compute(err, (size_t)runs, &st))
        return;
    printf("over %d runs the median |error| was %.1f %% [%.1f %% - %.1f %%]:", runs, st.median,
           st.min, st.max);
    for (int i = 0; i < runs; i++)
        printf(" %.1f", err[i]);
    printf(" %%; the table is run %d's (the median)\n", shown + 1);
}

static void print_text(const compare_opts *co, const machine *m, const char *path,
                       const run_env *env, const drift *dr, const compare_row *rows, size_t n,
                       const double *err, int runs, int shown)
{
    const run_opts *o = &co->run;
    char el[UNITS_BUF];
    char its[40];
    if (co->lo_iters == co->hi_iters)
        snprintf(its, sizeof its, "%d iteration%s", co->lo_iters, co->lo_iters == 1 ? "" : "s");
    else
        snprintf(its, sizeof its, "%d to %d iterations", co->lo_iters, co->hi_iters);
    if (o->netlab) {
        char rate[32];
        netlab_rate_str(rate, sizeof rate, o->netlab);
        printf("%s, %d ranks: %s measured over a netlab of %s per port (%s, %s after %d "
               "warm-up) vs modeled on one switch of %d ports from %s (at each size its "
               "ping-pong segment: half the alpha a link, the bandwidth; max-min sharing), "
               "eager limit %s\n\n", o->pattern->name, o->ranks, o->backend, rate,
               env->binding, its, o->warmup, o->ranks, path, units_size_str(el, m->eager_limit));
    } else {
        printf("%s, %d ranks: %s measured (%s, %s after %d warm-up) vs modeled by %s, eager "
               "limit %s\n\n", o->pattern->name, o->ranks, o->backend, env->binding, its,
               o->warmup, path, units_size_str(el, m->eager_limit));
    }
    drift_print(stdout, dr, "drift: ");
    if (dr->any)
        putchar('\n');
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
    print_repeats(err, runs, shown);
}

static void json_drift(json_writer *w, const drift *dr)
{
    if (dr->n == 0)
        return;
    json_key(w, "drift");
    json_bool(w, dr->any);
    json_key(w, "reference");
    json_begin_array(w);
    for (size_t i = 0; i < dr->n; i++) {
        json_begin_object(w);
        json_kv_uint(w, "bytes", dr->cal[i].bytes);
        json_kv_number(w, "calibrated_s", dr->cal[i].time);
        if (!isnan(dr->before[i]))
            json_kv_number(w, "before_s", dr->before[i]);
        if (!isnan(dr->after[i]))
            json_kv_number(w, "after_s", dr->after[i]);
        json_kv_number(w, "threshold_pct", dr->threshold_pct[i]);
        json_key(w, "moved");
        json_bool(w, dr->moved[i]);
        json_end_object(w);
    }
    json_end_array(w);
}

static void print_json(const compare_opts *co, const machine *m, const char *path,
                       const drift *dr, const compare_row *rows, size_t n, const double *err,
                       int runs, int status)
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
    if (o->netlab) {
        json_kv_number(&w, "netlab_port_Bps", o->netlab);
        json_kv_string(&w, "modeled_on", "switch");
    } else {
        json_kv_string(&w, "modeled_on", "machine");
    }
    json_kv_uint(&w, "warmup", (uint64_t)o->warmup);
    json_kv_string(&w, "status", status == 0 ? "ok" : cl_errname(status));
    json_drift(&w, dr);
    if (n > 0)
        json_kv_number(&w, "median_abs_error_pct", median_abs_error(rows, n));
    json_kv_uint(&w, "repeat", (uint64_t)co->repeat);
    if (runs > 1) {
        json_key(&w, "median_abs_error_pct_runs");
        json_begin_array(&w);
        for (int i = 0; i < runs; i++)
            json_number(&w, err[i]);
        json_end_array(&w);
    }
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
static void write_csv(FILE *f, const compare_opts *co, const run_opts *sim, run_env *env,
                      const compare_row *rows, size_t n)
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
        if (model_size(co, &quiet, env, at[i], &r) == 0)
            curve[ncurve++] = (compare_row){.bytes = at[i], .modeled = r.t.median};
    }
    if (quiet.quiet)
        fclose(quiet.quiet);
    compare_print_csv(f, sim->pattern->name, sim->backend, sim->ranks, rows, n, curve, ncurve);
}

/* --save FILE.csv: the rows shown, in the --csv schema.  0, or the exit
 * status after saying why. */
static int save_csv(const compare_opts *co, const run_opts *sim, run_env *env,
                    const compare_row *rows, size_t n)
{
    cl_diag d = {{0}};
    file_out o;
    if (file_out_open(&o, co->save, "the --save file", &d))
        return cli_diag(&d, CLI_EXIT_USAGE);
    write_csv(o.f, co, sim, env, rows, n);
    if (file_out_commit(&o, "the --save file", &d))
        return cli_diag(&d, CLI_EXIT_USAGE);
    return 0;
}

/* One measurement of every size into rows (modeled next to measured);
 * *done counts the rows filled.  Returns the last run's status. */
static int measure_sizes(compare_opts *co, run_env *env, const run_opts *sim, bool first,
                         compare_row *rows, size_t *done)
{
    run_opts *o = &co->run;
    bool fixed = o->iters > 0;
    int status = 0;
    for (*done = 0; *done < o->nsizes; (*done)++) {
        size_t i = *done;
        run_row measured, modeled;
        if ((status = model_size(co, sim, env, o->sizes[i], &modeled)))
            break;
        run_opts real = *o;
        if (!fixed)
            real.iters = planned_iters(modeled.t.median * o->pattern->time_divisor);
        bool none_yet = first && i == 0;
        co->lo_iters = none_yet || real.iters < co->lo_iters ? real.iters : co->lo_iters;
        co->hi_iters = none_yet || real.iters > co->hi_iters ? real.iters : co->hi_iters;
        if ((status = run_size(&real, env, o->sizes[i], NULL, none_yet, &measured)))
            break;
        rows[i] = (compare_row){o->sizes[i], modeled.t.median, measured.t};
    }
    return status;
}

int cmd_compare(int argc, char **argv)
{
    compare_opts co = {
        .run = {.backend = "shm", .ranks = 2, .iters = 0, .warmup = 2, .payload = true,
                .bind = true, .copy = SHM_COPY_AUTO,
                .deadlock_timeout = 2.0, .timeout = RUN_TIMEOUT_DEFAULT, .fmt = CLI_TEXT,
                .args = {.microbatches = 4}},
        .repeat = 1,
    };
    run_opts *o = &co.run;
    int rc = parse(argc, argv, &co), joined = -1;
    cl_diag d = {{0}};
    /* A --save path that would be refused is refused before measuring. */
    if (rc == 0 && co.save && file_out_check(co.save, "the --save file", &d))
        rc = cli_diag(&d, CLI_EXIT_USAGE);
    /* mpi: every process of a 2-process MPI job runs the comparison (each
     * process runs every run, and the drift probe and a calibration are
     * 2-rank ping-pongs). */
    if (rc == 0 && o->be->join && o->ranks != 2)
        rc = cli_error("compare --backend mpi runs on 2 ranks (its MPI job runs the 2-rank "
                       "drift probe and calibration too), got -n %d", o->ranks);
    if (rc == 0 && o->be->join)
        joined = o->be->join(o->ranks, &o->eager_limit, argc, argv);
    if (rc || joined >= 0) {
        free(o->sizes);
        student_unload(&o->student);
        return joined >= 0 ? joined : rc == -1 ? CLI_EXIT_OK : rc;
    }
    machine m;
    char path[1100];
    run_env env = {0};
    compare_row *rows = NULL;
    double *err = NULL;
    run_lab lab = {0};
    /* One netlab for every run: calibration, probes and measurements. */
    if (o->netlab && (rc = run_lab_open(&lab, o->ranks > 2 ? o->ranks : 2, o->netlab)))
        goto out;
    o->lab = lab.nl;
    if ((rc = get_machine(&co, &m, path, sizeof path)))
        goto out;
    co.m = &m;
    if (!o->netlab && sim_net_create_machine(&env.net, &m, o->ranks, &d)) {
        rc = cli_diag(&d, CLI_EXIT_USAGE);
        goto out;
    }
    rows = calloc((size_t)co.repeat * o->nsizes, sizeof *rows);
    err = calloc((size_t)co.repeat, sizeof *err);
    if (!rows || !err) {
        rc = cli_error("out of memory");
        goto out;
    }
    o->eager_limit = m.eager_limit;
    drift dr;
    drift_init(&dr, &m);
    if (dr.n == 0)
        fprintf(stderr, "commlab: note: %s records no reference probe (calibrated before "
                        "commlab kept one), so a changed machine cannot be told from a wrong "
                        "model; --recalibrate writes one\n", path);
    /* The modeled side: one exact iteration, no warm-up.  A machine mesh
     * is priced alone (its calibration holds what the transport shares);
     * a netlab's switch shares its ports. */
    run_opts sim = *o;
    sim.sharing = o->netlab ? SIM_SHARE_MAXMIN : SIM_SHARE_NONE;
    sim.iters = 1;
    sim.warmup = 0;
    int status = probe(&co, &env, &dr, false) ? CL_EPEER : 0;
    int runs = 0, shown = 0;
    size_t nshow = 0;
    while (status == 0 && runs < co.repeat) {
        compare_row *r = &rows[(size_t)runs * o->nsizes];
        shown = runs; /* a run that fails shows what it did */
        status = measure_sizes(&co, &env, &sim, runs == 0, r, &nshow);
        if (status)
            break;
        err[runs++] = median_abs_error(r, nshow);
    }
    if (status == 0 && probe(&co, &env, &dr, true))
        status = CL_EPEER;
    if (status == 0) {
        drift_judge(&dr);
        /* the table: the run whose median |error| is the median */
        shown = run_median_iter(err, runs);
    }
    const compare_row *show = &rows[(size_t)shown * o->nsizes];
    if (o->fmt == CLI_JSON)
        print_json(&co, &m, path, &dr, show, nshow, err, runs, status);
    else if (o->fmt == CLI_CSV)
        write_csv(stdout, &co, &sim, &env, show, nshow);
    else if (nshow > 0)
        print_text(&co, &m, path, &env, &dr, show, nshow, err, runs, shown);
    if (o->fmt != CLI_TEXT)
        drift_print(stderr, &dr, "commlab: drift: ");
    rc = run_exit_code(status, &env);
    if (rc == CLI_EXIT_OK && co.save && backend_speaks(o->be))
        rc = save_csv(&co, &sim, &env, show, nshow);
out:
    int lab_rc = run_lab_close(&lab);
    rc = rc == CLI_EXIT_OK ? lab_rc : rc;
    free(rows);
    free(err);
    sim_net_destroy(env.net);
    free(o->sizes);
    student_unload(&o->student);
    return rc;
}
