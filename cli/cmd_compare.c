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
#include "cli/compare.h"
#include "cli/cli.h"
#include "core/pattern.h"
#include "cli/run_size.h"
#include "core/file.h"
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
    "pattern, compiled and loaded as `commlab run FILE.c` does.  What the pattern\n"
    "prints (cl_printf) is left out, as both sides would print it at every size:\n"
    "`commlab run` shows it.\n"
    "\n"
    "  -b, --backend NAME       shm (the default), tcp, rdma or mpi (mpi: the\n"
    "                           command starts itself under mpirun on -n\n"
    "                           processes, or runs in the job you started)\n"
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
    "      --cache MODE         the buffers' lines when each measured iteration starts,\n"
    "                           as `run --cache`: fresh (the default), warm or cold.\n"
    "                           A model calibrated in another mode is refused (a file\n"
    "                           without a cache key was measured warm); a calibration\n"
    "                           run first uses this mode\n"
    "      --mixed-cache        compare against a model of another --cache mode anyway:\n"
    "                           the header, every row and the JSON say so\n"
    "      --timeout TIME       end a size that takes longer than this, modeled or\n"
    "                           measured (default 600s; 0: no limit), as run does\n"
    "      --regime-wait TIME   how long, in all, to wait for the machine to come back\n"
    "                           to the regime of the machine file's reference probe\n"
    "                           (default 60s, or $COMMLAB_REGIME_WAIT; 0: no gate;\n"
    "                           below)\n"
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
    "Regime: a shared virtual machine moves between regimes (one 3 x slower than\n"
    "the other, for a minute at a time).  So every size is measured between two\n"
    "8 B probes that read within that threshold of the reference's 8 B figure:\n"
    "while a probe reads another regime compare waits 0.25 s and probes again\n"
    "(within --regime-wait in all), and a size whose probe after it read another\n"
    "regime is measured again, 3 times at most.  A size kept although measured in\n"
    "another regime is marked * (JSON: other_regime); a last line counts the\n"
    "probes, the wait and what was measured again.\n"
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
    OPT_SAVE, OPT_NETLAB, OPT_PIECES, OPT_SCHEDULE, OPT_CACHE, OPT_MIXED_CACHE, OPT_REGIME_WAIT,
};

static int check_parsed(int argc, char **argv, compare_opts *co, const char *bytes_s,
                        const char *sizes_s);

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
        {"cache", required_argument, NULL, OPT_CACHE},
        {"mixed-cache", no_argument, NULL, OPT_MIXED_CACHE},
        {"regime-wait", required_argument, NULL, OPT_REGIME_WAIT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    run_opts *o = &co->run;
    const char *bytes_s = NULL, *sizes_s = NULL;
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
        case OPT_BIND: rc = cli_parse_bind(optarg, &o->real.bind); break;
        case OPT_LISTEN:
            o->real.listen = optarg;
            backend_give(&o->given, BOPT_LISTEN, "listen", optarg);
            break;
        case OPT_PROVIDER:
            o->real.provider = optarg;
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
        case OPT_CACHE: rc = run_parse_cache(optarg, &o->real.cache); break;
        case OPT_MIXED_CACHE: co->mixed_cache = true; break;
        case OPT_REGIME_WAIT: rc = regime_parse_wait(optarg, &co->regime_wait); break;
        case OPT_NETLAB:
            rc = run_parse_netlab(optarg, &o->real.netlab);
            backend_give(&o->given, BOPT_NETLAB, "netlab", optarg);
            break;
        case 'h': fputs(cmd_compare_usage, stdout); return -1;
        default: return cli_bad_option("compare", opts, argv, c);
        }
    }
    return rc ? rc : check_parsed(argc, argv, co, bytes_s, sizes_s);
}

/* What parse took, checked: the pattern named after the options and its
 * arguments, the backend, the sizes.  0, or the exit status after saying
 * why. */
static int check_parsed(int argc, char **argv, compare_opts *co, const char *bytes_s,
                        const char *sizes_s)
{
    run_opts *o = &co->run;
    cl_diag d = {{0}};
    int rc;
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
        (rc = calibrate_check_netlab(o->real.netlab, o->real.listen)))
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

/* What the header says of the caches: the mode measured in, and the
 * model's when they differ (--mixed-cache). */
static void cache_header(char *buf, size_t len, const compare_opts *co, const compare_session *s)
{
    if (s->mismatch)
        cli_textf(buf, len, ", --cache %s measured against a model calibrated --cache %s%s "
                  "(--mixed-cache: the errors mix the two)", cache_mode_name(co->run.real.cache),
                  cache_mode_name(s->m.cache), s->m.cache_recorded ? "" : " (no cache key)");
    else
        cli_textf(buf, len, ", --cache %s", cache_mode_name(co->run.real.cache));
}

static void print_text(const compare_opts *co, const compare_session *s, const compare_row *rows,
                       size_t n, const double *err, int runs, int shown)
{
    const run_opts *o = &co->run;
    const machine *m = &s->m;
    char el[UNITS_BUF], its[40], cache[200];
    if (co->lo_iters == co->hi_iters)
        snprintf(its, sizeof its, "%d iteration%s", co->lo_iters, co->lo_iters == 1 ? "" : "s");
    else
        snprintf(its, sizeof its, "%d to %d iterations", co->lo_iters, co->hi_iters);
    cache_header(cache, sizeof cache, co, s);
    if (o->real.netlab) {
        char rate[UNITS_BUF];
        units_rate_str(rate, o->real.netlab);
        printf("%s, %d ranks: %s measured over a netlab of %s per port (%s, %s after %d "
               "warm-up) vs modeled on one switch of %d ports from %s (at each size its "
               "ping-pong segment: half the alpha a link, the bandwidth; max-min sharing), "
               "eager limit %s%s\n\n", o->pattern->name, o->ranks, o->backend, rate,
               s->env.binding, its, o->warmup, o->ranks, s->path,
               units_size_str(el, m->eager_limit), cache);
    } else {
        printf("%s, %d ranks: %s measured (%s, %s after %d warm-up) vs modeled by %s, eager "
               "limit %s%s\n\n", o->pattern->name, o->ranks, o->backend, s->env.binding, its,
               o->warmup, s->path, units_size_str(el, m->eager_limit), cache);
    }
    compare_drift_print(stdout, &s->dr, "drift: ");
    if (s->dr.any)
        putchar('\n');
    const char *h[] = {"size", "modeled", "measured (median)", "min", "max", "error", "cache"};
    table t;
    if (table_init(&t, s->mismatch ? 7 : 6, h))
        return;
    char words[80];
    compare_cache_words(words, sizeof words, co, m);
    for (size_t i = 0; i < n; i++) {
        char b[UNITS_BUF], mo[UNITS_BUF], me[UNITS_BUF], lo[UNITS_BUF], hi[UNITS_BUF];
        table_add(&t, "%s", units_size_str(b, rows[i].bytes));
        table_add(&t, "%s", units_time_digits(mo, rows[i].modeled, 4));
        table_add(&t, "%s", units_time_digits(me, rows[i].measured.median, 4));
        table_add(&t, "%s", units_time_digits(lo, rows[i].measured.min, 4));
        table_add(&t, "%s", units_time_digits(hi, rows[i].measured.max, 4));
        table_add(&t, "%+.1f %%%s", compare_error_pct(&rows[i]), rows[i].outside ? " *" : "");
        if (s->mismatch)
            table_add(&t, "%s", words);
    }
    table_print(&t, stdout, 0);
    table_release(&t);
    if (compare_rows_outside(rows, n))
        printf("* measured while the probe read another regime (--regime-wait ran out or "
               "the machine changed during the size's run each time)\n");
    if (n > 0)
        printf("\nmedian |error|: %.1f %% over %zu size%s\n", compare_median_abs_error(rows, n),
               n, n == 1 ? "" : "s");
    regime_print(stdout, &s->gate, "regime: ");
    print_repeats(err, runs, shown);
}

static void print_json(const compare_opts *co, const compare_session *s, const compare_row *rows,
                       size_t n, const double *err, int runs, int status)
{
    const run_opts *o = &co->run;
    const machine *m = &s->m;
    json_writer w;
    json_init(&w, stdout, true);
    json_begin_object(&w);
    json_kv_string(&w, "command", "compare");
    json_kv_string(&w, "pattern", o->pattern->name);
    json_kv_string(&w, "backend", o->backend);
    json_kv_uint(&w, "ranks", (uint64_t)o->ranks);
    json_kv_string(&w, "model", s->path);
    json_kv_string(&w, "model_host", m->host);
    json_kv_string(&w, "model_backend", m->backend);
    if (*m->provider)
        json_kv_string(&w, "model_provider", m->provider);
    json_kv_uint(&w, "eager_limit_bytes", m->eager_limit);
    json_kv_string(&w, "cache", cache_mode_name(o->real.cache));
    json_kv_string(&w, "model_cache", cache_mode_name(m->cache));
    json_key(&w, "model_cache_recorded");
    json_bool(&w, m->cache_recorded);
    json_key(&w, "cache_mismatch");
    json_bool(&w, s->mismatch);
    if (o->real.netlab) {
        json_kv_number(&w, "netlab_port_Bps", o->real.netlab);
        json_kv_string(&w, "modeled_on", "switch");
    } else {
        json_kv_string(&w, "modeled_on", "machine");
    }
    json_kv_uint(&w, "warmup", (uint64_t)o->warmup);
    json_kv_string(&w, "status", status == 0 ? "ok" : cl_errname(status));
    compare_drift_json(&w, &s->dr);
    regime_json(&w, &s->gate);
    if (n > 0)
        json_kv_number(&w, "median_abs_error_pct", compare_median_abs_error(rows, n));
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
        compare_row_json(&w, &rows[i]);
        if (s->mismatch) {
            json_key(&w, "cache_mismatch");
            json_bool(&w, true);
        }
        json_end_object(&w);
    }
    json_end_array(&w);
    json_finish(&w);
}

/* The CSV: the measured rows, then the model alone at sizes between them
 * (compare_curve_sizes), so a figure draws the model as the curve it is
 * rather than straight lines between a few sizes.  A curve run moves no
 * bytes (the model's times do not depend on them) and says nothing; one
 * that fails only leaves its point out.  A mixed pair (--mixed-cache) says
 * so in a comment line above the rows. */
static void write_csv(FILE *f, const compare_opts *co, compare_session *s,
                      const compare_row *rows, size_t n)
{
    uint64_t sizes[COMPARE_CURVE_MAX], at[COMPARE_CURVE_MAX];
    compare_row curve[COMPARE_CURVE_MAX];
    size_t nsizes = 0, ncurve = 0;
    for (size_t i = 0; i < n && i < COMPARE_CURVE_MAX; i++)
        sizes[nsizes++] = rows[i].bytes;
    size_t nat = compare_curve_sizes(sizes, nsizes, at);
    run_opts quiet = compare_sim_opts(co);
    quiet.payload = false;
    quiet.quiet = fopen("/dev/null", "w");
    for (size_t i = 0; quiet.quiet && i < nat; i++) {
        run_row r;
        if (compare_model_size(co, s, &quiet, at[i], &r) == 0)
            curve[ncurve++] = (compare_row){.bytes = at[i], .modeled = r.t.median};
    }
    if (quiet.quiet)
        fclose(quiet.quiet);
    const run_opts *o = &co->run;
    char note[160];
    cli_textf(note, sizeof note, "--mixed-cache: measured --cache %s against a model calibrated "
              "--cache %s", cache_mode_name(o->real.cache), cache_mode_name(s->m.cache));
    compare_print_csv(f, o->pattern->name, o->backend, o->ranks, o->eager_limit,
                      s->mismatch ? note : NULL, rows, n, curve, ncurve);
}

/* --save FILE.csv: the rows shown, in the --csv schema.  0, or the exit
 * status after saying why. */
static int save_csv(const compare_opts *co, compare_session *s, const compare_row *rows,
                    size_t n)
{
    cl_diag d = {{0}};
    file_out o;
    if (file_out_open(&o, co->save, "the --save file", &d))
        return cli_diag(&d, CLI_EXIT_USAGE);
    write_csv(o.f, co, s, rows, n);
    if (file_out_commit(&o, "the --save file", &d))
        return cli_diag(&d, CLI_EXIT_USAGE);
    return 0;
}

int cmd_compare(int argc, char **argv)
{
    compare_opts co = {
        .run = {.backend = "shm", .ranks = 2, .iters = 0, .warmup = 2, .payload = true,
                .real.bind = true, .real.copy = RUN_COPY_AUTO,
                .real.deadlock_timeout = 2.0, .timeout = RUN_TIMEOUT_DEFAULT, .fmt = CLI_TEXT,
                .args = {.microbatches = 4}},
        .repeat = 1,
    };
    run_opts *o = &co.run;
    int rc = regime_default_wait(&co.regime_wait), joined = -1;
    if (!rc)
        rc = parse(argc, argv, &co);
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
    compare_session s = {0};
    compare_row *rows = NULL;
    double *err = NULL;
    if ((rc = compare_open(&co, &s)))
        goto out;
    rows = calloc((size_t)co.repeat * o->nsizes, sizeof *rows);
    err = calloc((size_t)co.repeat, sizeof *err);
    if (!rows || !err) {
        rc = cli_error("out of memory");
        goto out;
    }
    int status = compare_probe(&co, &s, false) ? CL_EPEER : 0;
    int runs = 0, shown = 0;
    size_t nshow = 0;
    while (status == 0 && runs < co.repeat) {
        compare_row *r = &rows[(size_t)runs * o->nsizes];
        shown = runs; /* a run that fails shows what it did */
        status = compare_measure(&co, &s, runs == 0, r, &nshow);
        if (status)
            break;
        err[runs++] = compare_median_abs_error(r, nshow);
    }
    if (status == 0 && compare_probe(&co, &s, true))
        status = CL_EPEER;
    if (status == 0) {
        compare_drift_judge(&s.dr);
        /* the table: the run whose median |error| is the median */
        shown = run_median_iter(err, runs);
    }
    const compare_row *show = &rows[(size_t)shown * o->nsizes];
    if (o->fmt == CLI_JSON)
        print_json(&co, &s, show, nshow, err, runs, status);
    else if (o->fmt == CLI_CSV)
        write_csv(stdout, &co, &s, show, nshow);
    else if (nshow > 0)
        print_text(&co, &s, show, nshow, err, runs, shown);
    if (o->fmt != CLI_TEXT)
        compare_drift_print(stderr, &s.dr, "commlab: drift: ");
    rc = run_exit_code(status, &s.env);
    if (rc == CLI_EXIT_OK && co.save && backend_speaks(o->be))
        rc = save_csv(&co, &s, show, nshow);
out:
    rc = compare_close(&s, rc);
    free(rows);
    free(err);
    free(o->sizes);
    student_unload(&o->student);
    return rc;
}
