/* step.c - reading a training step's description and its closed forms. */
#include "core/step.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/config.h"

/* The largest size a step may derive: a petabyte, far past any model, so
 * that products of the keys never overflow 64 bits. */
#define STEP_BYTES_MAX 1e15

/* Where the keys the derived checks blame are, for their messages. */
typedef struct step_nodes {
    yaml_node_t *layers, *hidden, *pp, *tp, *bucket, *rate;
} step_nodes;

static int get_int(cfg_doc *c, yaml_node_t *map, const char *key, long min, long max,
                   long *out, yaml_node_t **at, cl_diag *d)
{
    yaml_node_t *v;
    int err = cfg_get(c, map, key, true, &v, d);
    if (!err)
        err = cfg_int(c, v, key, min, max, out, d);
    if (!err && at)
        *at = v;
    return err;
}

static int get_time(cfg_doc *c, yaml_node_t *map, const char *key, double *out, cl_diag *d)
{
    yaml_node_t *v;
    int err = cfg_get(c, map, key, true, &v, d);
    if (!err)
        err = cfg_time(c, v, key, out, d);
    return err;
}

/* forward and backward, or flop_rate (a number: FLOP/s a rank sustains)
 * from which derive() works them out. */
static int load_compute(cfg_doc *c, yaml_node_t *m, step_desc *s, step_nodes *at, cl_diag *d)
{
    yaml_node_t *fw, *bw;
    int err;
    if ((err = cfg_get(c, m, "flop_rate", false, &at->rate, d)) ||
        (err = cfg_get(c, m, "forward", false, &fw, d)) ||
        (err = cfg_get(c, m, "backward", false, &bw, d)))
        return err;
    if (!at->rate)
        return (err = get_time(c, m, "forward", &s->step.t_fwd, d)) ? err
               : get_time(c, m, "backward", &s->step.t_bwd, d);
    if (fw || bw)
        return cfg_error(c, fw ? fw : bw, d, "'%s' and 'flop_rate' both give the compute: "
                         "keep one (flop_rate derives forward and backward)",
                         fw ? "forward" : "backward");
    if ((err = cfg_number(c, at->rate, "flop_rate", &s->flop_rate, d)))
        return err;
    if (!(s->flop_rate > 0) || s->flop_rate > 1e21)
        return cfg_error(c, at->rate, d, "'flop_rate' must be FLOP/s above 0 (125e12 for "
                         "125 TFLOP/s), got '%g'", s->flop_rate);
    return 0;
}

static int load_model(cfg_doc *c, yaml_node_t *m, step_desc *s, step_nodes *at, cl_diag *d)
{
    static const char *const keys[] = {"layers", "hidden", "sequence", "microbatch_size",
                                       "dtype_bytes", "forward", "backward", "flop_rate",
                                       NULL};
    long v = 0;
    yaml_node_t *dt;
    int err;
    if ((err = cfg_expect_map(c, m, "model", d)) ||
        (err = cfg_known_keys(c, m, keys, "the model", d)) ||
        (err = get_int(c, m, "layers", 1, 1L << 20, &v, &at->layers, d)))
        return err;
    s->step.layers = (int)v;
    if ((err = get_int(c, m, "hidden", 1, 1L << 24, &s->hidden, &at->hidden, d)) ||
        (err = get_int(c, m, "sequence", 1, 1L << 24, &s->sequence, NULL, d)) ||
        (err = get_int(c, m, "microbatch_size", 1, 1L << 24, &s->mbs, NULL, d)) ||
        (err = get_int(c, m, "dtype_bytes", 1, 8, &v, &dt, d)))
        return err;
    if (v != 2 && v != 4 && v != 8)
        return cfg_error(c, dt, d, "'dtype_bytes' must be 2 (bf16), 4 (f32) or 8 (f64), "
                         "got '%ld'", v);
    s->step.dtype_bytes = (size_t)v;
    return load_compute(c, m, s, at, d);
}

/* schedule: gpipe or 1f1b; zero: 0 to 3; overlap (optional): true or
 * false, and not with ZeRO 3. */
static int load_choices(cfg_doc *c, yaml_node_t *l, step_desc *s, cl_diag *d)
{
    yaml_node_t *v;
    const char *name;
    long z;
    int err;
    if ((err = cfg_get(c, l, "schedule", true, &v, d)) ||
        (err = cfg_string(c, v, "schedule", &name, d)))
        return err;
    if (strcmp(name, "gpipe") != 0 && strcmp(name, "1f1b") != 0)
        return cfg_error(c, v, d, "'schedule' must be gpipe or 1f1b, got '%s'", name);
    s->step.one_f_one_b = strcmp(name, "1f1b") == 0;
    if ((err = get_int(c, l, "zero", 0, 3, &z, NULL, d)) ||
        (err = cfg_get(c, l, "overlap", false, &v, d)))
        return err;
    s->step.zero = (int)z;
    if (!v)
        return 0;
    if ((err = cfg_string(c, v, "overlap", &name, d)))
        return err;
    if (strcmp(name, "true") != 0 && strcmp(name, "false") != 0)
        return cfg_error(c, v, d, "'overlap' must be true or false, got '%s'", name);
    s->step.overlap = strcmp(name, "true") == 0;
    if (s->step.overlap && z == 3)
        return cfg_error(c, v, d, "'overlap' hides gradient buckets (ZeRO 0 to 2); ZeRO 3 "
                         "gathers each layer when it needs it, blocking (prefetch is not "
                         "built)");
    return 0;
}

static int load_layout(cfg_doc *c, yaml_node_t *l, step_desc *s, step_nodes *at, cl_diag *d)
{
    static const char *const keys[] = {"tp", "dp", "pp", "microbatches", "schedule", "zero",
                                       "bucket", "overlap", NULL};
    long tp, dp, pp, m;
    uint64_t bucket;
    int err;
    if ((err = cfg_expect_map(c, l, "layout", d)) ||
        (err = cfg_known_keys(c, l, keys, "the layout", d)) ||
        (err = get_int(c, l, "tp", 1, 1L << 20, &tp, &at->tp, d)) ||
        (err = get_int(c, l, "dp", 1, 1L << 20, &dp, NULL, d)) ||
        (err = get_int(c, l, "pp", 1, 1L << 20, &pp, &at->pp, d)) ||
        (err = get_int(c, l, "microbatches", 1, 1L << 16, &m, NULL, d)) ||
        (err = load_choices(c, l, s, d)) ||
        (err = cfg_get(c, l, "bucket", true, &at->bucket, d)) ||
        (err = cfg_size(c, at->bucket, "bucket", &bucket, d)))
        return err;
    if (tp * dp * pp > 1L << 20)
        return cfg_error(c, l, d, "the layout needs tp x dp x pp = %ld ranks, more than the "
                         "%ld a run takes", tp * dp * pp, 1L << 20);
    s->step.tp = (int)tp;
    s->step.dp = (int)dp;
    s->step.pp = (int)pp;
    s->step.microbatches = (int)m;
    s->step.bucket = (size_t)bucket;
    return 0;
}

/* A layer's parameters: 12 h^2 (attention 4 h^2, MLP 8 h^2). */
static uint64_t layer_params(long hidden)
{
    return 12 * (uint64_t)hidden * (uint64_t)hidden;
}

/* The bytes that follow from s's hidden, sequence, microbatch size, type
 * and tp: a layer's parameters on one rank, a microbatch's activations
 * (also one tensor-parallel all-reduce).  tp divides layer_params. */
static void set_sizes(step_desc *s)
{
    cl_step *t = &s->step;
    t->layer_bytes = (size_t)(layer_params(s->hidden) * t->dtype_bytes / (uint64_t)t->tp);
    t->act_bytes = t->tp_bytes =
        (size_t)s->sequence * (size_t)s->mbs * (size_t)s->hidden * t->dtype_bytes;
}

/* The sizes that follow from the keys, and the checks across keys. */
static int derive(cfg_doc *c, step_desc *s, const step_nodes *at, cl_diag *d)
{
    cl_step *t = &s->step;
    double h = (double)s->hidden, dt = (double)t->dtype_bytes;
    double layer = 12.0 * h * h * dt, act = (double)s->sequence * (double)s->mbs * h * dt;
    if (t->layers % t->pp != 0)
        return cfg_error(c, at->pp, d, "'pp' must divide 'layers' (%d), got '%d'", t->layers,
                         t->pp);
    if (layer > STEP_BYTES_MAX || act > STEP_BYTES_MAX)
        return cfg_error(c, at->hidden, d, "a layer of 'hidden' %ld makes %.3g bytes, past "
                         "the %.0e a step may hold", s->hidden, layer > act ? layer : act,
                         STEP_BYTES_MAX);
    uint64_t whole = layer_params(s->hidden);
    if (whole % (uint64_t)t->tp != 0)
        return cfg_error(c, at->tp, d, "'tp' must divide a layer's 12 h^2 = %llu parameters, "
                         "got '%d'", (unsigned long long)whole, t->tp);
    if (t->bucket < t->dtype_bytes || t->bucket % t->dtype_bytes != 0)
        return cfg_error(c, at->bucket, d, "'bucket' must be a whole number of %zu-byte "
                         "elements, got '%llu' bytes", t->dtype_bytes,
                         (unsigned long long)t->bucket);
    set_sizes(s);
    if (s->flop_rate > 0) {
        t->t_fwd = step_layer_flops(s) / t->tp / s->flop_rate;
        t->t_bwd = 2 * t->t_fwd;
    }
    return 0;
}

static int load_doc(cfg_doc *c, step_desc *s, cl_diag *d)
{
    static const char *const keys[] = {"model", "layout", NULL};
    yaml_node_t *root, *m, *l;
    step_nodes at = {0};
    int err;
    if ((err = cfg_root(c, &root, d)) ||
        (err = cfg_known_keys(c, root, keys, "a step file", d)) ||
        (err = cfg_get(c, root, "model", true, &m, d)) ||
        (err = cfg_get(c, root, "layout", true, &l, d)) ||
        (err = load_model(c, m, s, &at, d)) || (err = load_layout(c, l, s, &at, d)))
        return err;
    return derive(c, s, &at, d);
}

static int load(step_desc *s, cfg_doc *c, const char *name, cl_diag *d)
{
    step_desc t = {.scale = 1};
    snprintf(t.path, sizeof t.path, "%s", name);
    int err = load_doc(c, &t, d);
    cfg_doc_release(c);
    if (!err)
        *s = t;
    return err;
}

int step_load(step_desc *s, const char *path, cl_diag *d)
{
    cfg_doc c;
    int err = cfg_doc_load(&c, path, d);
    return err ? err : load(s, &c, path, d);
}

int step_load_string(step_desc *s, const char *name, const char *text, cl_diag *d)
{
    cfg_doc c;
    int err = cfg_doc_load_string(&c, name, text, d);
    return err ? err : load(s, &c, name, d);
}

int step_relayout(step_desc *s, int tp, int dp, int pp, char *why, size_t len)
{
    cl_step *t = &s->step;
    uint64_t whole = layer_params(s->hidden);
    long batch = (long)t->microbatches * t->dp;
    if (tp < 1 || dp < 1 || pp < 1 || t->layers % pp != 0) {
        snprintf(why, len, "pp %d does not divide the %d layers", pp, t->layers);
        return CL_EINVAL;
    }
    if (whole % (uint64_t)tp != 0) {
        snprintf(why, len, "tp %d does not divide a layer's %llu parameters", tp,
                 (unsigned long long)whole);
        return CL_EINVAL;
    }
    if (batch % dp != 0) {
        snprintf(why, len, "dp %d does not divide the step's %ld microbatches", dp, batch);
        return CL_EINVAL;
    }
    double shared = (double)t->tp / tp;
    t->t_fwd *= shared;
    t->t_bwd *= shared;
    t->microbatches = (int)(batch / dp);
    t->tp = tp;
    t->dp = dp;
    t->pp = pp;
    set_sizes(s);
    return 0;
}

double step_layer_flops(const step_desc *s)
{
    double h = (double)s->hidden, sq = (double)s->sequence, b = (double)s->mbs;
    return 24 * b * sq * h * h + 4 * b * sq * sq * h;
}

int step_kind_of(const cl_step *s, int rank, int peer)
{
    if (peer < 0 || peer == rank)
        return STEP_PROGRAM;
    int plane = s->tp * s->dp;
    bool stage = rank / plane == peer / plane;
    bool replica = (rank / s->tp) % s->dp == (peer / s->tp) % s->dp;
    bool tp_rank = rank % s->tp == peer % s->tp;
    if (stage && replica)
        return STEP_TP;
    if (stage && tp_rank)
        return STEP_DP;
    return replica && tp_rank ? STEP_PP : STEP_PROGRAM;
}

int step_scale(step_desc *s, double f, char *why, size_t len)
{
    if (!(f > 0 && f <= 1)) {
        snprintf(why, len, "the scale must be above 0 and at most 1, got %g", f);
        return CL_EINVAL;
    }
    step_desc t = *s;
    t.hidden = (long)(s->hidden * f + 0.5);
    t.sequence = (long)(s->sequence * f + 0.5);
    t.hidden = t.hidden < 1 ? 1 : t.hidden;
    t.sequence = t.sequence < 1 ? 1 : t.sequence;
    uint64_t whole = layer_params(t.hidden);
    if (whole % (uint64_t)t.step.tp != 0) {
        snprintf(why, len, "at hidden %ld, tp %d does not divide a layer's %llu parameters",
                 t.hidden, t.step.tp, (unsigned long long)whole);
        return CL_EINVAL;
    }
    double work = step_layer_flops(&t) / step_layer_flops(s);
    t.step.t_fwd *= work;
    t.step.t_bwd *= work;
    set_sizes(&t);
    t.scale = s->scale * f;
    *s = t;
    return 0;
}

int step_ranks(const cl_step *s)
{
    return s->tp * s->dp * s->pp;
}

int step_stage_layers(const cl_step *s)
{
    return s->layers / s->pp;
}

uint64_t step_grad_bytes(const cl_step *s)
{
    return (uint64_t)step_stage_layers(s) * s->layer_bytes;
}

double step_tp_volume(const cl_step *s)
{
    double k = s->tp;
    return 4.0 * step_stage_layers(s) * s->microbatches * 2.0 * (k - 1) / k *
           (double)s->tp_bytes;
}

double step_pp_volume(const cl_step *s, int stage)
{
    int ways = (stage > 0) + (stage < s->pp - 1); /* gradients back, activations on */
    return (double)ways * s->microbatches * (double)s->act_bytes;
}

double step_dp_volume(const cl_step *s)
{
    double k = s->dp;
    if (s->zero == 3)
        return 3.0 * step_stage_layers(s) * s->microbatches * (k - 1) / k *
               (double)s->layer_bytes;
    return 2.0 * (k - 1) / k * (double)step_grad_bytes(s);
}

int step_peak_microbatches(const cl_step *s, int stage)
{
    int held = s->pp - stage;
    return s->one_f_one_b && held < s->microbatches ? held : s->microbatches;
}

double step_activation_bytes(const cl_step *s, int stage)
{
    double per_layer = (double)s->act_bytes * (5.0 + 12.0 / s->tp);
    return (double)step_peak_microbatches(s, stage) * step_stage_layers(s) * per_layer;
}

double step_model_state_bytes(const cl_step *s)
{
    double psi = (double)step_grad_bytes(s) / (double)s->dtype_bytes, nd = s->dp;
    switch (s->zero) {
    case 1: return 4 * psi + 12 * psi / nd;
    case 2: return 2 * psi + 14 * psi / nd;
    case 3: return 16 * psi / nd;
    default: return 16 * psi;
    }
}

double step_bubble_fraction(const cl_step *s)
{
    return (double)(s->pp - 1) / (s->microbatches + s->pp - 1);
}
