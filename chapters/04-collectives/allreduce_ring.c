/* allreduce-ring: reduce-scatter then all-gather around the ring.  The
 * buffer is cut into K blocks (coll.h: sizes that do not divide spread
 * the remainder over the first blocks); in each of K - 1 steps every rank
 * sends one block to its right and reduces the block from its left into
 * its own, after which rank r owns the full reduction of block
 * (r + 1) mod K (for avg it divides it by K then); K - 1 more steps pass
 * the reduced blocks around.  2(K - 1) steps of n / K bytes per rank, all
 * links busy at once and each port carrying one message, and K - 1
 * reductions of n / K bytes at gamma seconds a byte:
 * 2(K - 1)(alpha + n / (K B)) + (K - 1) n gamma / K.  Any K and n. */
#include "coll.h"

static int step(cl_comm *c, const coll_red *r, void *x, void *tmp, size_t count,
                int send_block, int recv_block, int tag, bool reduce)
{
    int rank = cl_rank(c), k = cl_size(c);
    size_t sf = coll_first(count, k, send_block), sl = coll_len(count, k, send_block);
    size_t rf = coll_first(count, k, recv_block), rl = coll_len(count, k, recv_block);
    CL_TRY(coll_sendrecv(c, coll_at(r, x, sf), sl * r->size, (rank + 1) % k,
                         reduce ? tmp : coll_at(r, x, rf), rl * r->size, (rank - 1 + k) % k, tag));
    return reduce ? coll_reduce(c, r, coll_at(r, x, rf), tmp, rl) : 0;
}

int coll_ring_allreduce(cl_comm *c, const coll_red *r, void *x, size_t count, int n)
{
    int rank = cl_rank(c), k = cl_size(c);
    void *tmp = cl_alloc(c, (count / (size_t)k + 1) * r->size);
    for (int s = 0; s < k - 1; s++)
        CL_TRY(step(c, r, x, tmp, count, (rank - s + k) % k, (rank - s - 1 + k) % k, 0, true));
    int mine = (rank + 1) % k;
    if (n)
        CL_TRY(coll_finish(c, r, coll_at(r, x, coll_first(count, k, mine)),
                           coll_len(count, k, mine), n));
    for (int s = 0; s < k - 1; s++)
        CL_TRY(step(c, r, x, tmp, count, (rank + 1 - s + k) % k, (rank - s + k) % k, 1, false));
    return 0;
}

int allreduce_ring(cl_comm *c, const cl_args *a)
{
    coll_red r = coll_red_of(a);
    size_t count = coll_count(&r, a->bytes);
    void *x = cl_alloc(c, count * r.size);
    coll_reduce_init(c, &r, x, count);
    CL_TRY(coll_ring_allreduce(c, &r, x, count, cl_size(c)));
    return coll_reduce_verify(c, &r, x, 0, count, "result");
}
