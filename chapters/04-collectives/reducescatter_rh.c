/* reducescatter-rh: recursive halving.  In step j rank r gives half of
 * what it still reduces to r XOR 2^(log2 K - 1 - j), reduces the partner's
 * copy of the half it keeps into its own, and halves again: for K a power
 * of two, log2(K) steps of K/2, K/4, ..., 1 blocks:
 * log2(K) alpha + (K - 1) n / (K B) + (K - 1) n gamma / K.  Other K: the
 * fold of coll.h; each odd rank of the first 2(K - p) first hands all its
 * data to the even rank below, which reduces it, takes part for both and
 * at the end hands back the odd rank's block.  Any n. */
#include "coll.h"

int reducescatter_rh(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c);
    coll_red r = coll_red_of(a);
    size_t count = coll_count(&r, a->bytes), bytes = count * r.size;
    void *x = cl_alloc(c, bytes), *tmp = cl_alloc(c, bytes);
    coll_reduce_init(c, &r, x, count);
    coll_fold f;
    coll_fold_init(&f, rank, k);
    size_t mf = coll_first(count, k, rank), ml = coll_len(count, k, rank);
    CL_TRY(coll_fold_in(c, &r, &f, x, tmp, count));
    if (f.v < 0) {
        CL_TRY(cl_recv(c, coll_at(&r, x, mf), ml * r.size, f.buddy, 2, NULL));
    } else {
        CL_TRY(coll_halving(c, &r, &f, x, tmp, count, 1));
        int lo = coll_real_lo(&f, f.v), hi = coll_real_hi(&f, f.v);
        CL_TRY(coll_finish(c, &r, coll_at(&r, x, coll_first(count, k, lo)),
                           coll_span(count, k, lo, hi - lo + 1), k));
        if (f.buddy >= 0)
            CL_TRY(cl_send(c, coll_at(&r, x, coll_first(count, k, f.buddy)),
                           coll_len(count, k, f.buddy) * r.size, f.buddy, 2));
    }
    return coll_reduce_verify(c, &r, coll_at(&r, x, mf), mf, ml, "reduced block");
}
