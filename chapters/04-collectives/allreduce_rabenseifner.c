/* allreduce-rabenseifner: reduce-scatter by recursive halving, then
 * all-gather by recursive doubling (Rabenseifner, "Optimization of
 * collective reduction operations", ICCS 2004).  For K a power of two,
 * 2 log2(K) alpha + 2 (K - 1) n / (K B): the ring's bytes with
 * recursive doubling's count of steps.  Other K: the fold of coll.h (two
 * more steps of alpha + n / B).  Any n. */
#include "coll.h"

int allreduce_rabenseifner(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c);
    size_t count = coll_count(a->bytes), bytes = count * sizeof(double);
    double *x = cl_alloc(c, bytes), *tmp = cl_alloc(c, bytes);
    coll_reduce_init(c, x, count);
    coll_fold f;
    coll_fold_init(&f, rank, k);
    CL_TRY(coll_fold_in(c, &f, x, tmp, count));
    if (f.v < 0) {
        CL_TRY(cl_recv(c, x, bytes, f.buddy, 3, NULL));
        return coll_reduce_verify(c, x, 0, count, "sum");
    }
    CL_TRY(coll_halving(c, &f, x, tmp, count, 1));
    CL_TRY(coll_doubling(c, &f, x, count, sizeof(double), 2));
    if (f.buddy >= 0)
        CL_TRY(cl_send(c, x, bytes, f.buddy, 3));
    return coll_reduce_verify(c, x, 0, count, "sum");
}
