/* exercise: 4.3
 * expect: fail
 * why: messages
 */
/* Exercise 4.3, done wrong on purpose (the check must fail it): the right
 * blocks end everywhere, but every rank sends its block straight to every
 * other rank as well as around the ring: 2 K (K - 1) messages. */
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
        int out = (rank - s + k) % k, in = (rank - s - 1 + k) % k;
        cl_request *r[2];
        CL_TRY(cl_irecv(c, CL_AT(x, first(n, k, in)), len(n, k, in), (rank - 1 + k) % k, 0,
                        &r[0]));
        CL_TRY(cl_isend(c, CL_AT(x, first(n, k, out)), len(n, k, out), (rank + 1) % k, 0,
                        &r[1]));
        CL_TRY(cl_waitall(c, 2, r, NULL));
    }
    for (int i = 1; i < k; i++) {
        int to = (rank + i) % k, from = (rank - i + k) % k;
        cl_request *r[2];
        CL_TRY(cl_irecv(c, CL_AT(x, first(n, k, from)), len(n, k, from), from, 1, &r[0]));
        CL_TRY(cl_isend(c, CL_AT(x, first(n, k, rank)), len(n, k, rank), to, 1, &r[1]));
        CL_TRY(cl_waitall(c, 2, r, NULL));
    }
    for (int j = 0; j < k; j++)
        CL_TRY(cl_verify(c, CL_AT(x, first(n, k, j)), len(n, k, j), (unsigned long long)j,
                         "gathered block"));
    return 0;
}
