/* exercise: 4.3
 * expect: fail
 * why: a data check failed
 */
/* Exercise 4.3, done wrong on purpose (the check must fail it): every
 * step passes on the rank's own block instead of the one it got last, so
 * each rank ends with its left neighbour's block K - 1 times over. */
#include "commlab.h"

static size_t first(size_t n, int k, int j)
{
    return (size_t)j * n / (size_t)k;
}

static size_t len(size_t n, int k, int j)
{
    return first(n, k, j + 1) - first(n, k, j);
}

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c);
    size_t n = a->bytes;
    unsigned char *x = cl_alloc(c, n);
    cl_fill(c, CL_AT(x, first(n, k, rank)), len(n, k, rank), (unsigned long long)rank);
    for (int s = 0; s < k - 1; s++) {
        int in = (rank - s - 1 + k) % k, left = (rank - 1 + k) % k;
        cl_request *r[2];
        CL_TRY(cl_irecv(c, CL_AT(x, first(n, k, in)), len(n, k, left), left, 0, &r[0]));
        CL_TRY(cl_isend(c, CL_AT(x, first(n, k, rank)), len(n, k, rank), (rank + 1) % k, 0,
                        &r[1]));
        CL_TRY(cl_waitall(c, 2, r, NULL));
    }
    for (int j = 0; j < k; j++)
        CL_TRY(cl_verify(c, CL_AT(x, first(n, k, j)), len(n, k, j), (unsigned long long)j,
                         "gathered block"));
    return 0;
}
