/* allreduce-naive: a running reduction walks the ring 0 -> 1 -> ... ->
 * K-1, each rank reducing its buffer into it (K - 1 full-size hops, one
 * after another), then the result walks back K-1 -> ... -> 0 (K - 1 more).
 * 2(K - 1) messages of n bytes in sequence, and K - 1 reductions of n
 * bytes on the way out: 2(K - 1)(alpha + n / B) + (K - 1) n gamma.  Any
 * K and n. */
#include "coll.h"

int allreduce_naive(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), size = cl_size(c);
    coll_red r = coll_red_of(a);
    size_t count = coll_count(&r, a->bytes), bytes = count * r.size;
    void *x = cl_alloc(c, bytes), *in = cl_alloc(c, bytes);
    coll_reduce_init(c, &r, x, count);
    if (rank > 0) {
        CL_TRY(cl_recv(c, in, bytes, rank - 1, 0, NULL));
        CL_TRY(coll_reduce(c, &r, x, in, count));
    }
    if (rank < size - 1) {
        CL_TRY(cl_send(c, x, bytes, rank + 1, 0));
        CL_TRY(cl_recv(c, x, bytes, rank + 1, 1, NULL));
    } else {
        CL_TRY(coll_finish(c, &r, x, count, size));
    }
    if (rank > 0)
        CL_TRY(cl_send(c, x, bytes, rank - 1, 1));
    return coll_reduce_verify(c, &r, x, 0, count, "result");
}
