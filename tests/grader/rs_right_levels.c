/* exercise: 4.9
 * expect: pass
 * shm: yes
 */
/* Exercise 4.9, right in another style: the blocks still reduced are a
 * range [lo, hi) that halves each level, the partner is found from the
 * level's distance, requests are waited on one by one, and the check
 * compares against a sum over the ranks computed as a loop. */
#include "commlab.h"

static size_t at(size_t n, int k, int j)
{
    return (size_t)j * n / (size_t)k;
}

int pattern(cl_comm *c, const cl_args *a)
{
    int me = cl_rank(c), k = cl_size(c);
    if (k & (k - 1))
        return cl_fail(c, "K must be a power of two");
    size_t n = a->bytes / 8;
    double *x = cl_alloc(c, n * 8), *got = cl_alloc(c, n * 8);
    for (size_t i = 0; x && i < n; i++)
        x[i] = (me + 1.0) * (double)(i % 7 + 1);
    int lo = 0, hi = k;
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2, dist = mid - lo, peer = me ^ dist;
        bool upper = me >= mid;
        int klo = upper ? mid : lo, khi = upper ? hi : mid;
        int glo = upper ? lo : mid, ghi = upper ? mid : hi;
        cl_request *rr, *sr;
        CL_TRY(cl_irecv(c, got, (at(n, k, khi) - at(n, k, klo)) * 8, peer, 0, &rr));
        CL_TRY(cl_isend(c, CL_AT(x, at(n, k, glo) * 8), (at(n, k, ghi) - at(n, k, glo)) * 8, peer,
                        0, &sr));
        CL_TRY(cl_wait(c, &sr, NULL));
        CL_TRY(cl_wait(c, &rr, NULL));
        CL_TRY(cl_reduce_local(c, CL_AT(x, at(n, k, klo) * 8), got, at(n, k, khi) - at(n, k, klo),
                               CL_F64, CL_OP_SUM));
        lo = klo;
        hi = khi;
    }
    for (size_t i = at(n, k, me); x && cl_checking(c) && i < at(n, k, me + 1); i++) {
        double want = 0;
        for (int r = 0; r < k; r++)
            want += (r + 1.0) * (double)(i % 7 + 1);
        if (x[i] != want)
            return cl_fail(c, "element %zu: %g, want %g", i, x[i], want);
    }
    return 0;
}
