/* allreduce-rd: recursive doubling.  In step j rank r swaps its whole
 * running reduction with rank r XOR 2^j and reduces what arrived into it:
 * after log2(K) steps every rank has the result.  log2(K)(alpha + n / B +
 * n gamma): the fewest steps of any all-reduce, each moving and reducing
 * all n bytes, so it wins for small n.  Other K: the fold of coll.h (the
 * odd rank of each of the first K - p pairs hands its data to the even
 * one, which reduces it, before and gets the result back after, two more
 * steps of alpha + n / B and one more reduction).  Any n. */
#include "coll.h"

int allreduce_rd(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c);
    coll_red r = coll_red_of(a);
    size_t count = coll_count(&r, a->bytes), bytes = count * r.size;
    void *x = cl_alloc(c, bytes), *tmp = cl_alloc(c, bytes);
    coll_reduce_init(c, &r, x, count);
    coll_fold f;
    coll_fold_init(&f, rank, k);
    CL_TRY(coll_fold_in(c, &r, &f, x, tmp, count));
    if (f.v < 0) {
        CL_TRY(cl_recv(c, x, bytes, f.buddy, 2, NULL));
        return coll_reduce_verify(c, &r, x, 0, count, "result");
    }
    for (int mask = 1; mask < f.p; mask <<= 1) {
        int peer = coll_real_lo(&f, f.v ^ mask);
        CL_TRY(coll_sendrecv(c, x, bytes, peer, tmp, bytes, peer, 1));
        CL_TRY(coll_reduce(c, &r, x, tmp, count));
    }
    CL_TRY(coll_finish(c, &r, x, count, k));
    if (f.buddy >= 0)
        CL_TRY(cl_send(c, x, bytes, f.buddy, 2));
    return coll_reduce_verify(c, &r, x, 0, count, "result");
}
