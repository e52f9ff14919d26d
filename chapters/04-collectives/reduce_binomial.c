/* reduce-binomial: broadcast-binomial run backwards.  Rank r receives
 * from r + 1, r + 2, r + 4, ... (below its lowest set bit, while < K),
 * reducing each into its own, then sends the partial result to r minus
 * that bit.  A child r + 2^j is done when rank r is done with r + 2^(j-1),
 * so each rank receives one message at a time: ceil(log2 K)(alpha + n / B
 * + n gamma) at rank 0, and no port is ever shared.  Any K and n. */
#include "coll.h"

int reduce_binomial(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c);
    coll_red r = coll_red_of(a);
    size_t count = coll_count(&r, a->bytes), bytes = count * r.size;
    void *x = cl_alloc(c, bytes), *tmp = cl_alloc(c, bytes);
    coll_reduce_init(c, &r, x, count);
    for (int mask = 1; mask < k; mask <<= 1) {
        if (rank & mask)
            return cl_send(c, x, bytes, rank - mask, 0);
        if (rank + mask < k) {
            CL_TRY(cl_recv(c, tmp, bytes, rank + mask, 0, NULL));
            CL_TRY(coll_reduce(c, &r, x, tmp, count));
        }
    }
    CL_TRY(coll_finish(c, &r, x, count, k));
    return coll_reduce_verify(c, &r, x, 0, count, "result at rank 0");
}
