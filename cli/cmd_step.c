/* cmd_step.c - `commlab step FILE.yaml`: one training step (chapter 07)
 * modeled on sim with no payload: its time, its compute, the bytes each
 * rank sends per kind of parallelism beside their closed forms
 * (core/step.h), and the pipeline's bubble.  With --backend shm, tcp or
 * rdma the step is measured on processes of this host and printed beside
 * its model, with the error.
 *
 * The ranks write their figures (cl_step.out) into memory they share
 * with this process: the simulator's ranks run in it, and a measured
 * run's ranks are forked from it after the figures' pages were mapped
 * shared.  mpi's ranks are processes mpirun starts, which share nothing
 * with it: a step is refused there. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/backend.h"
#include "cli/calibrate.h"
#include "cli/plot.h"
#include "cli/rows.h"
#include "cli/run_size.h"
#include "cli/step_run.h"
#include "core/json.h"
#include "core/step.h"
#include "core/table.h"
#include "core/trace.h"
#include "core/units.h"

const char cmd_step_usage[] =
    "usage: commlab step FILE.yaml [options]\n"
    "\n"
    "Models one training step of the model and layout FILE.yaml describes\n"
    "(configs/steps/ has examples; chapter 07 explains the keys) in the\n"
    "simulator, with no payload: per microbatch and layer the tensor-parallel\n"
    "all-reduces, the pipeline's activations and gradients (gpipe or 1f1b),\n"
    "the layers' compute, then the data-parallel gradients in buckets\n"
    "(all-reduced; ZeRO 1 and 2 reduce-scattered, then the parameters\n"
    "all-gathered; ZeRO 3 gathers and scatters each layer instead).  Prints\n"
    "the step time, the compute per rank, the bytes each rank sends per kind\n"
    "(tp, pp, dp) beside their closed forms and the most it waited on each,\n"
    "the pipeline bubble, and the memory a rank holds.\n"
    "\n"
    "  -t, --tier NAME          every rank on one port of this tier (default nvlink)\n"
    "      --topology FILE      a network of devices and links instead (one rank per\n"
    "                           device, in rank order)\n"
    "  -c, --config FILE        tiers file (default configs/tiers.yaml)\n"
    "      --sharing HOW        maxmin (the default): messages through one port share\n"
    "                           it; none: every message alone\n"
    "  -b, --backend NAME       sim (the default: modeled, no payload), or shm, tcp or\n"
    "                           rdma: measured on this host's processes, one a rank,\n"
    "                           with payload, beside its model (the error printed)\n"
    "      --model FILE         a measured step's model: this machine file (default:\n"
    "                           this host's for the backend, as `commlab compare`;\n"
    "                           where there is none, --tier or --topology, else tier\n"
    "                           nvlink, said so)\n"
    "  -i, --iters N            measured: timed steps (default 3)\n"
    "      --warmup N           measured: untimed steps first (default 1)\n"
    "      --algo KIND=NAME,... the collectives' algorithms (chapter 04; default ring):\n"
    "                           tp=NAME the tensor-parallel all-reduce; dp=NAME the\n"
    "                           gradient buckets' all-reduce (ZeRO 0 without\n"
    "                           overlap), or ZeRO 3's all-gather and reduce-scatter;\n"
    "                           the closed forms are the ring's\n"
    "      --scale F            a smaller model on the same layout (0 < F <= 1):\n"
    "                           hidden and sequence times F, the compute with the\n"
    "                           FLOPs (a measured step on a few cores)\n"
    "      --overlap            start each gradient bucket as soon as the last\n"
    "                           backward has made it, as DDP does (the file's\n"
    "                           `overlap: true`; not with ZeRO 3)\n"
    "      --sweep              sim: every tp x dp x pp of the file's ranks instead,\n"
    "                           the same model and batch (a layer's compute shared\n"
    "                           by its tp ranks, the microbatches by the replicas),\n"
    "                           each modeled, ranked by step time\n"
    "      --trace FILE.json    a Perfetto / chrome://tracing timeline of the step\n"
    "                           (a measured one: its steps; not with --sweep): per\n"
    "                           rank a track of its program (compute, waits) and one\n"
    "                           per kind of traffic (tp, pp, dp)\n"
    "      --plot[=TERMS]       sim: also draw the step (each layout's, with --sweep)\n"
    "                           as a stacked bar: the last rank's compute and waits\n"
    "                           (plots/out/step-NAME.csv and its figure; TERMS: png,\n"
    "                           svg, dumb)\n"
    "      --json               machine-readable results\n"
    "      --csv                sim: a row a step (a layout, with --sweep): tp, dp, pp,\n"
    "                           microbatches, step_s, pipeline_s, compute_s,\n"
    "                           bubble_ideal, tp_bytes, pp_bytes, dp_bytes (the most a\n"
    "                           rank sent of each kind), tp_wait_s, pp_wait_s,\n"
    "                           dp_wait_s (the most a rank waited on each),\n"
    "                           activation_bytes, model_state_bytes\n"
    "  -h, --help               this text\n"
    "\n"
    "examples:\n"
    "  commlab step configs/steps/small-8.yaml\n"
    "  commlab step configs/steps/small-8.yaml --overlap --tier infiniband\n"
    "  commlab step configs/steps/gpt3-175b-1024.yaml --tier infiniband --json\n"
    "  commlab step configs/steps/small-8.yaml --backend shm\n";

enum {
    OPT_JSON = 256, OPT_CSV, OPT_SHARING, OPT_TOPOLOGY, OPT_MODEL, OPT_WARMUP, OPT_SWEEP,
    OPT_OVERLAP, OPT_TRACE, OPT_PLOT, OPT_ALGO, OPT_SCALE
};

/* What the command line asks of the step itself. */
typedef struct step_flags {
    const char *file;
    const char *algo;  /* --algo: "tp=NAME,dp=NAME", or NULL */
    double scale;      /* --scale: 0 < f <= 1, or 0 when not given */
    bool sweep, overlap;
    unsigned plot;     /* PLOT_* bits, 0: no --plot */
} step_flags;

static const char *const kinds[3] = {"tp", "pp", "dp"};

/* --backend NAME into o->be: sim or a backend whose ranks this process
 * forks, which write their figures into memory shared with it (the
 * table refuses mpi for any command but run, compare and calibrate). */
static int parse_backend(const char *name, run_opts *o)
{
    int rc = backend_lookup(name, "step", false, &o->be);
    if (!rc)
        o->backend = o->be->name;
    return rc;
}

/* Collective `coll`'s algorithm `name` into *fn (ring: NULL, the
 * pattern's own) and its name, the table's, into *label; 0, or
 * CLI_EXIT_USAGE after naming the ones there are. */
static int algo_of(const char *coll, const char *name, const char *kind, cl_pattern_fn **fn,
                   const char **label)
{
    const collective_info *c = collective_find(coll);
    const pattern_info *p = c ? collective_algo(c, name) : NULL;
    if (!p) {
        char list[200];
        return cli_error("step: unknown --algo %s=%s: %s has %s", kind, name, coll,
                         c ? collective_algo_list(c, list, sizeof list) : "none");
    }
    *fn = strcmp(name, "ring") == 0 ? NULL : p->fn;
    *label = p->algo;
    return 0;
}

/* --algo tp=NAME,dp=NAME into t: tp's all-reduce; dp's all-reduce of the
 * buckets (ZeRO 0 without overlap: overlap and ZeRO 1 and 2 step the ring
 * by hand), or under ZeRO 3 its all-gather and reduce-scatter of that name. */
static int parse_algos(const char *text, cl_step *t)
{
    char buf[200];
    cli_textf(buf, sizeof buf, "%s", text);
    char *save = NULL;
    for (char *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq || eq == kv || !eq[1])
            return cli_error("step: --algo wants KIND=NAME pairs (tp=rd,dp=rabenseifner), got "
                             "'%s'", kv);
        *eq = 0;
        const char *name = eq + 1;
        int rc;
        if (strcmp(kv, "tp") == 0) {
            if ((rc = algo_of("allreduce", name, "tp", &t->tp_allreduce, &t->tp_algo)))
                return rc;
        } else if (strcmp(kv, "dp") == 0) {
            if (t->zero == 3)
                rc = algo_of("allgather", name, "dp", &t->dp_allgather, &t->dp_algo) ||
                     algo_of("reducescatter", name, "dp", &t->dp_reducescatter, &t->dp_algo);
            else if (strcmp(name, "ring") != 0 && (t->overlap || t->zero > 0))
                rc = cli_error("step: --algo dp=%s: %s steps the buckets' ring by hand; other "
                               "all-reduces serve ZeRO 0 without overlap", name,
                               t->overlap ? "overlap" : "ZeRO 1 and 2");
            else
                rc = algo_of("allreduce", name, "dp", &t->dp_allreduce, &t->dp_algo);
            if (rc)
                return CLI_EXIT_USAGE;
        } else {
            return cli_error("step: --algo: no kind '%s' (tp or dp)", kv);
        }
    }
    return 0;
}

static int parse_args(int argc, char **argv, run_opts *o, step_flags *f)
{
    static const struct option opts[] = {
        {"tier", required_argument, NULL, 't'},
        {"topology", required_argument, NULL, OPT_TOPOLOGY},
        {"config", required_argument, NULL, 'c'},
        {"sharing", required_argument, NULL, OPT_SHARING},
        {"backend", required_argument, NULL, 'b'},
        {"model", required_argument, NULL, OPT_MODEL},
        {"iters", required_argument, NULL, 'i'},
        {"warmup", required_argument, NULL, OPT_WARMUP},
        {"sweep", no_argument, NULL, OPT_SWEEP},
        {"overlap", no_argument, NULL, OPT_OVERLAP},
        {"trace", required_argument, NULL, OPT_TRACE},
        {"plot", optional_argument, NULL, OPT_PLOT},
        {"algo", required_argument, NULL, OPT_ALGO},
        {"scale", required_argument, NULL, OPT_SCALE},
        {"json", no_argument, NULL, OPT_JSON},
        {"csv", no_argument, NULL, OPT_CSV},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c, rc = 0;
    while (!rc && (c = getopt_long(argc, argv, ":t:c:b:i:h", opts, NULL)) != -1) {
        switch (c) {
        case 't': o->sim.tier = optarg; break;
        case OPT_TOPOLOGY: o->sim.topology = optarg; break;
        case 'c': o->sim.config = optarg; break;
        case OPT_SHARING: rc = run_parse_sharing(optarg, o); break;
        case 'b': rc = parse_backend(optarg, o); break;
        case OPT_MODEL: o->sim.model = optarg; break;
        case 'i': rc = cli_parse_int("--iters", optarg, 1, 1000000, &o->iters); break;
        case OPT_WARMUP: rc = cli_parse_int("--warmup", optarg, 0, 1000000, &o->warmup); break;
        case OPT_JSON: o->fmt = CLI_JSON; break;
        case OPT_CSV: o->fmt = CLI_CSV; break;
        case OPT_SWEEP: f->sweep = true; break;
        case OPT_OVERLAP: f->overlap = true; break;
        case OPT_TRACE: o->trace = optarg; break;
        case OPT_PLOT: rc = cli_plot_terms(optarg, &f->plot); break;
        case OPT_ALGO: f->algo = optarg; break;
        case OPT_SCALE: rc = cli_parse_double("--scale", optarg, 1e-6, 1, &f->scale); break;
        case 'h': fputs(cmd_step_usage, stdout); return -1;
        default: return cli_bad_option("step", opts, argv, c);
        }
    }
    if (rc)
        return rc;
    if (optind >= argc)
        return cli_error("step: which step file? (configs/steps/ has examples)\n"
                         "try 'commlab help step'");
    f->file = argv[optind++];
    if ((rc = cli_no_extra("step", argc, argv)))
        return rc;
    if (o->sim.tier && o->sim.topology)
        return cli_error("step: give either --tier or --topology, not both");
    if (o->sim.model && (o->sim.tier || o->sim.topology))
        return cli_error("step: --model prices every pair of ranks itself: give it or --%s, "
                         "not both", o->sim.tier ? "tier" : "topology");
    bool measured = o->be && o->be->measured;
    if (o->trace && f->sweep)
        return cli_error("step: --trace draws one step; --sweep runs one per layout");
    if (measured && f->plot)
        return cli_error("step: --plot draws modeled steps (sim); a measured one prints its "
                         "figures beside its model");
    if (measured && f->sweep)
        return cli_error("step: --sweep models every layout: it runs on sim only");
    if (measured && o->fmt == CLI_CSV)
        return cli_error("step: --csv is a modeled step's row (sim): a measured one prints "
                         "text or --json");
    if (!measured && (o->sim.model || o->iters || o->warmup >= 0))
        return cli_error("step: --%s is for a measured step (--backend shm, tcp or rdma); "
                         "the model is exact in one step",
                         o->sim.model ? "model" : o->iters ? "iters" : "warmup");
    return 0;
}

static void sum_ranks(const cl_step_rank *out, int n, double time, step_sum *s)
{
    *s = (step_sum){.time = time};
    for (int r = 0; r < n; r++) {
        const unsigned long long v[3] = {out[r].tp, out[r].pp, out[r].dp};
        for (int k = 0; k < 3; k++) {
            if (v[k] > s->most[k])
                s->most[k] = v[k];
            if (r == 0 || v[k] < s->least[k])
                s->least[k] = v[k];
        }
        if (out[r].compute > s->compute)
            s->compute = out[r].compute;
        if (out[r].pipe_end > s->pipe_end)
            s->pipe_end = out[r].pipe_end;
        const double w[3] = {out[r].tp_wait, out[r].pp_wait, out[r].dp_wait};
        for (int k = 0; k < 3; k++)
            if (w[k] > s->wait[k])
                s->wait[k] = w[k];
        if (out[r].peak_microbatches > s->peak)
            s->peak = out[r].peak_microbatches;
        if (out[r].end > out[s->last].end)
            s->last = r;
    }
    const cl_step_rank *l = &out[s->last];
    s->parts[0] = l->compute;
    s->parts[1] = l->tp_wait;
    s->parts[2] = l->pp_wait;
    s->parts[3] = l->dp_wait;
}

/* The closed form of the most a rank of kind k sends. */
static double closed_form(const cl_step *t, int k)
{
    if ((k == 0 && t->tp_allreduce) || (k == 2 && (t->dp_allreduce || t->dp_allgather)))
        return NAN; /* the closed forms are the ring's */
    if (k == 0)
        return step_tp_volume(t);
    if (k == 2)
        return step_dp_volume(t);
    return step_pp_volume(t, t->pp > 2 ? 1 : 0);
}

static const char *kind_words(const cl_step *t, int k)
{
    if (k == 0)
        return t->tp_allreduce ? "4 all-reduces of s b h per layer per microbatch"
                               : "4 ring all-reduces of s b h per layer per microbatch";
    if (k == 1)
        return "activations on, gradients back: s b h per microbatch";
    if (t->zero == 3)
        return "ZeRO 3: 2 all-gathers + 1 reduce-scatter per layer per microbatch";
    if (t->zero > 0)
        return "gradients reduce-scattered, parameters all-gathered, in buckets";
    return t->dp_allreduce ? "all-reduce of the stage's gradients, in buckets"
                           : "ring all-reduce of the stage's gradients, in buckets";
}

/* The bytes each rank sent per kind, beside their closed forms. */
static void print_kinds(const cl_step *t, const step_sum *s)
{
    char a[UNITS_BUF], b[UNITS_BUF], c[UNITS_BUF];
    const char *h[] = {"kind", "sent per rank (most)", "(least)", "closed form", "waited (most)",
                       "what"};
    table tb;
    if (table_init(&tb, 6, h))
        return;
    for (int k = 0; k < 3; k++) {
        table_add(&tb, "%s", kinds[k]);
        table_add(&tb, "%s", units_size_str(a, s->most[k]));
        table_add(&tb, "%s", units_size_str(b, s->least[k]));
        double cf = closed_form(t, k);
        table_add(&tb, "%s", isnan(cf) ? "ring only" : units_size_str(c, (uint64_t)cf));
        table_add(&tb, "%s", units_time_digits(a, s->wait[k], 4));
        table_add(&tb, "%s", kind_words(t, k));
    }
    table_print(&tb, stdout, 0);
    table_release(&tb);
}

static void print_kinds_json(json_writer *w, const cl_step *t, const step_sum *s)
{
    json_key(w, "sent_per_rank");
    json_begin_object(w);
    for (int k = 0; k < 3; k++) {
        json_key(w, kinds[k]);
        json_begin_object(w);
        json_kv_uint(w, "most_bytes", s->most[k]);
        json_kv_uint(w, "least_bytes", s->least[k]);
        if (!isnan(closed_form(t, k)))
            json_kv_number(w, "closed_form_bytes", closed_form(t, k));
        json_kv_number(w, "waited_s", s->wait[k]);
        json_end_object(w);
    }
    json_end_object(w);
    json_key(w, "memory");
    json_begin_object(w);
    json_kv_uint(w, "peak_microbatches", (uint64_t)s->peak);
    json_kv_uint(w, "peak_microbatches_closed_form", (uint64_t)step_peak_microbatches(t, 0));
    json_kv_number(w, "activation_bytes", step_activation_bytes(t, 0));
    json_key(w, "activation_bytes_per_stage");
    json_begin_array(w);
    for (int st = 0; st < t->pp; st++)
        json_number(w, step_activation_bytes(t, st));
    json_end_array(w);
    json_kv_number(w, "model_state_bytes", step_model_state_bytes(t));
    json_end_object(w);
}

void step_json_open(json_writer *w, const step_desc *sd, const char *backend)
{
    json_init(w, stdout, true);
    json_begin_object(w);
    json_kv_string(w, "command", "step");
    json_kv_string(w, "file", sd->path);
    json_kv_string(w, "backend", backend);
    json_kv_uint(w, "ranks", (uint64_t)step_ranks(&sd->step));
}

void step_print_csv(const cl_step *t, const step_sum *s, bool header)
{
    if (header)
        printf("tp,dp,pp,microbatches,step_s,pipeline_s,compute_s,bubble_ideal,tp_bytes,"
               "pp_bytes,dp_bytes,tp_wait_s,pp_wait_s,dp_wait_s,activation_bytes,"
               "model_state_bytes\n");
    printf("%d,%d,%d,%d,%.17g,%.17g,%.17g,%.17g,%llu,%llu,%llu,%.17g,%.17g,%.17g,%.17g,%.17g\n",
           t->tp, t->dp, t->pp, t->microbatches, s->time, s->pipe_end, s->compute,
           step_bubble_fraction(t), s->most[0], s->most[1], s->most[2], s->wait[0], s->wait[1],
           s->wait[2], step_activation_bytes(t, 0), step_model_state_bytes(t));
}

void step_print_layout(const step_desc *sd)
{
    const cl_step *t = &sd->step;
    char f[UNITS_BUF], b[UNITS_BUF], bk[UNITS_BUF];
    printf("  model: %d layers, hidden %ld, sequence %ld, microbatch size %ld, %zu-byte "
           "elements; per layer per microbatch forward %s, backward %s", t->layers,
           sd->hidden, sd->sequence, sd->mbs, t->dtype_bytes, units_time_str(f, t->t_fwd),
           units_time_str(b, t->t_bwd));
    if (sd->flop_rate > 0)
        printf(" (24 b s h^2 + 4 b s^2 h FLOPs forward over tp %d at %.4g TFLOP/s, backward "
               "twice)", t->tp, sd->flop_rate / 1e12);
    if (sd->scale < 1)
        printf("; the file's hidden and sequence scaled by %g (--scale), the compute with "
               "the FLOPs", sd->scale);
    printf("\n");
    printf("  layout: tp %d x dp %d x pp %d = %d ranks, %d microbatches, %s, ZeRO %d",
           t->tp, t->dp, t->pp, step_ranks(t), t->microbatches,
           t->one_f_one_b ? "1f1b" : "gpipe", t->zero);
    if (t->zero < 3)
        printf(", buckets of %s%s", units_size_str(bk, t->bucket),
               t->overlap ? ", overlapped" : "");
    if (t->tp_algo || t->dp_algo)
        printf("; algorithms tp %s, dp %s", t->tp_algo ? t->tp_algo : "ring",
               t->dp_algo ? t->dp_algo : "ring");
    printf("\n");
}

/* The rank that ended last, its step in parts. */
static void print_last(const step_sum *s)
{
    char p[4][UNITS_BUF], label[32];
    for (int k = 0; k < 4; k++)
        units_time_digits(p[k], s->parts[k], 4);
    snprintf(label, sizeof label, "last rank (%d)", s->last);
    printf("%-20s %s compute + waits: tp %s, pp %s (the bubble in it), dp %s\n", label, p[0],
           p[1], p[2], p[3]);
}

/* What follows the last backward, in words. */
static const char *after_words(const cl_step *t)
{
    if (t->zero == 3)
        return "nothing left: ZeRO 3 reduce-scattered per layer";
    if (t->overlap)
        return t->zero ? "the buckets the last backward did not hide, then the parameters' "
                         "all-gathers"
                       : "the gradient buckets the last backward did not hide";
    return t->zero ? "the gradients' reduce-scatters, then the parameters' all-gathers"
                   : "the data-parallel gradient all-reduce, after the whole backward";
}

/* Two lines: the activations stage 0 holds at its peak, the model states
 * a rank holds. */
static void print_memory(const cl_step *t, const step_sum *s)
{
    char a[UNITS_BUF], b[UNITS_BUF], l[UNITS_BUF];
    int last = t->pp - 1;
    printf("activations (peak)   %s on stage 0: %d microbatch%s held (the ranks counted %d) x "
           "%d layers x s b h (10 + 24/tp) bytes (Korthikanti et al., MLSys 2023)",
           units_size_str(a, (uint64_t)step_activation_bytes(t, 0)),
           step_peak_microbatches(t, 0), step_peak_microbatches(t, 0) == 1 ? "" : "es",
           s->peak, step_stage_layers(t));
    if (step_peak_microbatches(t, last) != step_peak_microbatches(t, 0))
        printf("; %s on stage %d (%d held)",
               units_size_str(l, (uint64_t)step_activation_bytes(t, last)), last,
               step_peak_microbatches(t, last));
    printf("\n");
    printf("model states         %s a rank: ZeRO %d of 16 bytes a parameter (mixed-precision "
           "Adam, Rajbhandari et al., SC 2020)\n",
           units_size_str(b, (uint64_t)step_model_state_bytes(t)), t->zero);
}

/* What simulating step t holds, roughly: the process (3 MiB), and per
 * rank its stack and the pipeline's 2m requests. */
static double sim_memory(const cl_step *t, const run_opts *o)
{
    double per_rank = (double)row_sim_stack_bytes(o) + 2.0 * t->microbatches * sizeof(void *);
    return 3.0 * 1024 * 1024 + step_ranks(t) * per_rank;
}

/* This process's peak resident memory so far, bytes (0 if unknown). */
static double peak_memory(void)
{
    struct rusage u;
    return getrusage(RUSAGE_SELF, &u) == 0 ? 1024.0 * (double)u.ru_maxrss : 0;
}

/* Before a long simulation: what it will hold, on stderr. */
static void say_memory(const cl_step *t, const run_opts *o)
{
    char m[UNITS_BUF], st[UNITS_BUF];
    if (step_ranks(t) >= 256 && o->fmt == CLI_TEXT)
        fprintf(stderr, "commlab: step: simulating %d ranks, about %s of memory (a %s stack "
                "each)\n", step_ranks(t), units_size_str(m, (uint64_t)sim_memory(t, o)),
                units_size_str(st, row_sim_stack_bytes(o)));
}

static void print_header(const step_desc *sd, const run_opts *o, const backend_desc *net)
{
    char el[UNITS_BUF], m[UNITS_BUF], st[UNITS_BUF];
    printf("training step on sim: %s\n", sd->path);
    step_print_layout(sd);
    printf("  network: %s, sharing %s, eager limit %s, no payload\n",
           net->note, run_sharing_name(o->sim.sharing, true),
           units_size_str(el, o->eager_limit));
    printf("  simulator: about %s of memory (%d ranks, a %s stack each; --json has the "
           "peak)\n\n", units_size_str(m, (uint64_t)sim_memory(&sd->step, o)),
           step_ranks(&sd->step), units_size_str(st, row_sim_stack_bytes(o)));
}

static void print_text(const step_desc *sd, const run_opts *o, const backend_desc *net,
                       const step_sum *s)
{
    const cl_step *t = &sd->step;
    char a[UNITS_BUF];
    print_header(sd, o, net);
    printf("step time            %s\n", units_time_digits(a, s->time, 6));
    printf("compute per rank     %s (%d layers x %d microbatches, forward and backward)\n",
           units_time_digits(a, s->compute, 6), step_stage_layers(t), t->microbatches);
    printf("pipeline phase       %s (to the last rank's last backward)\n",
           units_time_digits(a, s->pipe_end, 6));
    print_last(s);
    printf("after the pipeline   %s (%s)\n", units_time_digits(a, s->time - s->pipe_end, 6),
           after_words(t));
    printf("bubble (ideal)       %.2f %% of the pipeline phase: (pp - 1) / (m + pp - 1), "
           "messages free\n", 100 * step_bubble_fraction(t));
    print_memory(t, s);
    printf("\n");
    print_kinds(t, s);
}

static void print_json(const step_desc *sd, const run_opts *o, const backend_desc *net,
                       const step_sum *s)
{
    const cl_step *t = &sd->step;
    json_writer w;
    step_json_open(&w, sd, "sim");
    json_kv_string(&w, "network", net->note);
    json_kv_string(&w, "sharing", run_sharing_name(o->sim.sharing, false));
    json_kv_number(&w, "memory_estimate_bytes", sim_memory(t, o));
    json_kv_number(&w, "memory_peak_bytes", peak_memory());
    json_kv_string(&w, "schedule", t->one_f_one_b ? "1f1b" : "gpipe");
    json_kv_uint(&w, "zero", (uint64_t)t->zero);
    json_kv_number(&w, "step_s", s->time);
    json_kv_number(&w, "compute_s", s->compute);
    json_kv_number(&w, "pipeline_s", s->pipe_end);
    json_kv_number(&w, "bubble_fraction_ideal", step_bubble_fraction(t));
    print_kinds_json(&w, t, s);
    json_finish(&w);
}

/* One run of the step on o->be's row of the backend table (its session:
 * the simulator's network, or the measured world), one size; its
 * description into *net.  0, or the exit status after saying why. */
static int step_on(run_opts *o, run_row *row, backend_desc *net, rec_log *log)
{
    run_env env = {0};
    int rc = o->be->open(o, &env.session);
    if (!rc)
        rc = o->be->start(env.session, o, &env);
    if (!rc) {
        int status = o->be->run_size(o, &env, 0, log, o->be->measured, row);
        if (status)
            rc = run_exit_code(status, &env);
        else
            o->be->describe(env.session, o, &env, net);
    }
    int crc = backend_close(o->be, env.session);
    return rc ? rc : crc;
}

/* --trace's file: the records of log with each moved to the track of its
 * rank and kind (step_kind_of).  0, or the exit status after saying why. */
static int write_trace(const cl_step *t, const run_opts *o, const rec_log *log)
{
    static const char *const names[STEP_KINDS] = {NULL, "tp", "pp", "dp"};
    cl_record *v = malloc((log->n ? log->n : 1) * sizeof *v);
    if (!v)
        return cli_error("out of memory for the trace's %zu records", log->n);
    for (size_t i = 0; i < log->n; i++) {
        v[i] = log->v[i];
        v[i].rank = v[i].rank * STEP_KINDS + step_kind_of(t, log->v[i].rank, log->v[i].peer);
    }
    trace_meta meta = {.pattern = "training-step", .backend = o->backend,
                       .ranks = step_ranks(t) * STEP_KINDS, .kinds = STEP_KINDS,
                       .kind_names = names};
    if (log->dropped)
        fprintf(stderr, "commlab: the trace keeps the first %zu records; %zu more were "
                        "dropped\n", log->n, log->dropped);
    cl_diag d = {{0}};
    int rc = trace_write_file(o->trace, v, log->n, &meta, &d);
    free(v);
    if (rc)
        return cli_diag(&d, CLI_EXIT_USAGE);
    return CLI_EXIT_OK;
}

/* Where the text output says the trace went. */
static void print_trace_line(const run_opts *o)
{
    if (o->trace && o->fmt == CLI_TEXT)
        printf("\ntrace: %s (open it in https://ui.perfetto.dev)\n", o->trace);
}

/* Room for n ranks' figures: shared with the processes a measured run
 * forks, plain memory for the simulator's ranks.  NULL when out of it. */
static cl_step_rank *figures_new(int n, bool shared)
{
    if (!shared)
        return calloc((size_t)n, sizeof(cl_step_rank));
    void *p = mmap(NULL, (size_t)n * sizeof(cl_step_rank), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void figures_free(cl_step_rank *v, int n, bool shared)
{
    if (shared && v)
        munmap(v, (size_t)n * sizeof *v);
    else
        free(v);
}

int step_run(step_desc *sd, run_opts *o, run_row *row, backend_desc *net, step_sum *s)
{
    int n = step_ranks(&sd->step);
    bool shared = o->be->measured;
    cl_step_rank *out = figures_new(n, shared);
    if (!out)
        return cli_error("out of memory for %d ranks' results", n);
    sd->step.out = out;
    o->ranks = n;
    o->args.step = &sd->step;
    rec_log log;
    rec_log_init(&log, 4u << 20);
    int rc = step_on(o, row, net, o->trace ? &log : NULL);
    if (!rc)
        sum_ranks(out, n, row->t.median, s);
    if (!rc && o->trace)
        rc = write_trace(&sd->step, o, &log);
    rec_log_release(&log);
    sd->step.out = NULL;
    figures_free(out, n, shared);
    return rc;
}

plot_step_row step_plot_row(const cl_step *t, const step_sum *s)
{
    return (plot_step_row){.tp = t->tp, .dp = t->dp, .pp = t->pp, .step = s->time,
                           .compute = s->parts[0], .tp_s = s->parts[1], .pp_s = s->parts[2],
                           .dp_s = s->parts[3]};
}

int step_plot(const step_desc *sd, const plot_step_row *rows, size_t n, const char *what,
              const run_opts *o, unsigned plot)
{
    char name[80];
    const char *base = strrchr(sd->path, '/');
    cli_textf(name, sizeof name, "%.*s", (int)strcspn(base ? base + 1 : sd->path, "."),
              base ? base + 1 : sd->path);
    return cli_plot_step(name, what, rows, n, plot, o->fmt == CLI_TEXT ? stdout : stderr);
}

static int model_step(step_desc *sd, run_opts *o, unsigned plot)
{
    say_memory(&sd->step, o);
    run_row row;
    backend_desc net;
    step_sum s;
    int rc = step_run(sd, o, &row, &net, &s);
    if (rc)
        return rc;
    if (o->fmt == CLI_JSON)
        print_json(sd, o, &net, &s);
    else if (o->fmt == CLI_CSV)
        step_print_csv(&sd->step, &s, true);
    else
        print_text(sd, o, &net, &s);
    print_trace_line(o);
    if (!plot)
        return CLI_EXIT_OK;
    plot_step_row row1 = step_plot_row(&sd->step, &s);
    return step_plot(sd, &row1, 1, sd->path, o, plot);
}

/* The model of a measured step: --model, --tier or --topology as given;
 * else this host's machine file for the backend where there is one, else
 * tier nvlink, said in *why. */
static int model_of(const run_opts *measured, run_opts *sim, char *path, size_t len,
                    char *why, size_t why_len)
{
    *sim = *measured;
    sim->be = backend_default();
    sim->backend = sim->be->name;
    sim->iters = 1;
    sim->warmup = 0;
    sim->payload = false;
    sim->trace = NULL; /* the measured step's, not its model's */
    *why = 0;
    if (sim->sim.model)
        return 0;
    sim->sim.model = "alphabeta";
    if (sim->sim.tier || sim->sim.topology)
        return 0;
    char provider[32];
    int rc = calibrate_provider(measured->be, NULL, provider, sizeof provider);
    if (!rc)
        rc = calibrate_default_path(path, len, measured->backend, provider, 0);
    if (rc)
        return rc;
    if (access(path, R_OK) == 0) {
        sim->sim.model = path;
        return 0;
    }
    sim->sim.tier = "nvlink";
    cli_textf(why, why_len, "no machine file for this host and %s at %s: modeled on tier "
              "nvlink, not this machine (`commlab calibrate --backend %s` writes one)", path,
              measured->backend, measured->backend);
    return 0;
}

/* The step's error as compare states a size's (cli/calibrate.h). */
static double error_pct(double modeled, const run_row *measured)
{
    return compare_error_pct(&(compare_row){.modeled = modeled, .measured = measured->t});
}

static void print_measured_text(const step_desc *sd, const run_opts *o, const run_row *mrow,
                                const backend_desc *mnet, const step_sum *ms,
                                const backend_desc *snet, const step_sum *ss, const char *why)
{
    const cl_step *t = &sd->step;
    char a[UNITS_BUF], b[UNITS_BUF], c[UNITS_BUF], el[UNITS_BUF];
    printf("training step on %s, measured beside its model: %s\n", o->backend, sd->path);
    step_print_layout(sd);
    printf("  measured: %d ranks, %s, %d steps%s, payload\n", step_ranks(t), mnet->where,
           o->iters, mnet->how);
    if (mnet->note[0])
        printf("  %s\n", mnet->note);
    printf("  modeled: %s, eager limit %s, no payload\n",
           snet->note[0] ? snet->note : snet->where, units_size_str(el, o->eager_limit));
    if (why[0])
        printf("  note: %s\n", why);
    char e[32];
    snprintf(e, sizeof e, "%.1f %%", error_pct(ss->time, mrow));
    printf("\n%-20s %-14s %-14s %s\n", "", "measured", "modeled", "error");
    printf("%-20s %-14s %-14s %-9s (median of %d steps; min %s, max %s)\n", "step time",
           units_time_digits(a, mrow->t.median, 4), units_time_digits(b, ss->time, 4), e,
           o->iters, units_time_digits(c, mrow->t.min, 4), units_time_digits(el, mrow->t.max, 4));
    printf("%-20s %-14s %-14s %-9s (the last step's)\n", "pipeline phase",
           units_time_digits(a, ms->pipe_end, 4), units_time_digits(b, ss->pipe_end, 4), "");
    printf("%-20s %-14s %-14s %-9s (cl_compute, the most any rank asked for)\n\n",
           "compute per rank", units_time_digits(a, ms->compute, 4),
           units_time_digits(b, ss->compute, 4), "");
    print_kinds(t, ms);
}

static void print_measured_json(const step_desc *sd, const run_opts *o, const run_row *mrow,
                                const backend_desc *mnet, const step_sum *ms,
                                const backend_desc *snet, const step_sum *ss, const char *why)
{
    const cl_step *t = &sd->step;
    json_writer w;
    step_json_open(&w, sd, o->backend);
    json_kv_string(&w, "schedule", t->one_f_one_b ? "1f1b" : "gpipe");
    json_kv_uint(&w, "zero", (uint64_t)t->zero);
    json_key(&w, "measured");
    json_begin_object(&w);
    json_kv_uint(&w, "iters", (uint64_t)o->iters);
    backend_desc_json(&w, mnet);
    json_key(&w, "step_s");
    json_begin_object(&w);
    json_kv_number(&w, "median", mrow->t.median);
    json_kv_number(&w, "min", mrow->t.min);
    json_kv_number(&w, "max", mrow->t.max);
    json_end_object(&w);
    json_kv_number(&w, "compute_s", ms->compute);
    json_kv_number(&w, "pipeline_s", ms->pipe_end);
    json_end_object(&w);
    json_key(&w, "modeled");
    json_begin_object(&w);
    json_kv_string(&w, "network", snet->note[0] ? snet->note : snet->where);
    if (why[0])
        json_kv_string(&w, "note", why);
    json_kv_number(&w, "step_s", ss->time);
    json_kv_number(&w, "compute_s", ss->compute);
    json_kv_number(&w, "pipeline_s", ss->pipe_end);
    json_end_object(&w);
    json_kv_number(&w, "error_pct", error_pct(ss->time, mrow));
    print_kinds_json(&w, t, ms);
    json_finish(&w);
}

/* A measured step, then its model; prints both with the error. */
static int measure_step(step_desc *sd, run_opts *o)
{
    run_opts sim;
    char path[1100], why[1400];
    int rc = model_of(o, &sim, path, sizeof path, why, sizeof why);
    if (rc)
        return rc;
    run_row mrow, srow;
    backend_desc mnet, snet;
    step_sum ms, ss;
    if ((rc = step_run(sd, o, &mrow, &mnet, &ms)) || (rc = step_run(sd, &sim, &srow, &snet, &ss)))
        return rc;
    if (o->fmt == CLI_JSON)
        print_measured_json(sd, o, &mrow, &mnet, &ms, &snet, &ss, why);
    else
        print_measured_text(sd, o, &mrow, &mnet, &ms, &snet, &ss, why);
    print_trace_line(o);
    return CLI_EXIT_OK;
}

int cmd_step(int argc, char **argv)
{
    run_opts o = {.backend = "sim", .iters = 0, .warmup = -1, .eager_limit = RUN_EAGER_LIMIT,
                  .payload = false, .fmt = CLI_TEXT, .real.bind = true,
                  .real.deadlock_timeout = 2.0, .timeout = RUN_TIMEOUT_DEFAULT,
                  .real.wargs = {.rank = -1, .world = -1},
                  .pattern = pattern_find("training-step")};
    step_flags f = {0};
    int rc = parse_args(argc, argv, &o, &f);
    if (rc)
        return rc == -1 ? CLI_EXIT_OK : rc;
    bool measured = o.be && o.be->measured;
    if (!o.be)
        o.be = backend_default();
    o.iters = o.iters ? o.iters : measured ? 3 : 1;
    o.warmup = o.warmup >= 0 ? o.warmup : measured ? 1 : 0;
    /* The collectives check every element they reduce, which takes far
     * longer than the step: the warm-up step is checked, never a timed one. */
    o.check_warmup = true;
    step_desc sd;
    cl_diag d = {{0}};
    if (step_load(&sd, f.file, &d))
        return cli_diag(&d, CLI_EXIT_USAGE);
    if (f.overlap && sd.step.zero == 3)
        return cli_error("step: --overlap hides gradient buckets (ZeRO 0 to 2); %s has ZeRO 3, "
                         "which gathers each layer when it needs it", f.file);
    sd.step.overlap = sd.step.overlap || f.overlap;
    if (f.algo && (rc = parse_algos(f.algo, &sd.step)))
        return rc;
    char why[200];
    if (f.scale > 0 && step_scale(&sd, f.scale, why, sizeof why))
        return cli_error("step: --scale %g: %s", f.scale, why);
    if (measured)
        return measure_step(&sd, &o);
    o.sim.model = "alphabeta";
    return f.sweep ? step_sweep(&sd, &o, f.plot) : model_step(&sd, &o, f.plot);
}
