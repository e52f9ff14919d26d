/* exercise: 4.4
 * expect: fail
 * why: messages
 */
/* Exercise 4.4, done wrong on purpose (the check must fail it): the right
 * sum, by every rank sending its buffer to every other rank (linear):
 * K (K - 1) messages where K log2 K do. */
#include "commlab.h"

#define MAX_RANKS 64

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c);
    if (k > MAX_RANKS)
        return cl_fail(c, "at most %d ranks", MAX_RANKS);
    size_t count = a->bytes / sizeof(double), bytes = count * sizeof(double);
    double *x = cl_alloc(c, bytes), *in[MAX_RANKS];
    cl_request *r[2 * MAX_RANKS];
    for (size_t i = 0; x && i < count; i++)
        x[i] = (double)(rank + 1) * (double)(i % 7 + 1);
    int n = 0;
    for (int p = 0; p < k; p++) {
        if (p == rank)
            continue;
        in[p] = cl_alloc(c, bytes);
        CL_TRY(cl_irecv(c, in[p], bytes, p, 0, &r[n++]));
        CL_TRY(cl_isend(c, x, bytes, p, 0, &r[n++]));
    }
    CL_TRY(cl_waitall(c, n, r, NULL));
    for (int p = 0; p < k; p++)
        for (size_t i = 0; x && p != rank && i < count; i++)
            x[i] += in[p][i];
    double want = (double)k * (k + 1) / 2;
    for (size_t i = 0; x && cl_checking(c) && i < count; i++)
        if (x[i] != want * (double)(i % 7 + 1))
            return cl_fail(c, "element %zu is %g, expected %g", i, x[i], want * (double)(i % 7 + 1));
    return 0;
}
