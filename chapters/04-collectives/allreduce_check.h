/* allreduce_check.h - the data both all-reduce patterns start from and the
 * sum they must end with.  Element i of rank r is (r + 1) * (i % 7 + 1), a
 * small integer, so every partial sum is exact in double precision. */
#ifndef ALLREDUCE_CHECK_H
#define ALLREDUCE_CHECK_H

#include <stddef.h>

#include "commlab.h"

static inline void allreduce_init(const cl_comm *c, double *x, size_t count, int rank)
{
    for (size_t i = 0; x && cl_checking(c) && i < count; i++)
        x[i] = (double)(rank + 1) * (double)(i % 7 + 1);
}

static inline int allreduce_verify(cl_comm *c, const double *x, size_t count)
{
    double k = cl_size(c);
    for (size_t i = 0; x && cl_checking(c) && i < count; i++) {
        double want = k * (k + 1) / 2 * (double)(i % 7 + 1);
        if (x[i] != want)
            return cl_fail(c, "element %zu of the sum is %g, expected %g", i, x[i], want);
    }
    return 0;
}

#endif
