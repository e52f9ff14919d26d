/* cmd_cost.c - `commlab price` and `commlab sweep`: the alpha-beta model of
 * the course's tiers, without running anything. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "commlab.h"
#include "core/json.h"
#include "core/table.h"
#include "core/tier.h"
#include "core/units.h"

const char cmd_price_usage[] =
    "usage: commlab price [--bytes SIZE] [--tiers LIST] [--config FILE] [--csv|--json]\n"
    "                     [--plot[=TERMS]]\n"
    "\n"
    "Prices one message of SIZE bytes on each tier with the alpha-beta model\n"
    "T = alpha + n / bandwidth, and its ratio to the fastest tier.\n"
    "\n"
    "      --bytes SIZE    message size (default 256MiB); units B, KB, MB, GB,\n"
    "                      KiB, MiB, GiB (GB = 1e9 B, GiB = 2^30 B); K, M, G\n"
    "                      as nccl-tests and OSU read them (1M = 1 MiB); -b is\n"
    "                      --backend in every command, so not a size here\n"
    "  -t, --tiers LIST    comma-separated tier names (default: all in the config)\n"
    "  -c, --config FILE   tiers file (default: configs/tiers.yaml)\n"
    "      --csv           print CSV (bytes, seconds, bytes per second)\n"
    "      --json          print JSON\n"
    "      --plot[=TERMS]  also write plots/out/price.csv and draw it as bars\n"
    "                      (png,svg by default; dumb draws in the terminal;\n"
    "                      see commlab help plot)\n"
    "  -h, --help          this text\n"
    "\n"
    "example: commlab price --bytes 256MiB --tiers nvlink,ethernet\n";

const char cmd_sweep_usage[] =
    "usage: commlab sweep [--from SIZE] [--to SIZE] [--factor N | --sizes LIST]\n"
    "                     [--tiers LIST] [--config FILE] [--csv|--json]\n"
    "                     [--plot[=TERMS]]\n"
    "\n"
    "Prints T(n) = alpha + n / bandwidth on each tier over a range of sizes,\n"
    "marks each time latency-bound (L: n below the crossover) or bandwidth-\n"
    "bound (B), and gives each tier's crossover size n* = alpha x bandwidth,\n"
    "where the latency term equals the bandwidth term.\n"
    "\n"
    "      --from SIZE     first size (default 4KiB)\n"
    "      --to SIZE       last size (default 1GiB)\n"
    "      --factor N      geometric step (default 4)\n"
    "  -s, --sizes LIST    explicit sizes instead: 8,1KiB,4MiB or 8:4MiB:x4\n"
    "  -t, --tiers LIST    comma-separated tier names (default: all)\n"
    "  -c, --config FILE   tiers file (default: configs/tiers.yaml)\n"
    "      --csv           print CSV (one row per size and tier)\n"
    "      --json          print JSON\n"
    "      --plot[=TERMS]  also write plots/out/sweep.csv and draw T(n) per tier\n"
    "                      with the crossovers (png,svg by default; dumb draws in\n"
    "                      the terminal; see commlab help plot)\n"
    "  -h, --help          this text\n";

enum { OPT_CSV = 256, OPT_JSON, OPT_FROM, OPT_TO, OPT_FACTOR, OPT_PLOT, OPT_BYTES };

/* The unit in which the largest time reads between 1 and 1000. */
static void time_unit(double max_s, double *scale, const char **name)
{
    if (max_s >= 1.0) {
        *scale = 1.0, *name = "s";
    } else if (max_s >= 1e-3) {
        *scale = 1e3, *name = "ms";
    } else if (max_s >= 1e-6) {
        *scale = 1e6, *name = "us";
    } else {
        *scale = 1e9, *name = "ns";
    }
}

static void print_price(const tier_set *ts, uint64_t bytes, cli_format fmt)
{
    double best = INFINITY, worst = 0;
    for (size_t i = 0; i < ts->n; i++) {
        best = fmin(best, tier_time(&ts->tiers[i], bytes));
        worst = fmax(worst, tier_time(&ts->tiers[i], bytes));
    }
    if (fmt == CLI_JSON) {
        json_writer w;
        json_init(&w, stdout, true);
        json_begin_object(&w);
        json_kv_string(&w, "command", "price");
        json_kv_string(&w, "model", "alphabeta");
        json_kv_uint(&w, "bytes", bytes);
        json_key(&w, "tiers");
        json_begin_array(&w);
        for (size_t i = 0; i < ts->n; i++) {
            const cl_tier *t = &ts->tiers[i];
            json_begin_object(&w);
            json_kv_string(&w, "tier", t->name);
            json_kv_string(&w, "scope", t->scope);
            json_kv_number(&w, "alpha_s", t->alpha);
            json_kv_number(&w, "bandwidth_Bps", t->bandwidth);
            json_kv_number(&w, "time_s", tier_time(t, bytes));
            json_kv_number(&w, "ratio", tier_time(t, bytes) / best);
            json_end_object(&w);
        }
        json_finish(&w);
        return;
    }
    double scale;
    const char *unit;
    time_unit(worst, &scale, &unit);
    char th[32];
    snprintf(th, sizeof th, "T (%s)", unit);
    const char *csv_h[] = {"tier", "scope", "bytes", "alpha_s", "bandwidth_Bps", "time_s",
                           "ratio"};
    const char *txt_h[] = {"tier", "scope", "alpha (us)", "bandwidth (GB/s)", th, "ratio"};
    table t;
    if (fmt == CLI_CSV ? table_init(&t, 7, csv_h) : table_init(&t, 6, txt_h)) {
        cli_error("out of memory");
        return;
    }
    for (size_t i = 0; i < ts->n; i++) {
        const cl_tier *k = &ts->tiers[i];
        double time = tier_time(k, bytes);
        if (fmt == CLI_CSV) {
            table_add(&t, "%s", k->name);
            table_add(&t, "%s", k->scope);
            table_add(&t, "%llu", (unsigned long long)bytes);
            table_add(&t, "%.9g", k->alpha);
            table_add(&t, "%.9g", k->bandwidth);
            table_add(&t, "%.9g", time);
            table_add(&t, "%.6g", time / best);
        } else {
            table_add(&t, "%s", k->name);
            table_add(&t, "%s", k->scope);
            table_add(&t, "%.2f", k->alpha * 1e6);
            table_add(&t, "%.1f", k->bandwidth / 1e9);
            table_add(&t, "%.2f", time * scale);
            table_add(&t, "%.1fx", time / best);
        }
    }
    if (fmt == CLI_CSV) {
        table_print_csv(&t, stdout);
    } else {
        char sz[UNITS_BUF];
        printf("one message of %s (%llu bytes), T = alpha + n / bandwidth\n\n",
               units_size_str(sz, bytes), (unsigned long long)bytes);
        table_print(&t, stdout, 0);
    }
    table_release(&t);
}

int cmd_price(int argc, char **argv)
{
    static const struct option opts[] = {
        {"bytes", required_argument, NULL, OPT_BYTES}, {"tiers", required_argument, NULL, 't'},
        {"config", required_argument, NULL, 'c'}, {"csv", no_argument, NULL, OPT_CSV},
        {"json", no_argument, NULL, OPT_JSON},    {"help", no_argument, NULL, 'h'},
        {"plot", optional_argument, NULL, OPT_PLOT}, {NULL, 0, NULL, 0},
    };
    const char *bytes_s = "256MiB", *tiers = NULL, *config = NULL;
    cli_format fmt = CLI_TEXT;
    unsigned plot = 0;
    int c, rc;
    while ((c = getopt_long(argc, argv, ":t:c:h", opts, NULL)) != -1) {
        switch (c) {
        case OPT_BYTES: bytes_s = optarg; break;
        case 't': tiers = optarg; break;
        case 'c': config = optarg; break;
        case OPT_CSV: fmt = CLI_CSV; break;
        case OPT_JSON: fmt = CLI_JSON; break;
        case OPT_PLOT:
            if ((rc = cli_plot_terms(optarg, &plot)))
                return rc;
            break;
        case 'h': fputs(cmd_price_usage, stdout); return CLI_EXIT_OK;
        default: return cli_bad_option("price", opts, argv, c);
        }
    }
    rc = cli_no_extra("price", argc, argv);
    if (rc)
        return rc;
    uint64_t bytes;
    cl_diag d = {{0}};
    if (units_parse_size(bytes_s, "--bytes", &bytes, &d))
        return cli_diag(&d, CLI_EXIT_USAGE);
    tier_set ts;
    if ((rc = cli_load_tiers(&ts, config, tiers)))
        return rc;
    print_price(&ts, bytes, fmt);
    if (plot)
        rc = cli_plot_tiers(&ts, bytes, plot, fmt == CLI_TEXT ? stdout : stderr);
    tier_set_release(&ts);
    return rc;
}

static const char *regime(const cl_tier *t, uint64_t bytes)
{
    return (double)bytes < tier_crossover(t) ? "latency" : "bandwidth";
}

static void sweep_json(const tier_set *ts, const uint64_t *sizes, size_t n)
{
    json_writer w;
    json_init(&w, stdout, true);
    json_begin_object(&w);
    json_kv_string(&w, "command", "sweep");
    json_kv_string(&w, "model", "alphabeta");
    json_key(&w, "results");
    json_begin_array(&w);
    for (size_t i = 0; i < n; i++) {
        json_begin_object(&w);
        json_kv_uint(&w, "bytes", sizes[i]);
        json_key(&w, "tiers");
        json_begin_array(&w);
        for (size_t k = 0; k < ts->n; k++) {
            json_begin_object(&w);
            json_kv_string(&w, "tier", ts->tiers[k].name);
            json_kv_number(&w, "time_s", tier_time(&ts->tiers[k], sizes[i]));
            json_kv_string(&w, "regime", regime(&ts->tiers[k], sizes[i]));
            json_end_object(&w);
        }
        json_end_array(&w);
        json_end_object(&w);
    }
    json_end_array(&w);
    json_key(&w, "crossover");
    json_begin_array(&w);
    for (size_t k = 0; k < ts->n; k++) {
        json_begin_object(&w);
        json_kv_string(&w, "tier", ts->tiers[k].name);
        json_kv_number(&w, "bytes", tier_crossover(&ts->tiers[k]));
        json_end_object(&w);
    }
    json_finish(&w);
}

static void sweep_csv(const tier_set *ts, const uint64_t *sizes, size_t n)
{
    const char *h[] = {"bytes", "tier", "time_s", "regime", "crossover_bytes"};
    table t;
    if (table_init(&t, 5, h))
        return;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < ts->n; k++) {
            table_add(&t, "%llu", (unsigned long long)sizes[i]);
            table_add(&t, "%s", ts->tiers[k].name);
            table_add(&t, "%.9g", tier_time(&ts->tiers[k], sizes[i]));
            table_add(&t, "%s", regime(&ts->tiers[k], sizes[i]));
            table_add(&t, "%.9g", tier_crossover(&ts->tiers[k]));
        }
    table_print_csv(&t, stdout);
    table_release(&t);
}

static void sweep_text(const tier_set *ts, const uint64_t *sizes, size_t n)
{
    const char *h[1 + 16];
    size_t cols = ts->n < 16 ? ts->n : 16;
    h[0] = "size";
    for (size_t k = 0; k < cols; k++)
        h[1 + k] = ts->tiers[k].name;
    table t;
    if (table_init(&t, 1 + cols, h))
        return;
    char buf[UNITS_BUF];
    for (size_t i = 0; i < n; i++) {
        table_add(&t, "%s", units_size_str(buf, sizes[i]));
        for (size_t k = 0; k < cols; k++)
            table_add(&t, "%s %c", units_time_str(buf, tier_time(&ts->tiers[k], sizes[i])),
                      regime(&ts->tiers[k], sizes[i])[0] == 'l' ? 'L' : 'B');
    }
    printf("T(n) = alpha + n / bandwidth per tier; L latency-bound (n < n*), "
           "B bandwidth-bound\n\n");
    table_print(&t, stdout, 0);
    table_release(&t);

    const char *ch[] = {"tier", "alpha", "bandwidth", "crossover n* = alpha x B"};
    if (table_init(&t, 4, ch))
        return;
    for (size_t k = 0; k < ts->n; k++) {
        const cl_tier *tier = &ts->tiers[k];
        double x = tier_crossover(tier);
        char a[UNITS_BUF], b[UNITS_BUF], s[UNITS_BUF];
        table_add(&t, "%s", tier->name);
        table_add(&t, "%s", units_time_str(a, tier->alpha));
        table_add(&t, "%s", units_bandwidth_str(b, tier->bandwidth));
        table_add(&t, "%.0f B (%s)", x, units_size_str(s, (uint64_t)llround(x)));
    }
    printf("\nbelow n* a message is latency-bound (alpha dominates), above it "
           "bandwidth-bound\n\n");
    table_print(&t, stdout, 0);
    table_release(&t);
}

int cmd_sweep(int argc, char **argv)
{
    static const struct option opts[] = {
        {"from", required_argument, NULL, OPT_FROM},
        {"to", required_argument, NULL, OPT_TO},
        {"factor", required_argument, NULL, OPT_FACTOR},
        {"sizes", required_argument, NULL, 's'},
        {"tiers", required_argument, NULL, 't'},
        {"config", required_argument, NULL, 'c'},
        {"csv", no_argument, NULL, OPT_CSV},
        {"json", no_argument, NULL, OPT_JSON},
        {"plot", optional_argument, NULL, OPT_PLOT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *from_s = "4KiB", *to_s = "1GiB", *factor_s = "4", *sizes_s = NULL;
    const char *tiers = NULL, *config = NULL;
    bool range_given = false;
    cli_format fmt = CLI_TEXT;
    unsigned plot = 0;
    int c, rc;
    while ((c = getopt_long(argc, argv, ":s:t:c:h", opts, NULL)) != -1) {
        switch (c) {
        case OPT_FROM: from_s = optarg; range_given = true; break;
        case OPT_TO: to_s = optarg; range_given = true; break;
        case OPT_FACTOR: factor_s = optarg; range_given = true; break;
        case 's': sizes_s = optarg; break;
        case 't': tiers = optarg; break;
        case 'c': config = optarg; break;
        case OPT_CSV: fmt = CLI_CSV; break;
        case OPT_JSON: fmt = CLI_JSON; break;
        case OPT_PLOT:
            if ((rc = cli_plot_terms(optarg, &plot)))
                return rc;
            break;
        case 'h': fputs(cmd_sweep_usage, stdout); return CLI_EXIT_OK;
        default: return cli_bad_option("sweep", opts, argv, c);
        }
    }
    rc = cli_no_extra("sweep", argc, argv);
    if (rc)
        return rc;
    if (sizes_s && range_given)
        return cli_error("sweep: give either --sizes or --from/--to/--factor, not both");
    cl_diag d = {{0}};
    uint64_t *sizes = NULL, from, to, factor;
    size_t n = 0;
    int err;
    if (sizes_s)
        err = units_parse_sizes(sizes_s, "--sizes", &sizes, &n, &d);
    else
        err = units_parse_size(from_s, "--from", &from, &d) ||
                      units_parse_size(to_s, "--to", &to, &d) ||
                      units_parse_size(factor_s, "--factor", &factor, &d)
                  ? CL_EPARSE
                  : units_size_range(from, to, factor, "sweep", &sizes, &n, &d);
    if (err)
        return cli_diag(&d, CLI_EXIT_USAGE);
    tier_set ts;
    if ((rc = cli_load_tiers(&ts, config, tiers))) {
        free(sizes);
        return rc;
    }
    if (fmt == CLI_JSON)
        sweep_json(&ts, sizes, n);
    else if (fmt == CLI_CSV)
        sweep_csv(&ts, sizes, n);
    else
        sweep_text(&ts, sizes, n);
    if (plot)
        rc = cli_plot_sweep(&ts, sizes, n, plot, fmt == CLI_TEXT ? stdout : stderr);
    tier_set_release(&ts);
    free(sizes);
    return rc;
}
