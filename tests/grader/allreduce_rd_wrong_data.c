/* exercise: 4.4
 * expect: fail
 * why: a data check failed
 */
/* Exercise 4.4, done wrong on purpose (the check must fail it): the
 * right partners and messages, but each step keeps the partner's sum in
 * place of adding it to its own, so every rank ends with one rank's
 * value. */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c);
    size_t count = a->bytes / sizeof(double), bytes = count * sizeof(double);
    double *x = cl_alloc(c, bytes), *in = cl_alloc(c, bytes);
    for (size_t i = 0; x && i < count; i++)
        x[i] = (double)(rank + 1) * (double)(i % 7 + 1);
    for (int mask = 1; mask < k; mask <<= 1) {
        cl_request *r[2];
        CL_TRY(cl_irecv(c, in, bytes, rank ^ mask, 0, &r[0]));
        CL_TRY(cl_isend(c, x, bytes, rank ^ mask, 0, &r[1]));
        CL_TRY(cl_waitall(c, 2, r, NULL));
        for (size_t i = 0; x && i < count; i++)
            x[i] = in[i];
    }
    double want = (double)k * (k + 1) / 2;
    for (size_t i = 0; x && cl_checking(c) && i < count; i++)
        if (x[i] != want * (double)(i % 7 + 1))
            return cl_fail(c, "element %zu is %g, expected %g", i, x[i], want * (double)(i % 7 + 1));
    return 0;
}
