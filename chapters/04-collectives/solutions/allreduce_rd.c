/* Exercise 4.4: a recursive-doubling all-reduce on K a power of two.
 * Element i of rank r starts as (r + 1)(i % 7 + 1); in step j every rank
 * swaps its whole running sum with rank r XOR 2^j and adds what it got.
 * After log2 K steps element i is K (K + 1) / 2 (i % 7 + 1) on every rank:
 * K log2 K messages. */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c);
    if (k & (k - 1))
        return cl_fail(c, "recursive doubling here needs a power of two ranks, got %d", k);
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
            x[i] += in[i];
    }
    double sum = (double)k * (k + 1) / 2;
    for (size_t i = 0; x && cl_checking(c) && i < count; i++)
        if (x[i] != sum * (double)(i % 7 + 1))
            return cl_fail(c, "element %zu is %g, expected %g", i, x[i],
                           sum * (double)(i % 7 + 1));
    return 0;
}
