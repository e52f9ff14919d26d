/* exercise: 4.9
 * expect: fail
 * why: exited 1 (a data check failed)
 * shm: yes
 */
/* Exercise 4.9, done wrong on purpose: each step keeps the half that does
 * not hold block r and sends the one that does, so every rank ends with
 * its partners' blocks summed and its own block never reduced. */
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
        int keep = rank & m ? lo : lo + m, give = rank & m ? lo + m : lo;
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
