/* training-step: one step of training a transformer laid out in three
 * dimensions (`commlab step FILE.yaml`; the step, cl_args.step, comes from
 * the file).  K = tp x dp x pp ranks; rank r is tensor-parallel rank
 * r % tp, replica (r / tp) % dp and stage r / (tp dp): tensor-parallel
 * ranks are neighbours (inside a node, Megatron-LM's order), pipeline
 * stages the farthest apart.  Each rank builds three groups with
 * cl_group: its tensor-parallel group (same stage and replica), its
 * data-parallel group (same stage and tensor-parallel rank) and its
 * pipeline (same replica and tensor-parallel rank).  No message leaves
 * its group, so cl_sent_bytes of each group is that kind's volume.
 *
 * A layer's forward on one microbatch: half its compute, a ring
 * all-reduce of s b h over the tensor-parallel group, the other half,
 * another all-reduce (Megatron's attention and MLP blocks, each closed by
 * its "g" all-reduce); its backward the same with the backward time
 * (each block's "f" all-reduce).  The stage's layers make one forward or
 * backward of a microbatch; the pipeline runs those in the order of
 * --schedule: GPipe (every forward, then every backward) or 1F1B (stage
 * s fills with pp - s - 1 forwards, then alternates).  A stage receives
 * its input blocking and sends its output with cl_isend, waited for once
 * the pipeline is done: a send never blocks the next microbatch, and no
 * two stages wait on each other's sends (chapter 02's pipeline pairs
 * them instead).  After the last backward: ZeRO 0, the gradients in
 * buckets, a ring all-reduce each over the data-parallel group, one
 * bucket after another (DDP overlaps them with the backward: not built
 * yet); ZeRO 3, instead, each layer all-gathers its parameters from the
 * data-parallel group before its forward and before its backward, and
 * reduce-scatters its gradients after it, on every microbatch.
 *
 * The collectives are chapter 04's ring patterns, called on the group as
 * patterns are called: with a cl_args whose bytes is the size. */
#include "commlab.h"

cl_pattern_fn allreduce_ring, allgather_ring, reducescatter_ring;

#define TAG_ACT 0
#define TAG_GRAD 1

typedef struct rank_step {
    cl_comm *c, *tp, *dp, *pp; /* the world and this rank's three groups */
    const cl_step *s;
    cl_args coll;              /* what the collectives are called with */
    int stage, last;           /* this stage, the last (pp - 1) */
    unsigned char *act, *grad; /* m outputs each way (NULL without payload) */
    unsigned char *in;         /* the input being received */
    cl_request **sends;        /* the pipeline's sends, waited for at its end */
    int nsends;
    double compute;            /* seconds of cl_compute so far */
} rank_step;

static cl_dtype dtype_of(size_t bytes)
{
    return bytes == 2 ? CL_BF16 : bytes == 4 ? CL_F32 : CL_F64;
}

/* The group of the n world ranks first, first + stride, ...: made on
 * every rank (cl_group's contract), kept by its members in *mine. */
static int group_of(cl_comm *c, int *members, int n, int first, int stride, cl_comm **mine)
{
    cl_comm *g;
    for (int i = 0; i < n; i++)
        members[i] = first + i * stride;
    CL_TRY(cl_group(c, members, n, &g));
    if (g)
        *mine = g;
    return 0;
}

/* Every group of the three kinds, in one order on every rank. */
static int build_groups(rank_step *r)
{
    const cl_step *s = r->s;
    int plane = s->tp * s->dp, most = s->tp > s->dp ? s->tp : s->dp;
    int *m = cl_array(r->c, (size_t)(most > s->pp ? most : s->pp), sizeof *m);
    if (!m)
        return CL_ENOMEM;
    for (int st = 0; st < s->pp; st++)
        for (int d = 0; d < s->dp; d++)
            CL_TRY(group_of(r->c, m, s->tp, st * plane + d * s->tp, 1, &r->tp));
    for (int st = 0; st < s->pp; st++)
        for (int t = 0; t < s->tp; t++)
            CL_TRY(group_of(r->c, m, s->dp, st * plane + t, s->tp, &r->dp));
    for (int i = 0; i < plane; i++)
        CL_TRY(group_of(r->c, m, s->pp, i, plane, &r->pp));
    return 0;
}

/* fn (a chapter 04 pattern) on group g over bytes; nothing on one rank. */
static int collective(rank_step *r, cl_comm *g, cl_pattern_fn *fn, size_t bytes)
{
    if (cl_size(g) < 2)
        return 0;
    r->coll.bytes = bytes;
    return fn(g, &r->coll);
}

static int compute(rank_step *r, double seconds)
{
    r->compute += seconds;
    return cl_compute(r->c, seconds);
}

/* One layer one way: two blocks, each closed by a tensor-parallel
 * all-reduce; under ZeRO 3 the layer's parameters gathered first and,
 * backward, its gradients reduce-scattered after. */
static int layer(rank_step *r, bool backward)
{
    const cl_step *s = r->s;
    double t = backward ? s->t_bwd : s->t_fwd;
    if (s->zero == 3)
        CL_TRY(collective(r, r->dp, allgather_ring, s->layer_bytes));
    for (int block = 0; block < 2; block++) {
        CL_TRY(compute(r, t / 2));
        CL_TRY(collective(r, r->tp, allreduce_ring, s->tp_bytes));
    }
    if (s->zero == 3 && backward)
        CL_TRY(collective(r, r->dp, reducescatter_ring, s->layer_bytes));
    return 0;
}

/* Microbatch mb through this stage, forward or backward: receive the
 * input, run the stage's layers, post the output. */
static int pass(rank_step *r, int mb, bool backward)
{
    const cl_step *s = r->s;
    int from = backward ? r->stage + 1 : r->stage - 1;
    int to = backward ? r->stage - 1 : r->stage + 1;
    int tag = backward ? TAG_GRAD : TAG_ACT;
    size_t n = s->act_bytes;
    if (from >= 0 && from <= r->last)
        CL_TRY(cl_recv(r->pp, r->in, n, from, tag, NULL));
    for (int l = 0; l < s->layers / s->pp; l++)
        CL_TRY(layer(r, backward));
    if (to < 0 || to > r->last)
        return 0;
    unsigned char *out = CL_AT(backward ? r->grad : r->act, (size_t)mb * n);
    return cl_isend(r->pp, out, n, to, tag, &r->sends[r->nsends++]);
}

/* GPipe: every forward, then every backward.  1F1B: pp - stage - 1
 * forwards (at most m), then a forward and a backward in turn, then the
 * backwards left (Narayanan et al., SC 2021, figure 4). */
static int schedule(rank_step *r)
{
    int m = r->s->microbatches;
    int warm = r->s->one_f_one_b ? r->last - r->stage : m;
    if (warm > m)
        warm = m;
    for (int mb = 0; mb < warm; mb++)
        CL_TRY(pass(r, mb, false));
    for (int i = 0; i < m - warm; i++) {
        CL_TRY(pass(r, warm + i, false));
        CL_TRY(pass(r, i, true));
    }
    for (int mb = m - warm; mb < m; mb++)
        CL_TRY(pass(r, mb, true));
    return cl_waitall(r->c, r->nsends, r->sends, NULL);
}

/* ZeRO 0: the stage's gradients, bucket by bucket. */
static int gradients(rank_step *r)
{
    const cl_step *s = r->s;
    if (s->zero == 3)
        return 0;
    size_t left = (size_t)(s->layers / s->pp) * s->layer_bytes;
    for (size_t b; left > 0; left -= b) {
        b = left < s->bucket ? left : s->bucket;
        CL_TRY(collective(r, r->dp, allreduce_ring, b));
    }
    return 0;
}

static int run_step(rank_step *r, const cl_args *a)
{
    const cl_step *s = r->s;
    size_t n = s->act_bytes, m = (size_t)s->microbatches;
    double t0 = cl_now(r->c);
    r->coll = *a;
    r->coll.op = CL_OP_SUM;
    r->coll.dtype = dtype_of(s->dtype_bytes);
    r->act = cl_alloc(r->c, m * n);
    r->grad = cl_alloc(r->c, m * n);
    r->in = cl_alloc(r->c, n);
    r->sends = cl_array(r->c, 2 * m, sizeof *r->sends);
    if (!r->sends)
        return CL_ENOMEM;
    CL_TRY(schedule(r));
    double pipe_end = cl_now(r->c) - t0;
    CL_TRY(gradients(r));
    if (s->out)
        s->out[cl_rank(r->c)] = (cl_step_rank){
            .tp = cl_sent_bytes(r->tp), .pp = cl_sent_bytes(r->pp),
            .dp = cl_sent_bytes(r->dp), .compute = r->compute, .pipe_end = pipe_end};
    return 0;
}

int training_step(cl_comm *c, const cl_args *a)
{
    const cl_step *s = a->step;
    if (!s) {
        cl_printf(c, "training-step needs a step file: run it with `commlab step FILE.yaml`");
        return CL_EINVAL;
    }
    if (cl_size(c) != s->tp * s->dp * s->pp) {
        cl_printf(c, "training-step: tp %d x dp %d x pp %d needs %d ranks, got %d", s->tp,
                  s->dp, s->pp, s->tp * s->dp * s->pp, cl_size(c));
        return CL_EINVAL;
    }
    rank_step r = {.c = c, .s = s, .stage = cl_rank(c) / (s->tp * s->dp), .last = s->pp - 1};
    int err = build_groups(&r);
    if (!err)
        err = run_step(&r, a);
    cl_group_free(r.tp);
    cl_group_free(r.dp);
    cl_group_free(r.pp);
    return err;
}
