/* alltoall-linear: every rank holds n bytes cut into K blocks (coll.h),
 * block d for rank d, and ends with block r of every rank's buffer.
 * Everyone posts everything at once: K - 1 receives and K - 1 sends.
 * Alone on their links the messages take alpha + n / (K B); but every
 * rank's one port out carries K - 1 of them and every port in as many, so
 * where ports are shared it takes alpha + (K - 1) n / (K B), every port
 * full for the whole time: no all-to-all can do better on bytes, and the
 * most-loaded link of a real network decides.  Any K and n. */
#include "coll.h"

int alltoall_linear(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c);
    size_t n = a->bytes;
    size_t mine = coll_len(n, k, rank); /* every block this rank receives */
    unsigned char *out = cl_alloc(c, n), *in = cl_alloc(c, (size_t)k * mine);
    cl_request **r;
    CL_TRY(coll_requests(c, 2 * ((size_t)k - 1), &r));
    int m = 0;
    for (int d = 0; d < k; d++)
        cl_fill(c, CL_AT(out, coll_first(n, k, d)), coll_len(n, k, d), coll_seed(rank, d));
    for (int i = 1; i < k; i++) {
        int s = (rank - i + k) % k;
        CL_TRY(cl_irecv(c, CL_AT(in, (size_t)s * mine), mine, s, 0, &r[m++]));
    }
    for (int i = 1; i < k; i++) {
        int d = (rank + i) % k;
        CL_TRY(cl_isend(c, CL_AT(out, coll_first(n, k, d)), coll_len(n, k, d), d, 0, &r[m++]));
    }
    CL_TRY(cl_waitall(c, m, r, NULL));
    for (int s = 0; s < k; s++) {
        const void *got = s == rank ? CL_AT(out, coll_first(n, k, rank)) : CL_AT(in, s * mine);
        CL_TRY(cl_verify(c, got, mine, coll_seed(s, rank), "received block"));
    }
    return 0;
}
