/* allreduce-ring: reduce-scatter then all-gather around the ring.  The
 * buffer is cut into K blocks (coll.h: sizes that do not divide spread
 * the remainder over the first blocks); in each of K - 1 steps every rank
 * sends one block to its right and adds the block from its left, after
 * which rank r owns the full sum of block (r + 1) mod K; K - 1 more steps
 * pass the summed blocks around.  2(K - 1) steps of n / K bytes per rank,
 * all links busy at once and each port carrying one message:
 * 2(K - 1)(alpha + n / (K B)).  Any K and n. */
#include "coll.h"

static int step(cl_comm *c, double *x, double *tmp, size_t count, int send_block,
                int recv_block, int tag, int reduce)
{
    int rank = cl_rank(c), k = cl_size(c);
    size_t sf = coll_first(count, k, send_block), sl = coll_len(count, k, send_block);
    size_t rf = coll_first(count, k, recv_block), rl = coll_len(count, k, recv_block);
    CL_TRY(coll_sendrecv(c, COLL_AT(x, sf), sl * sizeof(double), (rank + 1) % k,
                         reduce ? tmp : COLL_AT(x, rf), rl * sizeof(double), (rank - 1 + k) % k,
                         tag));
    if (reduce)
        coll_add(COLL_AT(x, rf), tmp, rl);
    return 0;
}

int coll_ring_allreduce(cl_comm *c, double *x, size_t count)
{
    int rank = cl_rank(c), k = cl_size(c);
    double *tmp = cl_alloc(c, (count / (size_t)k + 1) * sizeof(double));
    for (int s = 0; s < k - 1; s++)
        CL_TRY(step(c, x, tmp, count, (rank - s + k) % k, (rank - s - 1 + k) % k, 0, 1));
    for (int s = 0; s < k - 1; s++)
        CL_TRY(step(c, x, tmp, count, (rank + 1 - s + k) % k, (rank - s + k) % k, 1, 0));
    return 0;
}

int allreduce_ring(cl_comm *c, const cl_args *a)
{
    size_t count = coll_count(a->bytes);
    double *x = cl_alloc(c, count * sizeof(double));
    coll_reduce_init(c, x, count);
    CL_TRY(coll_ring_allreduce(c, x, count));
    return coll_reduce_verify(c, x, 0, count, "sum");
}
