/* reducescatter-ring: every rank holds n bytes of doubles and rank r ends
 * with block r (of K, coll.h) of their sum over all ranks.  In step s
 * every rank sends its running sum of one block to its right neighbour
 * and adds the block arriving from its left; after K - 1 steps the block
 * that has visited every rank is r's own.  (K - 1)(alpha + n / (K B)),
 * each port carrying one message.  Any K and n. */
#include "coll.h"

int reducescatter_ring(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c);
    size_t count = coll_count(a->bytes);
    double *x = cl_alloc(c, count * sizeof(double));
    double *tmp = cl_alloc(c, (count / (size_t)k + 1) * sizeof(double));
    coll_reduce_init(c, x, count);
    int right = (rank + 1) % k, left = (rank - 1 + k) % k;
    for (int s = 0; s < k - 1; s++) {
        int out = (rank - s - 1 + k) % k, in = (rank - s - 2 + 2 * k) % k;
        size_t of = coll_first(count, k, out), inf = coll_first(count, k, in);
        size_t il = coll_len(count, k, in);
        CL_TRY(coll_sendrecv(c, COLL_AT(x, of), coll_len(count, k, out) * sizeof(double), right,
                             tmp, il * sizeof(double), left, 0));
        coll_add(COLL_AT(x, inf), tmp, il);
    }
    size_t mf = coll_first(count, k, rank);
    return coll_reduce_verify(c, COLL_AT(x, mf), mf, coll_len(count, k, rank), "reduced block");
}
