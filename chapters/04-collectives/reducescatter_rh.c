/* reducescatter-rh: recursive halving.  In step j rank r gives half of
 * what it still sums to r XOR 2^(log2 K - 1 - j), adds the partner's copy
 * of the half it keeps, and halves again: for K a power of two, log2(K)
 * steps of K/2, K/4, ..., 1 blocks: log2(K) alpha + (K - 1) n / (K B).
 * Other K: the fold of coll.h; each odd rank of the first 2(K - p) first
 * hands all its data to the even rank below, which adds it, takes part
 * for both and at the end hands back the odd rank's block.  Any n. */
#include "coll.h"

int reducescatter_rh(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c);
    size_t count = coll_count(a->bytes), bytes = count * sizeof(double);
    double *x = cl_alloc(c, bytes), *tmp = cl_alloc(c, bytes);
    coll_reduce_init(c, x, count);
    coll_fold f;
    coll_fold_init(&f, rank, k);
    size_t mf = coll_first(count, k, rank), ml = coll_len(count, k, rank);
    CL_TRY(coll_fold_in(c, &f, x, tmp, count));
    if (f.v < 0) {
        CL_TRY(cl_recv(c, COLL_AT(x, mf), ml * sizeof(double), f.buddy, 2, NULL));
    } else {
        CL_TRY(coll_halving(c, &f, x, tmp, count, 1));
        if (f.buddy >= 0)
            CL_TRY(cl_send(c, COLL_AT(x, coll_first(count, k, f.buddy)),
                           coll_len(count, k, f.buddy) * sizeof(double), f.buddy, 2));
    }
    return coll_reduce_verify(c, COLL_AT(x, mf), mf, ml, "reduced block");
}
