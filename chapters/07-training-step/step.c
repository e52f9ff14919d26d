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
 * them instead).
 *
 * The gradients (ZeRO 0 to 2) are accumulated over the microbatches and
 * summed over the data-parallel group once, in buckets, one bucket after
 * another (Li et al., "PyTorch Distributed", VLDB 2020): ZeRO 0 a ring
 * all-reduce per bucket; ZeRO 1 and 2 its two halves apart, every
 * bucket's reduce-scatter (each rank then updates its shard) and then
 * every bucket's all-gather of the updated parameters.  Without overlap
 * they start after the last backward.  With it a bucket starts as soon as
 * the last microbatch's backward has produced its gradients (layers in
 * reverse order), and the rank advances the ring between slices of POLL
 * seconds of its compute: a GPU runs the collective beside its kernels;
 * here, as in an MPI program without a progress thread, it moves only
 * when the rank looks at it.  ZeRO 3, instead, has each layer all-gather
 * its parameters from the data-parallel group before its forward and
 * before its backward, and reduce-scatter its gradients after it, on
 * every microbatch, blocking.
 *
 * Each rank counts the seconds it spent in each kind's calls (the
 * communication nothing hid, with the sums its collectives made it do)
 * and the most microbatches whose activations it held at once.  The
 * collectives are chapter 04's patterns (ring, or the algorithm
 * `--algo` chose), called on the group as patterns are called: with a
 * cl_args whose bytes is the size.  The buckets' ring is chapter 04's
 * ring written again here, a step at a time, with data of its own to
 * check. */
#include <math.h>

#include "commlab.h"

cl_pattern_fn allreduce_ring, allgather_ring, reducescatter_ring;

#define TAG_ACT 0
#define TAG_GRAD 1
#define POLL 20e-6 /* seconds of backward between two looks at a bucket's ring */
#define OR_RING(fn, ring) ((fn) ? (fn) : (ring)) /* the algorithm asked for, else ring */

/* The stage's gradients, all-reduced in buckets by a ring stepped by
 * hand: step s < K - 1 of a bucket's ring reduce-scatters (chapter 04's
 * ring all-reduce, its blocks cut the same way: the remainder of n / K one
 * element each to the first blocks), K - 1 <= s < 2(K - 1) all-gathers. */
typedef struct grads {
    cl_comm *g;              /* the data-parallel group */
    cl_dtype t;              /* the gradients' type */
    size_t size;             /* bytes of one element */
    unsigned char *x, *tmp;  /* the gradients, one block received (NULL without payload) */
    size_t total, per;       /* elements of gradients, and per bucket */
    size_t ready;            /* elements the last backward has produced */
    int bucket, buckets;     /* the bucket being summed, of how many */
    int step, first, end;    /* its ring's step in flight, of [first, end) */
    bool posted;             /* step's messages posted */
    cl_request *send, *recv;
} grads;

typedef struct rank_step {
    cl_comm *c, *tp, *dp, *pp; /* the world and this rank's three groups */
    const cl_step *s;
    cl_args coll;              /* what the collectives are called with */
    int stage, last;           /* this stage, the last (pp - 1) */
    unsigned char *act, *grad; /* m outputs each way (NULL without payload) */
    unsigned char *in;         /* the input being received */
    cl_request **sends;        /* the pipeline's sends, waited for at its end */
    int nsends;
    grads gr;                  /* the gradient buckets (ZeRO 0 to 2) */
    bool hiding;               /* in the backward the buckets may overlap */
    double compute;            /* seconds of cl_compute so far */
    double wait[3];            /* seconds waited: tp, pp, dp */
    int held, peak;            /* microbatches whose activations it holds, the most */
} rank_step;

enum { TP, PP, DP };

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

/* fn (a chapter 04 pattern) on group g over bytes, the time it took
 * waited on kind `kind`; nothing on one rank. */
static int collective(rank_step *r, int kind, cl_comm *g, cl_pattern_fn *fn, size_t bytes)
{
    if (cl_size(g) < 2)
        return 0;
    double t0 = cl_now(r->c);
    r->coll.bytes = bytes;
    int err = fn(g, &r->coll);
    r->wait[kind] += cl_now(r->c) - t0;
    return err;
}

/* ---- the gradient buckets ---- */

/* Block j of n elements cut in k: its first element, and how many. */
static size_t block_first(size_t n, int k, int j)
{
    size_t base = n / (size_t)k, extra = n % (size_t)k, uj = (size_t)j;
    return uj * base + (uj < extra ? uj : extra);
}

static size_t block_len(size_t n, int k, int j)
{
    return n / (size_t)k + ((size_t)j < n % (size_t)k ? 1 : 0);
}

/* Element i of x (NULL without payload). */
static unsigned char *elem(const grads *g, unsigned char *x, size_t i)
{
    return x ? x + i * g->size : NULL;
}

/* What rank r of the K in the group starts element i of a bucket with,
 * when the run checks: small integers, exact in any type once summed
 * (3K <= 256, the integers bf16 holds), and varying with i and r so that
 * an element summed from the wrong place shows. */
static double start_value(int k, int r, size_t i)
{
    return 3 * k <= 256 ? (double)((i + (size_t)r) % 3 + 1) : 1;
}

/* Bucket b's elements: its first and how many. */
static size_t bucket_first(const grads *g, int b)
{
    return (size_t)b * g->per;
}

static size_t bucket_count(const grads *g, int b)
{
    size_t left = g->total - bucket_first(g, b);
    return left < g->per ? left : g->per;
}

/* Post step g->step of bucket g->bucket's ring. */
static int ring_post(grads *g)
{
    int rank = cl_rank(g->g), k = cl_size(g->g), s = g->step;
    bool reduce = s < k - 1;
    int sb = reduce ? rank - s : rank + 1 - (s - k + 1);
    int rb = reduce ? rank - s - 1 : rank - (s - k + 1);
    sb = ((sb % k) + k) % k;
    rb = ((rb % k) + k) % k;
    size_t n = bucket_count(g, g->bucket);
    unsigned char *x = elem(g, g->x, bucket_first(g, g->bucket));
    unsigned char *into = reduce ? g->tmp : elem(g, x, block_first(n, k, rb));
    CL_TRY(cl_irecv(g->g, into, block_len(n, k, rb) * g->size, (rank - 1 + k) % k,
                    reduce ? 0 : 1, &g->recv));
    CL_TRY(cl_isend(g->g, elem(g, x, block_first(n, k, sb)), block_len(n, k, sb) * g->size,
                    (rank + 1) % k, reduce ? 0 : 1, &g->send));
    g->posted = true;
    return 0;
}

/* Both messages of the step in flight arrived: reduce what came in. */
static int ring_land(grads *g)
{
    int rank = cl_rank(g->g), k = cl_size(g->g), s = g->step;
    g->posted = false;
    g->step++;
    if (s >= k - 1)
        return 0;
    size_t n = bucket_count(g, g->bucket);
    int rb = ((rank - s - 1) % k + k) % k;
    unsigned char *x = elem(g, g->x, bucket_first(g, g->bucket));
    return cl_reduce_local(g->g, elem(g, x, block_first(n, k, rb)), g->tmp, block_len(n, k, rb),
                           g->t, CL_OP_SUM);
}

/* Whether the bucket's gradients are all made (the all-gathers of ZeRO 1
 * and 2 come after every reduce-scatter: always). */
static bool bucket_ready(const grads *g)
{
    return g->ready >= bucket_first(g, g->bucket) + bucket_count(g, g->bucket);
}

/* The next bucket's ring, or the next phase: ZeRO 0 all-reduces each
 * bucket ([0, 2(K - 1))); ZeRO 1 and 2 reduce-scatter every bucket
 * ([0, K - 1)), then all-gather every one ([K - 1, 2(K - 1))).  False
 * when none is left. */
static bool next_bucket(grads *g, int zero)
{
    int k = cl_size(g->g);
    if (g->step < g->end)
        return true;
    if (g->bucket + 1 < g->buckets) {
        g->bucket++;
    } else if (zero > 0 && g->end == k - 1) {
        g->bucket = 0;
        g->first = k - 1;
        g->end = 2 * (k - 1);
    } else {
        return false;
    }
    g->step = g->first;
    return true;
}

/* Move the buckets on: blocking, to the end of every ring; else as far
 * as they go without waiting, with at most one failed cl_test (a rank
 * that looks twice at one instant would wait). */
static int grads_advance(rank_step *r, bool block)
{
    grads *g = &r->gr;
    while (g->buckets > 0 && (g->step < g->end || next_bucket(g, r->s->zero))) {
        if (!g->posted && !bucket_ready(g))
            return 0;
        if (!g->posted)
            CL_TRY(ring_post(g));
        bool done = true;
        if (block) {
            CL_TRY(cl_wait(g->g, &g->recv, NULL));
            CL_TRY(cl_wait(g->g, &g->send, NULL));
        } else {
            if (g->recv)
                CL_TRY(cl_test(g->g, &g->recv, &done, NULL));
            if (done && g->send)
                CL_TRY(cl_test(g->g, &g->send, &done, NULL));
            if (!done)
                return 0;
        }
        CL_TRY(ring_land(g));
    }
    return 0;
}

/* The buckets of this rank's gradients (none on one replica or under
 * ZeRO 3), each element its start_value when the run checks. */
static int grads_init(rank_step *r)
{
    const cl_step *s = r->s;
    grads *g = &r->gr;
    *g = (grads){.g = r->dp, .t = r->coll.dtype, .size = cl_dtype_size(r->coll.dtype)};
    if (s->zero == 3 || cl_size(r->dp) < 2)
        return 0;
    int k = cl_size(r->dp);
    g->total = (size_t)(s->layers / s->pp) * s->layer_bytes / g->size;
    g->per = s->bucket / g->size;
    g->buckets = (int)((g->total + g->per - 1) / g->per);
    g->end = s->zero == 0 ? 2 * (k - 1) : k - 1;
    if (s->dp_allreduce)
        return 0; /* its buckets are chapter 04's to allocate */
    g->x = cl_alloc(r->c, g->total * g->size);
    g->tmp = cl_alloc(r->c, (g->per / (size_t)k + 1) * g->size);
    if (g->x && cl_checking(r->c))
        for (int b = 0; b < g->buckets; b++)
            for (size_t i = 0; i < bucket_count(g, b); i++)
                cl_set_value(g->t, elem(g, g->x, bucket_first(g, b)), i,
                             start_value(k, cl_rank(g->g), i));
    return 0;
}

/* When the run checks: every element of every bucket holds the sum of
 * the group's start values (3K <= 256 keeps them exact in bf16; a larger
 * group's sums of ones are exact up to 256 ranks, past that unchecked). */
static int grads_verify(rank_step *r)
{
    grads *g = &r->gr;
    int k = cl_size(g->g);
    if (!g->x || !cl_checking(r->c) || k > 256)
        return 0;
    for (int b = 0; b < g->buckets; b++) {
        unsigned char *x = elem(g, g->x, bucket_first(g, b));
        for (size_t i = 0; i < bucket_count(g, b); i++) {
            double want = 0;
            for (int q = 0; q < k; q++)
                want += start_value(k, q, i);
            if (cl_value(g->t, x, i) != want)
                return cl_fail(r->c, "gradient bucket %d, element %zu: %g, want %g (the sum "
                               "over the %d replicas)", b, i, cl_value(g->t, x, i), want, k);
        }
    }
    return 0;
}

/* Every bucket summed (checked when the run checks): what overlap did
 * not hide, all waited for.  Another all-reduce than the ring (ZeRO 0
 * without overlap) sums each bucket as chapter 04 wrote it. */
static int grads_finish(rank_step *r)
{
    grads *g = &r->gr;
    if (g->buckets == 0)
        return 0;
    if (r->s->dp_allreduce) {
        for (int b = 0; b < g->buckets; b++)
            CL_TRY(collective(r, DP, g->g, r->s->dp_allreduce,
                              bucket_count(g, b) * g->size));
        return 0;
    }
    double t0 = cl_now(r->c);
    g->ready = g->total;
    CL_TRY(grads_advance(r, true));
    r->wait[DP] += cl_now(r->c) - t0;
    return grads_verify(r);
}

/* ---- the pipeline ---- */

/* seconds of compute; in the last backward with overlap, in slices of
 * at most POLL with the buckets advanced after each, and `grads` more
 * elements of gradients ready at its end. */
static int compute(rank_step *r, double seconds, size_t grads)
{
    r->compute += seconds;
    if (!r->hiding)
        return cl_compute(r->c, seconds);
    double n = ceil(seconds / POLL);
    int slices = n > 1 ? (int)n : 1;
    for (int i = 1; i <= slices; i++) {
        CL_TRY(cl_compute(r->c, seconds / slices));
        if (i == slices)
            r->gr.ready += grads;
        double t0 = cl_now(r->c);
        CL_TRY(grads_advance(r, false)); /* its sums take the rank's time */
        r->wait[DP] += cl_now(r->c) - t0;
    }
    return 0;
}

/* One layer one way: two blocks, each closed by a tensor-parallel
 * all-reduce; under ZeRO 3 the layer's parameters gathered first and,
 * backward, its gradients reduce-scattered after. */
static int layer(rank_step *r, bool backward)
{
    const cl_step *s = r->s;
    double t = backward ? s->t_bwd : s->t_fwd;
    size_t made = backward && r->hiding ? s->layer_bytes / r->gr.size : 0;
    if (s->zero == 3)
        CL_TRY(collective(r, DP, r->dp, OR_RING(s->dp_allgather, allgather_ring),
                          s->layer_bytes));
    for (int block = 0; block < 2; block++) {
        CL_TRY(compute(r, t / 2, block == 1 ? made : 0));
        CL_TRY(collective(r, TP, r->tp, OR_RING(s->tp_allreduce, allreduce_ring), s->tp_bytes));
    }
    if (s->zero == 3 && backward)
        CL_TRY(collective(r, DP, r->dp, OR_RING(s->dp_reducescatter, reducescatter_ring),
                          s->layer_bytes));
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
    if (from >= 0 && from <= r->last) {
        double t0 = cl_now(r->c);
        CL_TRY(cl_recv(r->pp, r->in, n, from, tag, NULL));
        r->wait[PP] += cl_now(r->c) - t0;
    }
    r->held += backward ? -1 : 1;
    if (r->held > r->peak)
        r->peak = r->held;
    r->hiding = backward && mb == s->microbatches - 1 && s->overlap && r->gr.buckets > 0;
    for (int l = 0; l < s->layers / s->pp; l++)
        CL_TRY(layer(r, backward));
    r->hiding = false;
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
    double t0 = cl_now(r->c);
    CL_TRY(cl_waitall(r->c, r->nsends, r->sends, NULL));
    r->wait[PP] += cl_now(r->c) - t0;
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
    CL_TRY(grads_init(r));
    CL_TRY(schedule(r));
    double pipe_end = cl_now(r->c) - t0;
    CL_TRY(grads_finish(r));
    if (s->out)
        s->out[cl_rank(r->c)] = (cl_step_rank){
            .tp = cl_sent_bytes(r->tp), .pp = cl_sent_bytes(r->pp),
            .dp = cl_sent_bytes(r->dp), .compute = r->compute, .pipe_end = pipe_end,
            .tp_wait = r->wait[TP], .pp_wait = r->wait[PP], .dp_wait = r->wait[DP],
            .peak_microbatches = r->peak, .end = cl_now(r->c) - t0};
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
