/* exercise: 4.9
 * expect: fail
 * why: in the task's schedule it goes to rank
 */
/* Exercise 4.9, done wrong on purpose: the sums come out right, but each
 * step sends the whole range still being reduced, both halves, and the
 * receiver picks out the half it keeps: twice the bytes of the task's
 * halving, in every step. */
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
        CL_TRY(cl_irecv(c, in, count * sizeof(double), rank ^ m, 0, &r[0]));
        size_t all = first(count, k, lo + 2 * m) - first(count, k, lo);
        CL_TRY(cl_isend(c, CL_AT(x, first(count, k, lo) * sizeof(double)), all * sizeof(double),
                        rank ^ m, 0, &r[1]));
        (void)gf;
        (void)gl;
        CL_TRY(cl_waitall(c, 2, r, NULL));
        size_t skip = keep == lo ? 0 : kf - first(count, k, lo);
        CL_TRY(cl_reduce_local(c, CL_AT(x, kf * sizeof(double)), CL_AT(in, skip * sizeof(double)),
                               kl, CL_F64, CL_OP_SUM));
        lo = keep;
    }
    double sum = (double)k * (k + 1) / 2;
    for (size_t i = first(count, k, rank); x && cl_checking(c) && i < first(count, k, rank + 1);
         i++)
        if (x[i] != sum * (double)(i % 7 + 1))
            return cl_fail(c, "element %zu is %g, expected %g", i, x[i], sum * (double)(i % 7 + 1));
    return 0;
}
