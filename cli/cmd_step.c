/* cmd_step.c - `commlab step FILE.yaml`: one training step (chapter 07)
 * modeled on sim with no payload: its time, its compute, the bytes each
 * rank sends per kind of parallelism beside their closed forms
 * (core/step.h), and the pipeline's bubble.  Measured steps are not
 * built: any backend but sim is refused at run time, never faked. */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/backend.h"
#include "cli/run_size.h"
#include "core/json.h"
#include "core/step.h"
#include "core/table.h"
#include "core/units.h"

const char cmd_step_usage[] =
    "usage: commlab step FILE.yaml [options]\n"
    "\n"
    "Models one training step of the model and layout FILE.yaml describes\n"
    "(configs/steps/ has examples; chapter 07 explains the keys) in the\n"
    "simulator, with no payload: per microbatch and layer the tensor-parallel\n"
    "all-reduces, the pipeline's activations and gradients (gpipe or 1f1b),\n"
    "the layers' compute, then the data-parallel gradient all-reduce in\n"
    "buckets (or ZeRO 3's all-gathers and reduce-scatters).  Prints the step\n"
    "time, the compute per rank, the bytes each rank sends per kind (tp, pp,\n"
    "dp) beside their closed forms, and the pipeline bubble.\n"
    "\n"
    "  -t, --tier NAME          every rank on one port of this tier (default nvlink)\n"
    "      --topology FILE      a network of devices and links instead (one rank per\n"
    "                           device, in rank order)\n"
    "  -c, --config FILE        tiers file (default configs/tiers.yaml)\n"
    "      --sharing HOW        maxmin (the default): messages through one port share\n"
    "                           it; none: every message alone\n"
    "      --backend NAME       sim only: measured steps are not built yet\n"
    "      --json               machine-readable results\n"
    "  -h, --help               this text\n"
    "\n"
    "examples:\n"
    "  commlab step configs/steps/small-8.yaml\n"
    "  commlab step configs/steps/gpt3-175b-1024.yaml --tier infiniband --json\n";

enum { OPT_JSON = 256, OPT_SHARING, OPT_TOPOLOGY, OPT_BACKEND };

/* What the ranks did, over all ranks. */
typedef struct step_sum {
    double time;           /* the step: the slowest rank's, seconds */
    double compute;        /* the most any rank computed, seconds */
    double pipe_end;       /* the last rank's last backward, seconds */
    unsigned long long most[3], least[3]; /* bytes sent per rank: tp, pp, dp */
} step_sum;

static const char *const kinds[3] = {"tp", "pp", "dp"};

static int refuse_backend(const char *name)
{
    const backend_info *be;
    int rc = backend_lookup(name, "step", false, &be);
    if (rc || !be->measured)
        return rc;
    return cli_error("step: --backend %s: measured steps are not built yet; a step is "
                     "modeled on sim only (chapter 07 lists what is not built)", name);
}

static int parse_args(int argc, char **argv, run_opts *o, const char **file)
{
    static const struct option opts[] = {
        {"tier", required_argument, NULL, 't'},
        {"topology", required_argument, NULL, OPT_TOPOLOGY},
        {"config", required_argument, NULL, 'c'},
        {"sharing", required_argument, NULL, OPT_SHARING},
        {"backend", required_argument, NULL, OPT_BACKEND},
        {"json", no_argument, NULL, OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c, rc = 0;
    while (!rc && (c = getopt_long(argc, argv, ":t:c:h", opts, NULL)) != -1) {
        switch (c) {
        case 't': o->sim.tier = optarg; break;
        case OPT_TOPOLOGY: o->sim.topology = optarg; break;
        case 'c': o->sim.config = optarg; break;
        case OPT_SHARING: rc = run_parse_sharing(optarg, o); break;
        case OPT_BACKEND: rc = refuse_backend(optarg); break;
        case OPT_JSON: o->fmt = CLI_JSON; break;
        case 'h': fputs(cmd_step_usage, stdout); return -1;
        default: return cli_bad_option("step", opts, argv, c);
        }
    }
    if (rc)
        return rc;
    if (optind >= argc)
        return cli_error("step: which step file? (configs/steps/ has examples)\n"
                         "try 'commlab help step'");
    *file = argv[optind++];
    if ((rc = cli_no_extra("step", argc, argv)))
        return rc;
    if (o->sim.tier && o->sim.topology)
        return cli_error("step: give either --tier or --topology, not both");
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
    }
}

/* The closed form of the most a rank of kind k sends. */
static double closed_form(const cl_step *t, int k)
{
    if (k == 0)
        return step_tp_volume(t);
    if (k == 2)
        return step_dp_volume(t);
    return step_pp_volume(t, t->pp > 2 ? 1 : 0);
}

static const char *kind_words(const cl_step *t, int k)
{
    if (k == 0)
        return "4 ring all-reduces of s b h per layer per microbatch";
    if (k == 1)
        return "activations on, gradients back: s b h per microbatch";
    return t->zero == 3 ? "ZeRO 3: 2 all-gathers + 1 reduce-scatter per layer per microbatch"
                        : "ring all-reduce of the stage's gradients, in buckets";
}

static void print_header(const step_desc *sd, const run_opts *o, const backend_desc *net)
{
    const cl_step *t = &sd->step;
    char f[UNITS_BUF], b[UNITS_BUF], bk[UNITS_BUF], el[UNITS_BUF];
    printf("training step on sim: %s\n", sd->path);
    printf("  model: %d layers, hidden %ld, sequence %ld, microbatch size %ld, %zu-byte "
           "elements; per layer per microbatch forward %s, backward %s\n", t->layers,
           sd->hidden, sd->sequence, sd->mbs, t->dtype_bytes, units_time_str(f, t->t_fwd),
           units_time_str(b, t->t_bwd));
    printf("  layout: tp %d x dp %d x pp %d = %d ranks, %d microbatches, %s, ZeRO %d",
           t->tp, t->dp, t->pp, step_ranks(t), t->microbatches,
           t->one_f_one_b ? "1f1b" : "gpipe", t->zero);
    if (t->zero == 0)
        printf(", buckets of %s", units_size_str(bk, t->bucket));
    printf("\n  network: %s, sharing %s, eager limit %s, no payload\n\n",
           net->note, run_sharing_name(o->sim.sharing, true),
           units_size_str(el, o->eager_limit));
}

static void print_text(const step_desc *sd, const run_opts *o, const backend_desc *net,
                       const step_sum *s)
{
    const cl_step *t = &sd->step;
    char a[UNITS_BUF], b[UNITS_BUF], c[UNITS_BUF];
    print_header(sd, o, net);
    printf("step time            %s\n", units_time_digits(a, s->time, 6));
    printf("compute per rank     %s (%d layers x %d microbatches, forward and backward)\n",
           units_time_digits(a, s->compute, 6), step_stage_layers(t), t->microbatches);
    printf("pipeline phase       %s (to the last rank's last backward)\n",
           units_time_digits(a, s->pipe_end, 6));
    printf("after the pipeline   %s (%s; not overlapped with the backward yet)\n",
           units_time_digits(a, s->time - s->pipe_end, 6),
           t->zero == 3 ? "nothing left: ZeRO 3 reduce-scattered per layer"
                        : "the data-parallel gradient all-reduce");
    printf("bubble (ideal)       %.2f %% of the pipeline phase: (pp - 1) / (m + pp - 1), "
           "messages free\n\n", 100 * step_bubble_fraction(t));
    const char *h[] = {"kind", "sent per rank (most)", "(least)", "closed form", "what"};
    table tb;
    if (table_init(&tb, 5, h))
        return;
    for (int k = 0; k < 3; k++) {
        table_add(&tb, "%s", kinds[k]);
        table_add(&tb, "%s", units_size_str(a, s->most[k]));
        table_add(&tb, "%s", units_size_str(b, s->least[k]));
        table_add(&tb, "%s", units_size_str(c, (uint64_t)closed_form(t, k)));
        table_add(&tb, "%s", kind_words(t, k));
    }
    table_print(&tb, stdout, 0);
    table_release(&tb);
}

static void print_json(const step_desc *sd, const run_opts *o, const backend_desc *net,
                       const step_sum *s)
{
    const cl_step *t = &sd->step;
    json_writer w;
    json_init(&w, stdout, true);
    json_begin_object(&w);
    json_kv_string(&w, "command", "step");
    json_kv_string(&w, "file", sd->path);
    json_kv_string(&w, "backend", "sim");
    json_kv_uint(&w, "ranks", (uint64_t)step_ranks(t));
    json_kv_string(&w, "network", net->note);
    json_kv_string(&w, "sharing", run_sharing_name(o->sim.sharing, false));
    json_kv_string(&w, "schedule", t->one_f_one_b ? "1f1b" : "gpipe");
    json_kv_uint(&w, "zero", (uint64_t)t->zero);
    json_kv_number(&w, "step_s", s->time);
    json_kv_number(&w, "compute_s", s->compute);
    json_kv_number(&w, "pipeline_s", s->pipe_end);
    json_kv_number(&w, "bubble_fraction_ideal", step_bubble_fraction(t));
    json_key(&w, "sent_per_rank");
    json_begin_object(&w);
    for (int k = 0; k < 3; k++) {
        json_key(&w, kinds[k]);
        json_begin_object(&w);
        json_kv_uint(&w, "most_bytes", s->most[k]);
        json_kv_uint(&w, "least_bytes", s->least[k]);
        json_kv_number(&w, "closed_form_bytes", closed_form(t, k));
        json_end_object(&w);
    }
    json_end_object(&w);
    json_finish(&w);
}

/* Runs the step once on the model's row of the backend table (its
 * session builds the network), prints. */
static int model_step(step_desc *sd, run_opts *o)
{
    run_env env = {0};
    int n = step_ranks(&sd->step);
    cl_step_rank *out = calloc((size_t)n, sizeof *out);
    if (!out)
        return cli_error("out of memory for %d ranks' results", n);
    sd->step.out = out;
    o->ranks = n;
    o->args.step = &sd->step;
    o->be = backend_default();
    int rc = o->be->open(o, &env.session);
    if (!rc)
        rc = o->be->start(env.session, o, &env);
    if (!rc) {
        run_row row;
        int status = o->be->run_size(o, &env, 0, NULL, false, &row);
        if (status) {
            rc = run_exit_code(status, &env);
        } else {
            step_sum s;
            backend_desc net;
            sum_ranks(out, n, row.t.median, &s);
            o->be->describe(env.session, o, &env, &net);
            if (o->fmt == CLI_JSON)
                print_json(sd, o, &net, &s);
            else
                print_text(sd, o, &net, &s);
        }
    }
    int crc = backend_close(o->be, env.session);
    free(out);
    return rc ? rc : crc;
}

int cmd_step(int argc, char **argv)
{
    run_opts o = {.backend = "sim", .iters = 1, .warmup = 0, .sim.model = "alphabeta",
                  .eager_limit = RUN_EAGER_LIMIT, .payload = false, .fmt = CLI_TEXT,
                  .pattern = pattern_find("training-step")};
    const char *file = NULL;
    int rc = parse_args(argc, argv, &o, &file);
    if (rc)
        return rc == -1 ? CLI_EXIT_OK : rc;
    step_desc sd;
    cl_diag d = {{0}};
    if (step_load(&sd, file, &d))
        return cli_diag(&d, CLI_EXIT_USAGE);
    return model_step(&sd, &o);
}
