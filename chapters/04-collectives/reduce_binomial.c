/* reduce-binomial: broadcast-binomial run backwards.  Rank r receives
 * from r + 1, r + 2, r + 4, ... (below its lowest set bit, while < K),
 * adding each, then sends the partial sum to r minus that bit.  A child
 * r + 2^j is done when rank r is done with r + 2^(j-1), so each rank
 * receives one message at a time: ceil(log2 K)(alpha + n / B) at rank 0,
 * and no port is ever shared.  Any K and n. */
#include "coll.h"

int reduce_binomial(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c);
    size_t count = coll_count(a->bytes), bytes = count * sizeof(double);
    double *x = cl_alloc(c, bytes), *tmp = cl_alloc(c, bytes);
    coll_reduce_init(c, x, count);
    for (int mask = 1; mask < k; mask <<= 1) {
        if (rank & mask)
            return cl_send(c, x, bytes, rank - mask, 0);
        if (rank + mask < k) {
            CL_TRY(cl_recv(c, tmp, bytes, rank + mask, 0, NULL));
            coll_add(x, tmp, count);
        }
    }
    return coll_reduce_verify(c, x, 0, count, "sum at rank 0");
}
