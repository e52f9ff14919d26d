/* exercise: 4.10
 * expect: fail
 * why: does not end with a buffer of
 * shm: yes
 */
/* Exercise 4.10, done wrong on purpose: rank r - i's block lands in slot
 * r + i, and the check reads it from there, so the run passes its own
 * check; but what each rank ends with is not in the places the task
 * names. */
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
    for (int i = 1; i < k; i++) {
        int to = (rank + i) % k, from = (rank - i + k) % k;
        cl_request *r[2];
        CL_TRY(cl_irecv(c, CL_AT(in, (size_t)to * mine), mine, from, 0, &r[0]));
        CL_TRY(cl_isend(c, CL_AT(out, first(n, k, to)), len(n, k, to), to, 0, &r[1]));
        CL_TRY(cl_waitall(c, 2, r, NULL));
    }
    for (int s = 0; s < k; s++) {
        const void *got = s == rank ? CL_AT(out, first(n, k, rank))
                                    : CL_AT(in, (size_t)((2 * rank - s + k) % k) * mine);
        CL_TRY(cl_verify(c, got, mine, 1000ULL * (unsigned)s + (unsigned)rank, "received block"));
    }
    return 0;
}
