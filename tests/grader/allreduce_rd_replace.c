/* exercise: 4.4
 * expect: fail
 * why: does not carry the data
 * shm: yes
 * kind: wrong data - replaces its running sum with what arrived instead
 * of adding it. */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c);
    if (k & (k - 1))
        return cl_fail(c, "needs a power of two ranks, got %d", k);
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
    return 0;
}
