/* allreduce-naive: a running sum walks the ring 0 -> 1 -> ... -> K-1, each
 * rank adding its buffer (K - 1 full-size hops, one after another), then
 * the total walks back K-1 -> ... -> 0 (K - 1 more).  2(K - 1) messages of
 * n bytes in sequence: 2(K - 1)(alpha + n / B).  Any K and n. */
#include "coll.h"

int allreduce_naive(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), size = cl_size(c);
    size_t count = coll_count(a->bytes), bytes = count * sizeof(double);
    double *x = cl_alloc(c, bytes), *in = cl_alloc(c, bytes);
    coll_reduce_init(c, x, count);
    if (rank > 0) {
        CL_TRY(cl_recv(c, in, bytes, rank - 1, 0, NULL));
        coll_add(x, in, count);
    }
    if (rank < size - 1) {
        CL_TRY(cl_send(c, x, bytes, rank + 1, 0));
        CL_TRY(cl_recv(c, x, bytes, rank + 1, 1, NULL));
    }
    if (rank > 0)
        CL_TRY(cl_send(c, x, bytes, rank - 1, 1));
    return coll_reduce_verify(c, x, 0, count, "sum");
}
