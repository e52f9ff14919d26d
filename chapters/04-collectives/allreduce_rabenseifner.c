/* allreduce-rabenseifner: reduce-scatter by recursive halving, then
 * all-gather by recursive doubling (Rabenseifner, "Optimization of
 * collective reduction operations", ICCS 2004).  For K a power of two,
 * 2 log2(K) alpha + 2 (K - 1) n / (K B) + (K - 1) n gamma / K: the ring's
 * bytes and reductions with recursive doubling's count of steps.  Other
 * K: the fold of coll.h (two more steps of alpha + n / B and a reduction
 * of n bytes).  Any n. */
#include "coll.h"

int allreduce_rabenseifner(cl_comm *c, const cl_args *a)
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
        CL_TRY(cl_recv(c, x, bytes, f.buddy, 3, NULL));
        return coll_reduce_verify(c, &r, x, 0, count, "result");
    }
    CL_TRY(coll_halving(c, &r, &f, x, tmp, count, 1));
    int lo = coll_real_lo(&f, f.v), hi = coll_real_hi(&f, f.v);
    size_t mf = coll_first(count, k, lo);
    CL_TRY(coll_finish(c, &r, coll_at(&r, x, mf), coll_span(count, k, lo, hi - lo + 1), k));
    CL_TRY(coll_doubling(c, &f, x, count, r.size, 2));
    if (f.buddy >= 0)
        CL_TRY(cl_send(c, x, bytes, f.buddy, 3));
    return coll_reduce_verify(c, &r, x, 0, count, "result");
}
