/* allreduce-hierarchical: ranks come in groups of G (--group; by default
 * the topology's first dimension, the GPUs of one node): group g is ranks
 * gG .. gG + G - 1, made with cl_group.  The buffer is cut into G blocks.
 *
 *   1. inside each group, a reduce-scatter: every rank posts each block it
 *      does not own to the block's owner at once, and the owner adds them;
 *   2. across groups, for each block j, the owners of j in every group
 *      (one per group, a group of their own) run the ring all-reduce on it;
 *   3. inside each group, an all-gather: every owner posts its summed
 *      blocks to the others at once.
 *
 * Only step 2 crosses between groups, and it moves n / G bytes per rank
 * through every rank's own link at once, where a flat ring would push
 * every byte through the few links between the groups in turn.  With L =
 * K / G groups, alone on their links:
 *   2 (alpha + n / (G B)) + 2 (L - 1)(alpha + n / (K B)).
 *
 * Any K and G: when G does not divide K the last group is smaller, and in a
 * group of s < G ranks local rank l owns blocks l, l + s, l + 2s, ...;
 * step 2 then has a rank in several rings, run in block order on every
 * rank so none waits on another in a cycle. */
#include "coll.h"

static int owner(int j, int size) /* local rank owning block j in a group of size ranks */
{
    return j % size;
}

/* Step 1 (reduce) or 3 (!reduce) inside the group of ranks base .. base +
 * size - 1, blocks of count doubles cut into g. */
static int inside(cl_comm *c, double *x, size_t count, int g, int base, int size, bool reduce)
{
    int me = cl_rank(c) - base, n = 0, got = 0;
    /* A rank owns at most g / size + 1 blocks: fewer than 2g receives of
     * blocks it owns and g messages of the others. */
    cl_request *r[3 * COLL_MAX_RANKS];
    double *in[2 * COLL_MAX_RANKS];
    for (int j = 0; j < g; j++) {
        size_t f = coll_first(count, g, j), len = coll_len(count, g, j), b = len * sizeof(double);
        int own = owner(j, size);
        if (own == me) {
            for (int m = 0; m < size; m++) {
                if (m == me)
                    continue;
                if (reduce) {
                    in[got] = cl_alloc(c, b);
                    CL_TRY(cl_irecv(c, in[got++], b, base + m, j, &r[n]));
                } else {
                    CL_TRY(cl_isend(c, COLL_AT(x, f), b, base + m, j, &r[n]));
                }
                n++;
            }
        } else if (reduce) {
            CL_TRY(cl_isend(c, COLL_AT(x, f), b, base + own, j, &r[n++]));
        } else {
            CL_TRY(cl_irecv(c, COLL_AT(x, f), b, base + own, j, &r[n++]));
        }
    }
    CL_TRY(cl_waitall(c, n, r, NULL));
    if (!reduce)
        return 0;
    got = 0;
    for (int j = 0; j < g; j++) {
        if (owner(j, size) != me)
            continue;
        for (int m = 0; m < size - 1; m++)
            coll_add(COLL_AT(x, coll_first(count, g, j)), in[got++], coll_len(count, g, j));
    }
    return 0;
}

int allreduce_hierarchical(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c);
    int g = a->group > 0 && a->group < k ? a->group : k;
    int groups = (k + g - 1) / g, base = rank / g * g;
    int size = base + g <= k ? g : k - base;
    if (g > COLL_MAX_RANKS || groups > COLL_MAX_RANKS) {
        cl_printf(c, "allreduce-hierarchical: at most %d ranks a group and %d groups, got %d "
                  "and %d", COLL_MAX_RANKS, COLL_MAX_RANKS, g, groups);
        return CL_ERANGE;
    }
    size_t count = coll_count(a->bytes);
    double *x = cl_alloc(c, count * sizeof(double));
    coll_reduce_init(c, x, count);
    CL_TRY(inside(c, x, count, g, base, size, true));
    for (int j = 0; j < g; j++) {
        int members[COLL_MAX_RANKS];
        for (int h = 0; h < groups; h++) {
            int hb = h * g, hs = hb + g <= k ? g : k - hb;
            members[h] = hb + owner(j, hs);
        }
        cl_comm *across;
        CL_TRY(cl_group(c, members, groups, &across));
        if (!across)
            continue;
        int err = coll_ring_allreduce(across, COLL_AT(x, coll_first(count, g, j)),
                                      coll_len(count, g, j));
        cl_group_free(across);
        CL_TRY(err);
    }
    CL_TRY(inside(c, x, count, g, base, size, false));
    return coll_reduce_verify(c, x, 0, count, "sum");
}
