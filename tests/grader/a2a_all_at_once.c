/* exercise: 4.10
 * expect: fail
 * why: modeled, expected
 */
/* Exercise 4.10, done wrong on purpose: the same messages in the same
 * order, but all posted at once and waited for together (the linear
 * all-to-all): every port carries K - 1 blocks at the same time, so only
 * the modeled time tells it from the pairwise schedule. */
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
    size_t n = a->bytes, mine = len(n, k, rank);
    unsigned char *out = cl_alloc(c, n), *in = cl_alloc(c, (size_t)k * mine);
    for (int d = 0; d < k; d++)
        cl_fill(c, CL_AT(out, first(n, k, d)), len(n, k, d), 1000ULL * (unsigned)rank + (unsigned)d);
    cl_request *r[2 * 64] = {NULL};
    if (k > 64)
        return cl_fail(c, "at most 64 ranks");
    for (int i = 1; i < k; i++) {
        int to = (rank + i) % k, from = (rank - i + k) % k;
        CL_TRY(cl_irecv(c, CL_AT(in, (size_t)from * mine), mine, from, 0, &r[2 * i]));
        CL_TRY(cl_isend(c, CL_AT(out, first(n, k, to)), len(n, k, to), to, 0, &r[2 * i + 1]));
    }
    CL_TRY(cl_waitall(c, 2 * k, r, NULL));
    for (int s = 0; s < k; s++) {
        const void *got = s == rank ? CL_AT(out, first(n, k, rank)) : CL_AT(in, (size_t)s * mine);
        CL_TRY(cl_verify(c, got, mine, 1000ULL * (unsigned)s + (unsigned)rank, "received block"));
    }
    return 0;
}
