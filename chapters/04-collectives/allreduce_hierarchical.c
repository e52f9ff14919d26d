/* allreduce-hierarchical: ranks come in groups of G (--group; by default
 * the topology's first dimension, the GPUs of one node): group g is ranks
 * gG .. gG + G - 1.  The buffer is cut into G blocks.
 *
 *   1. inside each group, a ring reduce-scatter: after G - 1 steps local
 *      rank l holds block l reduced over its group;
 *   2. across groups, for each block j, the owners of j in every group (one
 *      per group, made a communicator with cl_group) run the ring
 *      all-reduce on it (allreduce_ring.c), then finish it (avg: / K);
 *   3. inside each group, a ring all-gather of the reduced blocks.
 *
 * Only step 2 crosses between groups, and it moves n / G bytes per rank
 * through every rank's own link at once, where a flat ring pushes every
 * byte through the few links between the groups in turn (on a node of
 * GPUs with a network card each, every card works at once).  With L = K / G
 * groups, alone on their links:
 *   2(G - 1)(alpha + n / (G B)) + 2(L - 1)(alpha + n / (K B))
 *     + ((G - 1) / G + (L - 1) / K) n gamma,
 * the ring's bytes and reductions in 2(G - 1) + 2(L - 1) steps instead of
 * 2(K - 1); with one group (G = K) it is the ring all-reduce.
 *
 * Any K and G: when G does not divide K the last group has s < G ranks, and
 * its local rank l owns blocks l, l + s, l + 2s, ... (a ring step then
 * moves every block of a set, one message each); step 2 then has a rank in
 * several rings, run in block order on every rank so none waits on another
 * in a cycle. */
#include "coll.h"

/* The blocks local rank `set` owns in a group of `size` ranks: j with
 * j % size == set.  One ring step inside the group (ranks base .. base +
 * size - 1): send set `out` to the right, receive set `in` from the left
 * (into tmp and reduced when reducing, in place otherwise); q has room
 * for a request per block of both sets (2G). */
static int ring_step(cl_comm *c, const coll_red *r, void *x, void *tmp, size_t count, int g,
                     int base, int size, int out, int in, bool reduce, cl_request **q)
{
    int me = cl_rank(c) - base, n = 0;
    int right = base + (me + 1) % size, left = base + (me - 1 + size) % size;
    size_t at = 0;
    for (int j = in; j < g; j += size) {
        size_t f = coll_first(count, g, j), len = coll_len(count, g, j);
        CL_TRY(cl_irecv(c, reduce ? coll_at(r, tmp, at) : coll_at(r, x, f), len * r->size, left,
                        j, &q[n++]));
        at += len;
    }
    for (int j = out; j < g; j += size)
        CL_TRY(cl_isend(c, coll_at(r, x, coll_first(count, g, j)),
                        coll_len(count, g, j) * r->size, right, j, &q[n++]));
    CL_TRY(cl_waitall(c, n, q, NULL));
    at = 0;
    for (int j = in; reduce && j < g; j += size) {
        CL_TRY(coll_reduce(c, r, coll_at(r, x, coll_first(count, g, j)), coll_at(r, tmp, at),
                           coll_len(count, g, j)));
        at += coll_len(count, g, j);
    }
    return 0;
}

int allreduce_hierarchical(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c);
    int g = a->group > 0 && a->group < k ? a->group : k;
    int groups = (k + g - 1) / g, base = rank / g * g, me = rank - base;
    int size = base + g <= k ? g : k - base;
    int *members = cl_array(c, (size_t)groups, sizeof *members);
    cl_request **q;
    if (!members)
        return CL_ENOMEM;
    CL_TRY(coll_requests(c, 2 * (size_t)g, &q));
    coll_red r = coll_red_of(a);
    size_t count = coll_count(&r, a->bytes);
    void *x = cl_alloc(c, count * r.size), *tmp = cl_alloc(c, count * r.size);
    coll_reduce_init(c, &r, x, count);
    for (int s = 0; s < size - 1; s++)
        CL_TRY(ring_step(c, &r, x, tmp, count, g, base, size, (me - s - 1 + size) % size,
                         (me - s - 2 + 2 * size) % size, true, q));
    for (int j = 0; j < g; j++) {
        for (int h = 0; h < groups; h++) {
            int hb = h * g, hs = hb + g <= k ? g : k - hb;
            members[h] = hb + j % hs;
        }
        cl_comm *across;
        CL_TRY(cl_group(c, members, groups, &across));
        if (!across)
            continue;
        void *block = coll_at(&r, x, coll_first(count, g, j));
        size_t len = coll_len(count, g, j);
        int err = coll_ring_allreduce(across, &r, block, len, 0);
        cl_group_free(across);
        CL_TRY(err);
        CL_TRY(coll_finish(c, &r, block, len, k));
    }
    for (int s = 0; s < size - 1; s++)
        CL_TRY(ring_step(c, &r, x, tmp, count, g, base, size, (me - s + size) % size,
                         (me - s - 1 + size) % size, false, q));
    return coll_reduce_verify(c, &r, x, 0, count, "result");
}
