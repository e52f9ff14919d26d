/* formula.c - the alpha-beta formulas of chapter 04's algorithms; each
 * names the steps of its pattern file (chapters/04-collectives/). */
#include "core/formula.h"

/* One message of m bytes alone: alpha + m / B. */
static double t1(const formula_args *f, double m)
{
    return f->alpha + m / f->bandwidth;
}

static double n_(const formula_args *f) /* the collective's bytes */
{
    return (double)f->bytes;
}

static double nd(const formula_args *f) /* the bytes a reduction moves: whole doubles */
{
    return (double)(f->bytes / 8 * 8);
}

static int ceil_log2(int k)
{
    int l = 0;
    while ((1 << l) < k)
        l++;
    return l;
}

static int floor_log2(int k)
{
    int l = 0;
    while ((2 << l) <= k)
        l++;
    return l;
}

static bool pow2(int k)
{
    return (k & (k - 1)) == 0;
}

double formula_broadcast_linear(const formula_args *f)
{
    return t1(f, n_(f));
}

double formula_broadcast_binomial(const formula_args *f)
{
    return ceil_log2(f->ranks) * t1(f, n_(f));
}

static uint64_t piece(const formula_args *f)
{
    return f->chunk ? f->chunk : f->bytes >= 8 ? f->bytes / 8 : 1;
}

double formula_broadcast_chain(const formula_args *f)
{
    uint64_t c = piece(f);
    double m = f->bytes ? (double)((f->bytes + c - 1) / c) : 1, k = f->ranks;
    double pc = f->bytes < c ? n_(f) : (double)c;
    if (pc <= (double)f->eager_limit)
        return (k - 1) * f->alpha + (k + m - 2) * pc / f->bandwidth;
    return (k + m - 2) * t1(f, pc);
}

/* Reducing m bytes: m gamma. */
static double red(const formula_args *f, double m)
{
    return m * f->gamma;
}

double formula_reduce_linear(const formula_args *f)
{
    return t1(f, nd(f)) + (f->ranks - 1) * red(f, nd(f));
}

double formula_reduce_binomial(const formula_args *f)
{
    return ceil_log2(f->ranks) * (t1(f, nd(f)) + red(f, nd(f)));
}

double formula_gather_linear(const formula_args *f)
{
    return t1(f, n_(f) / f->ranks);
}

double formula_gather_binomial(const formula_args *f)
{
    int l = ceil_log2(f->ranks);
    return l * f->alpha + (double)((1 << l) - 1) * n_(f) / f->ranks / f->bandwidth;
}

double formula_scatter_linear(const formula_args *f)
{
    return formula_gather_linear(f);
}

double formula_scatter_binomial(const formula_args *f)
{
    return formula_gather_binomial(f);
}

double formula_allgather_ring(const formula_args *f)
{
    return (f->ranks - 1) * t1(f, n_(f) / f->ranks);
}

/* The power-of-two part of a fold over p = 2^floor(log2 K) ranks that
 * moves `total` bytes in blocks of 1, 2, ..., p/2 p-ths, and the fold's two
 * extra steps (first, last) when K is not p. */
static double folded(const formula_args *f, double total, double first, double last)
{
    int lp = floor_log2(f->ranks), p = 1 << lp;
    double t = lp * f->alpha + (double)(p - 1) * total / p / f->bandwidth;
    return pow2(f->ranks) ? t : t + t1(f, first) + t1(f, last);
}

double formula_allgather_rd(const formula_args *f)
{
    if (pow2(f->ranks))
        return ceil_log2(f->ranks) * f->alpha +
               (double)(f->ranks - 1) * n_(f) / f->ranks / f->bandwidth;
    return folded(f, n_(f), n_(f) / f->ranks, n_(f));
}

/* Recursive halving over p = 2^floor(log2 K) ranks reduces (p - 1) / p
 * of the bytes; the fold first reduces all of them once more. */
static double halving_red(const formula_args *f)
{
    int p = 1 << floor_log2(f->ranks);
    return red(f, (double)(p - 1) * nd(f) / p) + (pow2(f->ranks) ? 0 : red(f, nd(f)));
}

double formula_reducescatter_ring(const formula_args *f)
{
    return (f->ranks - 1) * (t1(f, nd(f) / f->ranks) + red(f, nd(f) / f->ranks));
}

double formula_reducescatter_rh(const formula_args *f)
{
    double r = halving_red(f);
    if (pow2(f->ranks))
        return ceil_log2(f->ranks) * f->alpha +
               (double)(f->ranks - 1) * nd(f) / f->ranks / f->bandwidth + r;
    return folded(f, nd(f), nd(f), nd(f) / f->ranks) + r;
}

double formula_allreduce_naive(const formula_args *f)
{
    return 2 * (f->ranks - 1) * t1(f, nd(f)) + (f->ranks - 1) * red(f, nd(f));
}

double formula_allreduce_ring(const formula_args *f)
{
    return 2 * (f->ranks - 1) * t1(f, nd(f) / f->ranks) +
           (f->ranks - 1) * red(f, nd(f) / f->ranks);
}

double formula_allreduce_rd(const formula_args *f)
{
    int lp = floor_log2(f->ranks), steps = lp + (pow2(f->ranks) ? 0 : 2);
    return steps * t1(f, nd(f)) + (lp + (pow2(f->ranks) ? 0 : 1)) * red(f, nd(f));
}

double formula_allreduce_rabenseifner(const formula_args *f)
{
    int lp = floor_log2(f->ranks), p = 1 << lp;
    double t = 2 * lp * f->alpha + 2.0 * (double)(p - 1) * nd(f) / p / f->bandwidth +
               halving_red(f);
    return pow2(f->ranks) ? t : t + 2 * t1(f, nd(f));
}

/* When rank r of the tree has its children's results reduced into its
 * own: both children's messages arrive together, one t1 after the later
 * child is ready, and each is then reduced. */
static double tree_up(const formula_args *f, int r)
{
    double ready = 0;
    int children = 0;
    for (int c = 2 * r + 1; c <= 2 * r + 2 && c < f->ranks; c++, children++) {
        double t = tree_up(f, c);
        ready = t > ready ? t : ready;
    }
    return children ? ready + t1(f, nd(f)) + children * red(f, nd(f)) : 0;
}

double formula_allreduce_tree(const formula_args *f)
{
    return tree_up(f, 0) + floor_log2(f->ranks) * t1(f, nd(f));
}

static int group_of(const formula_args *f)
{
    return f->group > 0 && f->group < f->ranks ? f->group : f->ranks;
}

double formula_allreduce_hierarchical(const formula_args *f)
{
    int g = group_of(f), groups = (f->ranks + g - 1) / g;
    double t = 0;
    if (g > 1)
        t += 2 * (g - 1) * t1(f, nd(f) / g) + (g - 1) * red(f, nd(f) / g);
    if (groups > 1)
        t += 2 * (groups - 1) * t1(f, nd(f) / g / groups) +
             (groups - 1) * red(f, nd(f) / g / groups);
    return t;
}

double formula_alltoall_linear(const formula_args *f)
{
    return t1(f, n_(f) / f->ranks);
}

double formula_alltoall_pairwise(const formula_args *f)
{
    return (f->ranks - 1) * t1(f, n_(f) / f->ranks);
}

double formula_barrier_dissemination(const formula_args *f)
{
    return ceil_log2(f->ranks) * t1(f, (double)((f->ranks + 7) / 8));
}

bool formula_exact(formula_fn *fn, const formula_args *f)
{
    uint64_t k = (uint64_t)f->ranks;
    bool even = f->bytes % (8 * k) == 0; /* K blocks of whole doubles */
    if (fn == formula_broadcast_binomial || fn == formula_reduce_binomial ||
        fn == formula_gather_binomial || fn == formula_scatter_binomial ||
        fn == formula_allgather_rd || fn == formula_reducescatter_rh ||
        fn == formula_allreduce_rd || fn == formula_allreduce_rabenseifner)
        return pow2(f->ranks) && even; /* a cut tree's branches differ; a fold
                                          overlaps eager messages */
    if (fn == formula_broadcast_chain)
        return f->bytes % piece(f) == 0;
    if (fn == formula_allreduce_hierarchical)
        return k % (uint64_t)group_of(f) == 0 && even;
    if (fn == formula_barrier_dissemination || fn == formula_broadcast_linear)
        return true;
    return even;
}
