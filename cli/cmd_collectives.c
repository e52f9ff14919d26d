/* cmd_collectives.c - `commlab collectives COLLECTIVE`: every algorithm of
 * one collective over a range of sizes on a --tier mesh, simulated beside
 * its alpha-beta formula (core/formula.h), and which algorithm is fastest
 * where: the latency-bound / bandwidth-bound crossover of chapter 04. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/plot.h"
#include "cli/rows.h"
#include "cli/run_size.h"
#include "core/formula.h"
#include "core/json.h"
#include "core/pattern.h"
#include "core/table.h"
#include "core/tier.h"
#include "core/units.h"

const char cmd_collectives_usage[] =
    "usage: commlab collectives COLLECTIVE [options]\n"
    "\n"
    "Runs every algorithm of COLLECTIVE (`commlab patterns` lists them) in the\n"
    "simulator at each size, with no payload, and prints each one's time\n"
    "beside its alpha-beta formula (every message alone on its link: a + n/B;\n"
    "for a reduction, reducing m bytes costs a rank m g, g = gamma = 1 / the\n"
    "tier's reduce_bandwidth), then which algorithm is fastest over which sizes.  Where the two differ,\n"
    "messages shared a port; a formula marked ~ prices its algorithm only\n"
    "roughly at these K and n (blocks of unequal size, or a tree or recursive\n"
    "algorithm on K not a power of two).\n"
    "\n"
    "  -n, --ranks N            ranks (default 8)\n"
    "  -s, --sizes LIST         sizes: 8,1KiB,4MiB or 8:1GiB:x4 (the default)\n"
    "  -t, --tier NAME          every rank on one port of this tier (default nvlink)\n"
    "  -c, --config FILE        tiers file (default configs/tiers.yaml)\n"
    "      --sharing HOW        maxmin (the default): messages through one port share\n"
    "                           it; none: every message alone, as the formulas price\n"
    "      --eager-limit SIZE   largest message sent eagerly (default 64KiB)\n"
    "      --chunk SIZE         broadcast-chain: bytes per piece (default n/8)\n"
    "      --group G            allreduce-hierarchical: ranks per group (default K)\n"
    "      --reduce-bandwidth RATE  how fast a rank reduces, instead of the tier's\n"
    "                           reduce_bandwidth; inf: reducing is free (gamma 0)\n"
    "      --between A,B        instead: the size n* at which the formulas of\n"
    "                           algorithms A and B give the same time (the smaller\n"
    "                           is faster below it, the other above), found by\n"
    "                           bisection; nothing is simulated\n"
    "      --csv, --json        machine-readable results\n"
    "      --plot[=TERMS]       also write plots/out/collectives-COLLECTIVE.csv and\n"
    "                           draw time against size per algorithm, formulas\n"
    "                           dashed, the fastest ringed (png,svg by default)\n"
    "  -h, --help               this text\n"
    "\n"
    "examples:\n"
    "  commlab collectives allreduce -n 16 --tier infiniband --sizes 8:1GiB:x4\n"
    "  commlab collectives broadcast -n 8 --sharing none --plot\n"
    "  commlab collectives allreduce -n 16 --tier infiniband --between tree,ring\n";

enum {
    OPT_CSV = 256, OPT_JSON, OPT_EAGER, OPT_CHUNK, OPT_GROUP, OPT_SHARING, OPT_PLOT,
    OPT_BETWEEN, OPT_REDUCE_BW,
};

typedef struct coll_cmd {
    const collective_info *coll;
    run_opts run;      /* what every algorithm's runs share */
    const char *tier, *config;
    unsigned plot;     /* PLOT_* bits, 0: no --plot */
    const char *between; /* --between A,B */
    cl_tier t;         /* the tier: the formulas' alpha and B */
    size_t nalgos;
    plot_coll_row *rows; /* nsizes x nalgos, size by size */
    bool *exact;         /* per row: formula_exact */
} coll_cmd;

static int parse_args(int argc, char **argv, coll_cmd *o)
{
    static const struct option opts[] = {
        {"ranks", required_argument, NULL, 'n'},
        {"sizes", required_argument, NULL, 's'},
        {"tier", required_argument, NULL, 't'},
        {"config", required_argument, NULL, 'c'},
        {"sharing", required_argument, NULL, OPT_SHARING},
        {"eager-limit", required_argument, NULL, OPT_EAGER},
        {"chunk", required_argument, NULL, OPT_CHUNK},
        {"group", required_argument, NULL, OPT_GROUP},
        {"csv", no_argument, NULL, OPT_CSV},
        {"json", no_argument, NULL, OPT_JSON},
        {"plot", optional_argument, NULL, OPT_PLOT},
        {"between", required_argument, NULL, OPT_BETWEEN},
        {"reduce-bandwidth", required_argument, NULL, OPT_REDUCE_BW},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *sizes = "8:1GiB:x4";
    cl_diag d = {{0}};
    int c, rc = 0, idx = 0;
    while (!rc && (c = getopt_long(argc, argv, ":n:s:t:c:h", opts, &idx)) != -1) {
        switch (c) {
        case 'n': rc = cli_parse_int("--ranks", optarg, 2, 1 << 20, &o->run.ranks); break;
        case 's': sizes = optarg; break;
        case 't': o->tier = optarg; break;
        case 'c': o->config = optarg; break;
        case OPT_SHARING: rc = run_parse_sharing(optarg, &o->run); break;
        case OPT_EAGER:
            if (units_parse_size(optarg, "--eager-limit", &o->run.eager_limit, &d))
                rc = cli_diag(&d, CLI_EXIT_USAGE);
            break;
        case OPT_CHUNK: case OPT_GROUP:
            rc = run_pattern_option(opts[idx].name, optarg, &o->run.args);
            break;
        case OPT_CSV: o->run.fmt = CLI_CSV; break;
        case OPT_JSON: o->run.fmt = CLI_JSON; break;
        case OPT_PLOT: rc = cli_plot_terms(optarg, &o->plot); break;
        case OPT_BETWEEN: o->between = optarg; break;
        case OPT_REDUCE_BW: rc = run_parse_reduce_bandwidth(optarg, &o->run.sim.reduce_bw); break;
        case 'h': fputs(cmd_collectives_usage, stdout); return -1;
        default: return cli_bad_option("collectives", opts, argv, c);
        }
    }
    if (rc)
        return rc;
    if (optind >= argc)
        return cli_error("collectives: which collective? (`commlab patterns` lists them)\n"
                         "try 'commlab help collectives'");
    const char *name = argv[optind++];
    if ((rc = cli_no_extra("collectives", argc, argv)))
        return rc;
    o->coll = collective_find(name);
    if (!o->coll) {
        const collective_info *k;
        char list[256];
        int used = 0;
        list[0] = 0;
        for (size_t i = 0; (k = collective_at(i)) != NULL; i++)
            cli_appendf(list, sizeof list, &used, "%s%s", i ? ", " : "", k->name);
        return cli_error("unknown collective '%s' (%s)", name, list);
    }
    if (units_parse_sizes(sizes, "--sizes", &o->run.sizes, &o->run.nsizes, &d))
        return cli_diag(&d, CLI_EXIT_USAGE);
    while (collective_algo_at(o->coll, o->nalgos))
        o->nalgos++;
    return 0;
}

/* ---- --between: where two formulas cross ---- */

/* formula a minus formula b at n bytes. */
static double gap(const pattern_info *a, const pattern_info *b, formula_args f, double n)
{
    f.bytes = (uint64_t)n;
    return a->formula(&f) - b->formula(&f);
}

/* The size n* in [8, 2^50] (from one double) where a and b swap places,
 * by bisection on a log scale to one byte: 0 and *n set, or -1 when one
 * is faster at every size (*n unchanged). */
static int crossing(const pattern_info *a, const pattern_info *b, const formula_args *f,
                    double *n)
{
    double lo = 8, hi = 1125899906842624.0;
    double glo = gap(a, b, *f, lo), ghi = gap(a, b, *f, hi);
    if (glo == 0)
        return *n = lo, 0;
    if ((glo < 0) == (ghi < 0))
        return -1;
    while (hi - lo > 1) {
        double mid = floor(sqrt(lo * hi));
        if (mid <= lo)
            mid = lo + 1;
        if (mid >= hi)
            mid = hi - 1;
        if ((gap(a, b, *f, mid) < 0) == (glo < 0))
            lo = mid;
        else
            hi = mid;
    }
    *n = hi;
    return 0;
}

static int run_between(const coll_cmd *o)
{
    char an[64], list[256];
    const char *comma = strchr(o->between, ',');
    if (!comma || (size_t)(comma - o->between) >= sizeof an)
        return cli_error("--between takes two algorithms, A,B, got '%s'", o->between);
    memcpy(an, o->between, (size_t)(comma - o->between));
    an[comma - o->between] = 0;
    const pattern_info *a = collective_algo(o->coll, an);
    const pattern_info *b = collective_algo(o->coll, comma + 1);
    if (!a || !b)
        return cli_error("unknown algorithm '%s' of %s (%s)", a ? comma + 1 : an,
                         o->coll->name, collective_algo_list(o->coll, list, sizeof list));
    formula_args f = {
        .ranks = o->run.ranks, .alpha = o->t.alpha, .bandwidth = o->t.bandwidth,
        .eager_limit = o->run.eager_limit, .chunk = o->run.args.chunk,
        .group = o->run.args.group, .gamma = tier_gamma(&o->t),
    };
    double n = 0;
    bool found = crossing(a, b, &f, &n) == 0;
    const pattern_info *small = gap(a, b, f, 8) < 0 ? a : b;
    const pattern_info *large = small == a ? b : a;
    if (o->run.fmt == CLI_JSON) {
        json_writer w;
        json_init(&w, stdout, true);
        json_begin_object(&w);
        json_kv_string(&w, "command", "collectives");
        json_kv_string(&w, "collective", o->coll->name);
        json_kv_uint(&w, "ranks", (uint64_t)o->run.ranks);
        json_kv_number(&w, "alpha_s", o->t.alpha);
        json_kv_number(&w, "bandwidth_Bps", o->t.bandwidth);
        if (o->coll->reduces)
            json_kv_number(&w, "gamma_s_per_byte", f.gamma);
        json_kv_string(&w, "below", small->algo);
        json_kv_string(&w, "above", found ? large->algo : small->algo);
        json_key(&w, "crossover_bytes");
        if (found)
            json_number(&w, n);
        else
            json_string(&w, "none");
        json_finish(&w);
    } else if (o->run.fmt == CLI_CSV) {
        printf("algorithm_a,algorithm_b,crossover_bytes,below,above\n");
        printf("%s,%s,%.0f,%s,%s\n", a->algo, b->algo, found ? n : 0, small->algo,
               found ? large->algo : small->algo);
    } else if (!found) {
        printf("%s is faster than %s at every size (formulas, K = %d, %s)\n", small->algo,
               large->algo, o->run.ranks, o->t.name);
    } else {
        char sz[UNITS_BUF];
        char rb[UNITS_BUF + 16] = "", bw[UNITS_BUF];
        if (o->coll->reduces)
            snprintf(rb, sizeof rb, ", reduce %s", f.gamma > 0
                     ? units_bandwidth_str(bw, o->t.reduce_bandwidth) : "free");
        printf("%s: %s\n%s: %s\n\nK = %d, tier %s%s: the formulas cross at n* = %.0f B "
               "(%s): %s is faster below, %s above\n", a->algo, a->formula_text, b->algo,
               b->formula_text, o->run.ranks, o->t.name, rb, n,
               units_size_str(sz, (uint64_t)n), small->algo, large->algo);
    }
    return CLI_EXIT_OK;
}

/* Runs every algorithm at every size into o->rows; the first failure's
 * status (already reported), or 0. */
static int run_all(coll_cmd *o, struct sim_net *net)
{
    size_t na = o->nalgos;
    for (size_t s = 0; s < o->run.nsizes; s++) {
        formula_args f = {
            .ranks = o->run.ranks, .bytes = o->run.sizes[s], .alpha = o->t.alpha,
            .bandwidth = o->t.bandwidth, .eager_limit = o->run.eager_limit,
            .chunk = o->run.args.chunk, .group = o->run.args.group,
            .gamma = tier_gamma(&o->t),
        };
        size_t best = 0;
        for (size_t a = 0; a < na; a++) {
            plot_coll_row *r = &o->rows[s * na + a];
            o->run.pattern = collective_algo_at(o->coll, a);
            run_row row;
            int status = row_sim_size_on(&o->run, net, o->run.sizes[s], NULL, &row);
            if (status)
                return status;
            *r = (plot_coll_row){.bytes = row.bytes, .algo = o->run.pattern->algo,
                                 .simulated = row.t.median,
                                 .formula = o->run.pattern->formula(&f)};
            o->exact[s * na + a] = formula_exact(o->run.pattern->formula, &f);
            if (r->simulated < o->rows[s * na + best].simulated)
                best = a;
        }
        o->rows[s * na + best].best = true;
    }
    return 0;
}

static void print_text(const coll_cmd *o, const struct sim_net *net)
{
    char el[UNITS_BUF], a[UNITS_BUF], b[UNITS_BUF];
    size_t na = o->nalgos, n = o->run.nsizes * na;
    char rb[UNITS_BUF + 16] = "";
    if (o->coll->reduces)
        snprintf(rb, sizeof rb, ", reduce %s", tier_gamma(&o->t) > 0
                 ? units_bandwidth_str(b, o->t.reduce_bandwidth) : "free");
    printf("%s on sim: %d ranks, %s (alpha %s, %s%s), sharing %s, eager limit %s, no payload\n\n",
           o->coll->name, o->run.ranks, row_sim_net_describe(net),
           units_time_str(a, o->t.alpha), units_bandwidth_str(b, o->t.bandwidth), rb,
           run_sharing_name(o->run.sim.sharing, true), units_size_str(el, o->run.eager_limit));
    const char *fh[] = {"algorithm", o->coll->reduces
                        ? "alpha-beta-gamma time, each message alone (a = alpha, B; g = gamma "
                          "= 1 / reduce)"
                        : "alpha-beta time, each message alone (a = alpha, B)"};
    table t;
    if (table_init(&t, 2, fh))
        return;
    for (size_t i = 0; i < na; i++) {
        const pattern_info *p = collective_algo_at(o->coll, i);
        table_add(&t, "%s", p->algo);
        table_add(&t, "%s", p->formula_text);
    }
    table_print(&t, stdout, 0);
    table_release(&t);
    const char *h[] = {"size", "algorithm", "simulated", "formula", "fastest"};
    if (table_init(&t, 5, h))
        return;
    bool approx = false;
    for (size_t i = 0; i < n; i++) {
        const plot_coll_row *r = &o->rows[i];
        char sz[UNITS_BUF], sim[UNITS_BUF], fo[UNITS_BUF];
        table_add(&t, "%s", i % na == 0 ? units_size_str(sz, r->bytes) : "");
        table_add(&t, "%s", r->algo);
        table_add(&t, "%s", units_time_digits(sim, r->simulated, 4));
        table_add(&t, "%s%s", o->exact[i] ? "" : "~", units_time_digits(fo, r->formula, 4));
        table_add(&t, "%s", r->best ? "*" : "");
        approx |= !o->exact[i];
    }
    printf("\n");
    table_print(&t, stdout, 0);
    table_release(&t);
    if (approx)
        printf("~: the formula is close, not exact, at this size: the blocks are not all alike "
               "(n is not K whole doubles, or a chain's pieces differ) or a tree is cut (K not "
               "a power of two); the simulated time is the exact one\n");
    /* The winner over runs of sizes. */
    printf("\nfastest:\n");
    for (size_t s = 0; s < o->run.nsizes;) {
        const char *w = NULL;
        for (size_t a = 0; a < na; a++)
            if (o->rows[s * na + a].best)
                w = o->rows[s * na + a].algo;
        size_t e = s;
        while (e + 1 < o->run.nsizes) {
            const char *next = NULL;
            for (size_t a = 0; a < na; a++)
                if (o->rows[(e + 1) * na + a].best)
                    next = o->rows[(e + 1) * na + a].algo;
            if (strcmp(next, w) != 0)
                break;
            e++;
        }
        char lo[UNITS_BUF], hi[UNITS_BUF];
        if (e == s)
            printf("  %s: %s\n", units_size_str(lo, o->run.sizes[s]), w);
        else
            printf("  %s to %s: %s\n", units_size_str(lo, o->run.sizes[s]),
                   units_size_str(hi, o->run.sizes[e]), w);
        s = e + 1;
    }
}

static void print_csv(const coll_cmd *o)
{
    const char *h[] = {"bytes", "algorithm", "simulated_s", "formula_s", "formula_exact",
                       "best"};
    table t;
    if (table_init(&t, 6, h))
        return;
    for (size_t i = 0; i < o->run.nsizes * o->nalgos; i++) {
        const plot_coll_row *r = &o->rows[i];
        table_add(&t, "%llu", (unsigned long long)r->bytes);
        table_add(&t, "%s", r->algo);
        table_add(&t, "%.12g", r->simulated);
        table_add(&t, "%.12g", r->formula);
        table_add(&t, "%s", o->exact[i] ? "yes" : "no");
        table_add(&t, "%s", r->best ? "yes" : "no");
    }
    table_print_csv(&t, stdout);
    table_release(&t);
}

static void print_json(const coll_cmd *o, const struct sim_net *net)
{
    json_writer w;
    json_init(&w, stdout, true);
    json_begin_object(&w);
    json_kv_string(&w, "command", "collectives");
    json_kv_string(&w, "collective", o->coll->name);
    json_kv_string(&w, "backend", "sim");
    json_kv_uint(&w, "ranks", (uint64_t)o->run.ranks);
    json_kv_string(&w, "network", row_sim_net_describe(net));
    json_kv_number(&w, "alpha_s", o->t.alpha);
    json_kv_number(&w, "bandwidth_Bps", o->t.bandwidth);
    if (o->coll->reduces)
        json_kv_number(&w, "gamma_s_per_byte", tier_gamma(&o->t));
    json_kv_string(&w, "sharing", run_sharing_name(o->run.sim.sharing, false));
    json_kv_uint(&w, "eager_limit_bytes", o->run.eager_limit);
    json_key(&w, "algorithms");
    json_begin_array(&w);
    for (size_t i = 0; i < o->nalgos; i++) {
        const pattern_info *p = collective_algo_at(o->coll, i);
        json_begin_object(&w);
        json_kv_string(&w, "algorithm", p->algo);
        json_kv_string(&w, "pattern", p->name);
        json_kv_string(&w, "formula", p->formula_text);
        json_end_object(&w);
    }
    json_end_array(&w);
    json_key(&w, "results");
    json_begin_array(&w);
    for (size_t i = 0; i < o->run.nsizes * o->nalgos; i++) {
        const plot_coll_row *r = &o->rows[i];
        json_begin_object(&w);
        json_kv_uint(&w, "bytes", r->bytes);
        json_kv_string(&w, "algorithm", r->algo);
        json_kv_number(&w, "simulated_s", r->simulated);
        json_kv_number(&w, "formula_s", r->formula);
        json_key(&w, "formula_exact");
        json_bool(&w, o->exact[i]);
        json_key(&w, "best");
        json_bool(&w, r->best);
        json_end_object(&w);
    }
    json_finish(&w);
}

int cmd_collectives(int argc, char **argv)
{
    coll_cmd o = {
        .run = {.backend = "sim", .ranks = 8, .iters = 1, .warmup = 0,
                .sim.model = "alphabeta", .eager_limit = RUN_EAGER_LIMIT, .payload = false,
                .fmt = CLI_TEXT, .args = {.microbatches = 4}},
    };
    int rc = parse_args(argc, argv, &o);
    if (rc) {
        free(o.run.sizes);
        return rc == -1 ? CLI_EXIT_OK : rc;
    }
    tier_set ts;
    if ((rc = cli_load_tiers(&ts, o.config, o.tier ? o.tier : "nvlink"))) {
        free(o.run.sizes);
        return rc;
    }
    o.t = ts.tiers[0];
    tier_set_release(&ts);
    if (o.run.sim.reduce_bw > 0)
        o.t.reduce_bandwidth = o.run.sim.reduce_bw;
    if (o.between) {
        rc = run_between(&o);
        free(o.run.sizes);
        return rc;
    }
    run_env env = {0};
    struct sim_net *net = NULL;
    cl_diag d = {{0}};
    size_t n = o.run.nsizes * o.nalgos;
    o.rows = calloc(n, sizeof *o.rows);
    o.exact = calloc(n, sizeof *o.exact);
    if (!o.rows || !o.exact)
        rc = cli_error("out of memory");
    else if (row_sim_net_tier(&net, &o.t, o.run.ranks, &d))
        rc = cli_diag(&d, CLI_EXIT_USAGE);
    else if ((rc = run_all(&o, net)))
        rc = run_exit_code(rc, &env);
    if (rc == 0) {
        if (o.run.fmt == CLI_JSON)
            print_json(&o, net);
        else if (o.run.fmt == CLI_CSV)
            print_csv(&o);
        else
            print_text(&o, net);
    }
    if (rc == 0 && o.plot) {
        char what[PLOT_TITLE_MAX];
        snprintf(what, sizeof what, "%s on %d ranks, %s, sharing %s", o.coll->name, o.run.ranks,
                 row_sim_net_describe(net), run_sharing_name(o.run.sim.sharing, true));
        rc = cli_plot_collectives(o.coll->name, what, o.rows, n, o.plot,
                                  o.run.fmt == CLI_TEXT ? stdout : stderr);
    }
    row_sim_net_destroy(net);
    free(o.rows);
    free(o.exact);
    free(o.run.sizes);
    return rc;
}
