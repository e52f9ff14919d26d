/* Exercise 4.9: a reduce-scatter by recursive halving, K a power of two.
 * The c = a->bytes / 8 doubles are cut into K blocks, block j being
 * elements [j c / K, (j + 1) c / K); element i of rank r is
 * (r + 1)(i % 7 + 1).  Rank r still reduces the blocks [lo, lo + 2m),
 * first all K of them (lo = 0, m = K / 2).  In each step it swaps with
 * rank r XOR m: it keeps the half that holds block r, sends the other
 * half and receives the partner's copy of the kept one, which it adds in
 * with cl_reduce_local; then m halves.  After log2 K steps rank r holds
 * block r summed over every rank: log2 K alpha + (K - 1) n / (K B) +
 * (K - 1) n gamma / K, K log2 K messages. */
#include "commlab.h"

static size_t first(size_t count, int k, int j)
{
    return (size_t)j * count / (size_t)k;
}

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c);
    if (k & (k - 1))
        return cl_fail(c, "recursive halving here needs a power of two ranks, got %d", k);
    size_t count = a->bytes / sizeof(double);
    double *x = cl_alloc(c, count * sizeof(double)), *in = cl_alloc(c, count * sizeof(double));
    for (size_t i = 0; x && i < count; i++)
        x[i] = (double)(rank + 1) * (double)(i % 7 + 1);
    int lo = 0;
    for (int m = k / 2; m > 0; m /= 2) {
        int keep = rank & m ? lo + m : lo, give = rank & m ? lo : lo + m;
        size_t kf = first(count, k, keep), kl = first(count, k, keep + m) - kf;
        size_t gf = first(count, k, give), gl = first(count, k, give + m) - gf;
        cl_request *r[2];
        CL_TRY(cl_irecv(c, in, kl * sizeof(double), rank ^ m, 0, &r[0]));
        CL_TRY(cl_isend(c, CL_AT(x, gf * sizeof(double)), gl * sizeof(double), rank ^ m, 0,
                        &r[1]));
        CL_TRY(cl_waitall(c, 2, r, NULL));
        CL_TRY(cl_reduce_local(c, CL_AT(x, kf * sizeof(double)), in, kl, CL_F64, CL_OP_SUM));
        lo = keep;
    }
    double sum = (double)k * (k + 1) / 2;
    for (size_t i = first(count, k, rank); x && cl_checking(c) && i < first(count, k, rank + 1);
         i++)
        if (x[i] != sum * (double)(i % 7 + 1))
            return cl_fail(c, "element %zu is %g, expected %g", i, x[i], sum * (double)(i % 7 + 1));
    return 0;
}
