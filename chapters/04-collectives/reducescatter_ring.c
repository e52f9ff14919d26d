/* reducescatter-ring: every rank holds n bytes of elements and rank r ends
 * with block r (of K, coll.h) of their reduction over all ranks.  In step
 * s every rank sends its running reduction of one block to its right
 * neighbour and reduces the block arriving from its left into its own;
 * after K - 1 steps the block that has visited every rank is r's own.
 * (K - 1)(alpha + n / (K B) + n gamma / K), each port carrying one
 * message.  Any K and n. */
#include "coll.h"

int reducescatter_ring(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c);
    coll_red r = coll_red_of(a);
    size_t count = coll_count(&r, a->bytes);
    void *x = cl_alloc(c, count * r.size);
    void *tmp = cl_alloc(c, (count / (size_t)k + 1) * r.size);
    coll_reduce_init(c, &r, x, count);
    int right = (rank + 1) % k, left = (rank - 1 + k) % k;
    for (int s = 0; s < k - 1; s++) {
        int out = (rank - s - 1 + k) % k, in = (rank - s - 2 + 2 * k) % k;
        size_t of = coll_first(count, k, out), inf = coll_first(count, k, in);
        size_t il = coll_len(count, k, in);
        CL_TRY(coll_sendrecv(c, coll_at(&r, x, of), coll_len(count, k, out) * r.size, right, tmp,
                             il * r.size, left, 0));
        CL_TRY(coll_reduce(c, &r, coll_at(&r, x, inf), tmp, il));
    }
    size_t mf = coll_first(count, k, rank), ml = coll_len(count, k, rank);
    CL_TRY(coll_finish(c, &r, coll_at(&r, x, mf), ml, k));
    return coll_reduce_verify(c, &r, coll_at(&r, x, mf), mf, ml, "reduced block");
}
