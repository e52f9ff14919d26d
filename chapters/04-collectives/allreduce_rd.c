/* allreduce-rd: recursive doubling.  In step j rank r swaps its whole
 * running sum with rank r XOR 2^j and adds: after log2(K) steps every rank
 * has the total.  log2(K)(alpha + n / B): the fewest steps of any
 * all-reduce, each moving all n bytes, so it wins for small n.  Other K:
 * the fold of coll.h (the odd rank of each of the first K - p pairs hands
 * its data to the even one before and gets the total back after, two
 * more steps of alpha + n / B).  Any n. */
#include "coll.h"

int allreduce_rd(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c);
    size_t count = coll_count(a->bytes), bytes = count * sizeof(double);
    double *x = cl_alloc(c, bytes), *tmp = cl_alloc(c, bytes);
    coll_reduce_init(c, x, count);
    coll_fold f;
    coll_fold_init(&f, rank, k);
    CL_TRY(coll_fold_in(c, &f, x, tmp, count));
    if (f.v < 0) {
        CL_TRY(cl_recv(c, x, bytes, f.buddy, 2, NULL));
        return coll_reduce_verify(c, x, 0, count, "sum");
    }
    for (int mask = 1; mask < f.p; mask <<= 1) {
        int peer = coll_real_lo(&f, f.v ^ mask);
        CL_TRY(coll_sendrecv(c, x, bytes, peer, tmp, bytes, peer, 1));
        coll_add(x, tmp, count);
    }
    if (f.buddy >= 0)
        CL_TRY(cl_send(c, x, bytes, f.buddy, 2));
    return coll_reduce_verify(c, x, 0, count, "sum");
}
