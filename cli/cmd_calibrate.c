/* cmd_calibrate.c - `commlab calibrate`: its options, the measuring and
 * fitting of cli/calibrate.c, the machine file written, the fit printed. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/calibrate.h"
#include "cli/cli.h"
#include "core/file.h"
#include "core/json.h"
#include "core/table.h"
#include "core/units.h"

const char cmd_calibrate_usage[] =
    "usage: commlab calibrate --backend shm|tcp|rdma|mpi [options]\n"
    "\n"
    "Measures the one-way time of a blocking ping-pong (the pingpong pattern, 2\n"
    "ranks) from 1 B to 64 MiB, fits T(n) = alpha + n / bandwidth piecewise, and\n"
    "writes a machine file the simulator replays with `--model FILE`.  Then it\n"
    "measures the gap: how much each further message of a stream adds (LogGP's\n"
    "g + n G), from windows of 1 and 4 back-to-back messages up to 4 MiB, and\n"
    "fits it per segment; the simulator spaces a rank's back-to-back messages\n"
    "on a link by it.  Up to the eager limit it measures a window of 8 with its\n"
    "receives posted first (chunked's pieces): the posted gap, which spaces a message\n"
    "whose receive was posted by the instant it was sent (the window of\n"
    "blocking receives then gives the gap of the messages that find none, the\n"
    "unexpected path).  Last it measures an exchange (chapter 02's pattern: both\n"
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
    "  -b, --backend NAME       shm, tcp, rdma or mpi (mpi: the command starts\n"
    "                           itself under mpirun on 2 processes, or runs in\n"
    "                           the 2 of a job you started)\n"
    "  -o, --out FILE           machine file to write (default\n"
    "                           configs/machines/<host>-<backend>.yaml; for rdma\n"
    "                           <host>-rdma-<provider>.yaml; where configs/ is\n"
    "                           not yours to write, as in an installed copy,\n"
    "                           ~/.local/share/commlab/machines/ instead)\n"
    "      --eager-limit SIZE   the transport's eager limit while measuring, and the\n"
    "                           model's (default 64KiB)\n"
    "      --quick              1 B..4 MiB by factors of 2, about 0.05 s a size: ten\n"
    "                           seconds or so instead of a minute\n"
    "      --strict             refuse a segment no measurement fits, or runs of\n"
    "                           which more than a tenth were kept from another regime\n"
    "                           (exit 4, nothing written), instead of a warning\n"
    "      --bind WHERE         core (the default) or none\n"
    "      --listen ADDR        tcp: the numeric address ranks listen on\n"
    "      --netlab RATE        tcp, root only: measure between two network\n"
    "                           namespaces behind a switch whose ports `tc` limits\n"
    "                           to RATE each way (as `run --netlab`); the file\n"
    "                           records the rate (default file\n"
    "                           <host>-tcp-netlab-<rate>.yaml, e.g. -netlab-1gbit)\n"
    "      --provider NAME      rdma: the libfabric provider (auto, tcp, verbs, ...);\n"
    "                           the file records the one it ran on\n"
    "      --cache MODE         the buffers' lines when each iteration starts, as `run\n"
    "                           --cache`: fresh (written back just before by the rank's\n"
    "                           core; the default), warm or cold; the file records it,\n"
    "                           and compare refuses to set a model beside a measurement\n"
    "                           of another mode\n"
    "      --regime-wait TIME   how long, in all, to wait for the machine to come back\n"
    "                           to the reference probe's regime (default 60s, or\n"
    "                           $COMMLAB_REGIME_WAIT; 0: no gate, runs are taken as\n"
    "                           they come; below)\n"
    "      --csv                the points and the fit, in the schema of compare --csv\n"
    "      --json               segments and points as JSON\n"
    "  -h, --help               this text\n"
    "\n"
    "Sizes are 1 B and 2^k, 1.5 x 2^k up to 64 MiB, measured in interleaved\n"
    "rounds: every size once a round (after 2 warm-up iterations), 5 rounds (3\n"
    "with --quick), about 0.2 s a size in all; a size's time is the median of its\n"
    "rounds' medians, so a slow spell of the machine costs each size one round.\n"
    "A segment with R^2 below 0.9 and a point more than 10 % off its line is\n"
    "measured again, up to 3 times.  If two measurements in a row agree within\n"
    "10 %, that is the transport's own bend, kept; if none agree, the machine was\n"
    "too busy for a line: the last measurement is kept with a warning naming the\n"
    "segment (its residuals are in the file, and compare's errors there show the\n"
    "noise; calibrate again when the machine is quieter).  --strict refuses\n"
    "instead (exit 4, nothing written).  First a reference probe (8 B and 1 MiB\n"
    "ping-pong) is measured and written to the file: the regime the machine was\n"
    "in, which compare checks; when most of the five 8 B probes right after it\n"
    "read another regime, it caught a passing one and is taken again (3 times at\n"
    "most; the summary gives what those read).  Every run after it is measured\n"
    "in that regime: a shared virtual machine moves between regimes (one 3 x\n"
    "slower, for a minute at a time), and a fit through runs of both is a line\n"
    "through two machines.  So each run sits between two 8 B probes within 20 %\n"
    "of the reference's 8 B figure: while a probe reads another regime calibrate\n"
    "waits 0.25 s and probes again (within --regime-wait in all), and a run\n"
    "whose probe after it read another regime is measured again, 3 times at\n"
    "most; a last line counts the probes, the wait and the runs measured again\n"
    "or kept from another regime, and a warning says when more than a tenth were\n"
    "kept (the model then mixes two machines).  The streaming windows and the\n"
    "exchange go in interleaved rounds too.  A progress bar goes to stderr when\n"
    "it is a terminal.\n"
    "\n"
    "exit status: 0 ok, 2 bad usage, 4 a rank or transport failed, or (--strict)\n"
    "a segment could not be fitted or the runs mixed regimes (nothing written)\n"
    "\n"
    "examples:\n"
    "  commlab calibrate --backend shm\n"
    "  commlab calibrate --backend tcp --quick --out /tmp/tcp.yaml\n"
    "  commlab calibrate --backend rdma --provider tcp --quick\n"
    "  sudo commlab calibrate --backend tcp --netlab 1Gbit/s --quick\n"
    "  commlab run pingpong --model configs/machines/HOST-shm.yaml --sizes 8:4MiB:x8\n";

enum {
    OPT_EAGER = 256, OPT_QUICK, OPT_STRICT, OPT_BIND, OPT_LISTEN, OPT_PROVIDER, OPT_NETLAB, OPT_CSV,
    OPT_JSON, OPT_CACHE, OPT_REGIME_WAIT
};

/* A calibration whose gate kept many runs from another regime fits a line
 * through two machines: said, and under --strict refused (nothing
 * written). */
static int mixed_regimes(const calib_opts *o, const regime_gate *g)
{
    char ref[UNITS_BUF];
    units_time_digits(ref, g->ref, 4);
    if (o->strict) {
        cli_error("calibrate: %d of %d runs were kept from another regime than the "
                  "reference's (8 B at %s): the machine did not hold one regime within "
                  "--regime-wait; nothing written (--strict; calibrate again when it is "
                  "steadier, or with a longer --regime-wait)", g->kept_outside, g->runs, ref);
        return CLI_EXIT_FAILED;
    }
    fprintf(stderr, "commlab: calibrate: warning: %d of %d runs were kept from another regime "
                    "than the reference's (8 B at %s): the machine did not hold one regime "
                    "within --regime-wait, and the model mixes two machines (calibrate again "
                    "when it is steadier, or with a longer --regime-wait; --strict refuses "
                    "such a model)\n", g->kept_outside, g->runs, ref);
    return CLI_EXIT_OK;
}

/* ---- output ---- */

/* The points and the fitted model (calibrate --csv): the model's curve
 * from the fit at sizes between the points. */
static int print_csv(const calib_opts *o, const calib_result *r)
{
    compare_row *rows = calloc(r->n, sizeof *rows);
    uint64_t *sizes = calloc(r->n, sizeof *sizes);
    if (!rows || !sizes) {
        free(rows);
        free(sizes);
        return cli_error("out of memory");
    }
    for (size_t i = 0; i < r->n; i++) {
        rows[i] = (compare_row){.bytes = r->points[i].bytes,
                                .modeled = machine_time(&r->m, r->points[i].bytes),
                                .measured = r->points[i].t};
        sizes[i] = r->points[i].bytes;
    }
    uint64_t at[COMPARE_CURVE_MAX];
    compare_row curve[COMPARE_CURVE_MAX];
    size_t nc = compare_curve_sizes(sizes, r->n, at);
    for (size_t i = 0; i < nc; i++)
        curve[i] = (compare_row){.bytes = at[i], .modeled = machine_time(&r->m, at[i])};
    compare_print_csv(stdout, "pingpong", o->backend, 2, o->eager_limit, NULL, rows, r->n, curve,
                      nc);
    free(rows);
    free(sizes);
    return CLI_EXIT_OK;
}

static void segment_range(char *buf, size_t len, const calib_result *r, const fit_segment *f)
{
    char a[UNITS_BUF], b[UNITS_BUF];
    snprintf(buf, len, "%s..%s", units_size_str(a, r->points[f->first].bytes),
             units_size_str(b, r->points[f->first + f->n - 1].bytes));
}

/* Under a table of segments, what its odd-looking figures mean, each once
 * and only when one shows: a student reads "0 s", "inf" or an R^2 near 0
 * as a broken tool otherwise.  gaps: the ping-pong's machine segments (the
 * gap columns), or NULL. */
static void print_notes(const fit_result *fit, const machine_segment *gaps)
{
    bool zero_alpha = false, flat = false, loose = false, off = false, zero_gap = false;
    double worst = 0;
    for (size_t s = 0; s < fit->n; s++) {
        const fit_segment *f = &fit->seg[s];
        zero_alpha |= f->alpha == 0;
        flat |= !(f->beta > 0);
        loose |= f->r2 < 0.9;
        off |= f->max_residual > 0.25;
        worst = fmax(worst, f->max_residual);
        zero_gap |= gaps && gaps[s].gap == 0;
    }
    if (zero_alpha)
        printf("alpha 0 s: the best line through that segment would reach 0 bytes below "
               "0 s; its fixed cost is too small to tell from its bytes' time, so it is "
               "held at 0 and the segment is all bandwidth\n");
    if (zero_gap)
        printf("gap 0 s: likewise, a further message of a stream adds only its bytes' "
               "time there\n");
    if (flat)
        printf("bandwidth inf: every size of that segment took the same time, so its bytes "
               "add nothing measurable: the segment is all alpha\n");
    if (loose)
        printf("R^2 below 0.9: the line explains little of how that segment's times vary "
               "(a flat segment, whose times differ by noise alone, has R^2 near 0); the "
               "residuals say how far its points lie from the line\n");
    if (off)
        printf("a max residual of %.0f %%: at that size the model is that far from what "
               "was measured, and compare will show an error that large there (a busy "
               "machine, or a time that is not a line in the size)\n",
               100 * worst);
}

/* A gap and its bandwidth as two cells, "-" for none. */
static void add_gap(table *t, double gap, double bandwidth)
{
    char a[UNITS_BUF], b[UNITS_BUF];
    if (isnan(gap)) {
        table_add(t, "-");
        table_add(t, "-");
        return;
    }
    table_add(t, "%s", units_time_digits(a, gap, 4));
    table_add(t, "%s", isinf(bandwidth) ? "inf" : units_bandwidth_str(b, bandwidth));
}

/* The fit's segments as a table; with gaps (the ping-pong's) the gap
 * columns too. */
static void print_segments(const calib_result *r, const fit_result *fit, bool gaps)
{
    const char *h[] = {"segment", "points", "alpha", "bandwidth", "R^2", "max residual",
                       "rms residual", "gap", "gap bandwidth", "posted gap", "posted bw"};
    table t;
    if (table_init(&t, gaps ? 11 : 7, h))
        return;
    for (size_t s = 0; s < fit->n; s++) {
        const fit_segment *f = &fit->seg[s];
        char range[80], al[UNITS_BUF], bw[UNITS_BUF];
        segment_range(range, sizeof range, r, f);
        table_add(&t, "%s", range);
        table_add(&t, "%zu", f->n);
        table_add(&t, "%s", units_time_digits(al, f->alpha, 4));
        double b = fit_bandwidth(f->beta);
        table_add(&t, "%s", isinf(b) ? "inf" : units_bandwidth_str(bw, b));
        table_add(&t, "%.4f", f->r2);
        table_add(&t, "%.1f %%", 100 * f->max_residual);
        table_add(&t, "%.1f %%", 100 * f->rms_residual);
        if (!gaps)
            continue;
        const machine_segment *m = &r->m.seg[s];
        add_gap(&t, m->gap, m->gap_bandwidth);
        add_gap(&t, m->posted_gap, m->posted_gap_bandwidth);
    }
    table_print(&t, stdout, 0);
    table_release(&t);
    print_notes(fit, gaps ? r->m.seg : NULL);
}

static void print_text(const calib_opts *o, const calib_result *r, const char *path)
{
    char a[UNITS_BUF], b[UNITS_BUF], e[UNITS_BUF], rate[32], lab[64] = "";
    if (o->netlab) {
        units_rate_str(rate, o->netlab);
        snprintf(lab, sizeof lab, " (netlab %s per port)", rate);
    }
    printf("calibrate %s%s on %s: pingpong between 2 ranks, %zu sizes %s..%s, eager limit "
           "%s, %s\n\n", o->backend, lab, r->m.host, r->n,
           units_size_str(a, r->points[0].bytes), units_size_str(b, r->points[r->n - 1].bytes),
           units_size_str(e, o->eager_limit), run_cache_words(o->cache));
    print_segments(r, &r->fit, true);
    printf("\nreference (the regime it was taken in, for compare):");
    for (size_t i = 0; i < r->m.nref; i++)
        printf("%s %s ping-pong %s one way", i ? "," : "",
               units_size_str(a, r->m.ref[i].bytes), units_time_digits(b, r->m.ref[i].time, 4));
    if (r->npassing) {
        printf("\n(taken %d times: 8 B read", r->npassing + 1);
        for (int i = 0; i < r->npassing; i++)
            printf("%s %s", i ? " and" : "", units_time_digits(a, r->passing[i], 4));
        printf(" first, in a passing regime: most of the %d probes after %s read another)",
               REGIME_CONFIRM, r->npassing > 1 ? "each" : "it");
    }
    printf("\n\ngap: each further message of a back-to-back stream adds gap + n / gap "
           "bandwidth (up to %u MiB);\nposted gap: the same when its receive was posted "
           "first (eager sizes)\n\n", CALIB_STREAM_TOP >> 20);
    printf("duplex: an exchange, both ranks sending to and receiving from the other at once\n\n");
    print_segments(r, &r->duplex, false);
    printf("\nreduce (one rank sums two buffers of %u MiB, the simulator's gamma):",
           CALIB_REDUCE_BYTES >> 20);
    for (int t = 0; t < MACHINE_NDTYPES; t++)
        printf("%s %s %s", t ? "," : "", cl_dtype_name((cl_dtype)t),
               units_bandwidth_str(a, r->m.reduce_bandwidth[t]));
    printf("\n\n");
    regime_print(stdout, &r->gate, "regime: ");
    printf("model written to %s\n", path);
}

/* A gap and its bandwidth under their keys, nothing for none. */
static void json_gap(json_writer *w, const char *key, const char *bw_key, double gap,
                     double bandwidth)
{
    if (isnan(gap))
        return;
    json_kv_number(w, key, gap);
    if (isinf(bandwidth))
        json_kv_string(w, bw_key, "inf");
    else
        json_kv_number(w, bw_key, bandwidth);
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
        double b = fit_bandwidth(f->beta);
        if (isinf(b))
            json_kv_string(w, "bandwidth_Bps", "inf");
        else
            json_kv_number(w, "bandwidth_Bps", b);
        json_kv_number(w, "r2", f->r2);
        json_kv_number(w, "max_residual_pct", 100 * f->max_residual);
        json_kv_number(w, "rms_residual_pct", 100 * f->rms_residual);
        const machine_segment *m = &r->m.seg[s];
        if (gaps) {
            json_gap(w, "gap_s", "gap_bandwidth_Bps", m->gap, m->gap_bandwidth);
            json_gap(w, "posted_gap_s", "posted_gap_bandwidth_Bps", m->posted_gap,
                     m->posted_gap_bandwidth);
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
    if (o->netlab)
        json_kv_number(&w, "netlab_port_Bps", o->netlab);
    json_kv_uint(&w, "ranks", 2);
    json_kv_string(&w, "host", r->m.host);
    json_kv_uint(&w, "eager_limit_bytes", o->eager_limit);
    json_kv_string(&w, "cache", cache_mode_name(o->cache));
    json_kv_string(&w, "machine_file", path);
    json_key(&w, "reduce_bandwidth_Bps");
    json_begin_object(&w);
    for (int t = 0; t < MACHINE_NDTYPES; t++)
        json_kv_number(&w, cl_dtype_name((cl_dtype)t), r->m.reduce_bandwidth[t]);
    json_end_object(&w);
    json_segments(&w, "segments", r, &r->fit, true);
    json_segments(&w, "duplex_segments", r, &r->duplex, false);
    json_key(&w, "reference");
    json_begin_array(&w);
    for (size_t i = 0; i < r->m.nref; i++) {
        json_begin_object(&w);
        json_kv_uint(&w, "bytes", r->m.ref[i].bytes);
        json_kv_number(&w, "time_s", r->m.ref[i].time);
        json_end_object(&w);
    }
    json_end_array(&w);
    json_key(&w, "reference_passing_s"); /* 8 B probes taken again */
    json_begin_array(&w);
    for (int i = 0; i < r->npassing; i++)
        json_number(&w, r->passing[i]);
    json_end_array(&w);
    regime_json(&w, &r->gate);
    json_key(&w, "results");
    json_begin_array(&w);
    for (size_t i = 0; i < r->n; i++) {
        const calib_point *p = &r->points[i];
        compare_row row = {.bytes = p->bytes, .modeled = machine_time(&r->m, p->bytes),
                           .measured = p->t};
        json_begin_object(&w);
        json_kv_uint(&w, "bytes", p->bytes);
        json_kv_uint(&w, "iters", (uint64_t)p->iters);
        json_stats(&w, "time_s", &p->t);
        json_kv_number(&w, "modeled_s", row.modeled);
        json_kv_number(&w, "error_pct", compare_error_pct(&row));
        if (!isnan(p->gap))
            json_kv_number(&w, "gap_s", p->gap);
        if (!isnan(p->posted_gap))
            json_kv_number(&w, "posted_gap_s", p->posted_gap);
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
        {"strict", no_argument, NULL, OPT_STRICT},
        {"bind", required_argument, NULL, OPT_BIND},
        {"listen", required_argument, NULL, OPT_LISTEN},
        {"provider", required_argument, NULL, OPT_PROVIDER},
        {"netlab", required_argument, NULL, OPT_NETLAB},
        {"cache", required_argument, NULL, OPT_CACHE},
        {"regime-wait", required_argument, NULL, OPT_REGIME_WAIT},
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
        case OPT_STRICT: o->strict = true; break;
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
        case OPT_NETLAB:
            if (run_parse_netlab(optarg, &o->netlab))
                return CLI_EXIT_USAGE;
            backend_give(&given, BOPT_NETLAB, "netlab", optarg);
            break;
        case OPT_CACHE:
            if (run_parse_cache(optarg, &o->cache))
                return CLI_EXIT_USAGE;
            break;
        case OPT_REGIME_WAIT:
            if (regime_parse_wait(optarg, &o->regime_wait))
                return CLI_EXIT_USAGE;
            break;
        case OPT_CSV: *fmt = CLI_CSV; break;
        case OPT_JSON: *fmt = CLI_JSON; break;
        case 'h': fputs(cmd_calibrate_usage, stdout); return -1;
        default: return cli_bad_option("calibrate", opts, argv, c);
        }
    }
    int rc = cli_no_extra("calibrate", argc, argv);
    if (rc || (rc = calibrate_find_backend("calibrate", o->backend, &given, &o->be)))
        return rc;
    return calibrate_check_netlab(o->netlab, o->listen);
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
        if (cli_make_dirs(probe) != 0)
            return cli_error("cannot write the machine file '%s': cannot create its folder: "
                             "%s (choose another with --out)", path, strerror(errno));
    }
    cl_diag d = {{0}};
    file_out o;
    if (file_out_open(&o, path, "the machine file", &d)) {
        fprintf(stderr, "commlab: %s (choose another with --out)\n", d.msg);
        return CLI_EXIT_USAGE;
    }
    file_out_abort(&o);
    return 0;
}

int cmd_calibrate(int argc, char **argv)
{
    calib_opts o = {.eager_limit = RUN_EAGER_LIMIT, .bind = true, .progress = isatty(2)};
    const char *out = NULL;
    cli_format fmt = CLI_TEXT;
    int rc = regime_default_wait(&o.regime_wait);
    if (!rc)
        rc = parse(argc, argv, &o, &out, &fmt);
    if (rc)
        return rc == -1 ? CLI_EXIT_OK : rc;
    /* mpi: every process of a 2-process MPI job runs the calibration. */
    if (o.be->join && (rc = o.be->join(2, &o.eager_limit, argc, argv)) >= 0)
        return rc;
    if (o.eager_limit < 1 || o.eager_limit >= (o.quick ? 4u << 20 : 64u << 20))
        return cli_error("--eager-limit must leave sizes on both sides of it: 1 B up to "
                         "below %s, got %llu", o.quick ? "4 MiB" : "64 MiB",
                         (unsigned long long)o.eager_limit);
    char path[1100], provider[32];
    if ((rc = backend_check_eager(o.be, o.eager_limit)) ||
        (rc = calibrate_provider(o.be, o.provider, provider, sizeof provider)))
        return rc;
    if (out)
        snprintf(path, sizeof path, "%s", out);
    else if ((rc = calibrate_default_path(path, sizeof path, o.backend, provider, o.netlab)))
        return rc;
    if ((rc = check_writable(path)))
        return rc;
    run_lab lab = {0};
    if (o.netlab && (rc = run_lab_open(&lab, 2, o.netlab)))
        return rc;
    o.lab = lab.nl;
    calib_result r;
    rc = calibrate_measure(&o, &r);
    if (rc == CLI_EXIT_OK && regime_mixed(&r.gate))
        rc = mixed_regimes(&o, &r.gate);
    if (rc == CLI_EXIT_OK && calibrate_reduce(r.m.reduce_bandwidth))
        rc = cli_error("out of memory measuring the reduction");
    int lab_rc = run_lab_close(&lab);
    if (rc == CLI_EXIT_OK && lab_rc)
        rc = lab_rc; /* interrupted after its last run: nothing written */
    if (rc == CLI_EXIT_OK && backend_speaks(o.be)) {
        cl_diag d = {{0}};
        if (machine_save(&r.m, path, &d))
            rc = cli_diag(&d, CLI_EXIT_USAGE);
    }
    if (rc == CLI_EXIT_OK) {
        if (fmt == CLI_JSON) {
            print_json(&o, &r, path);
        } else if (fmt == CLI_CSV) {
            rc = print_csv(&o, &r);
        } else {
            print_text(&o, &r, path);
        }
    }
    calibrate_release(&r);
    return rc;
}
