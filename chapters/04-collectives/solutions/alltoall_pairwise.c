/* Exercise 4.10: a pairwise all-to-all.  Block d of rank r's n-byte
 * buffer is bytes [d n / K, (d + 1) n / K), filled with
 * cl_fill(seed 1000 r + d), and goes to rank d; rank r receives each
 * rank s's block r into slot s of a buffer of K slots of that block's
 * length.  In step i = 1 .. K - 1 rank r sends to r + i and receives from
 * r - i (mod K), both at once: one message in and one out per port at a
 * time, K - 1 steps, K (K - 1) messages. */
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
        CL_TRY(cl_irecv(c, CL_AT(in, (size_t)from * mine), mine, from, 0, &r[0]));
        CL_TRY(cl_isend(c, CL_AT(out, first(n, k, to)), len(n, k, to), to, 0, &r[1]));
        CL_TRY(cl_waitall(c, 2, r, NULL));
    }
    for (int s = 0; s < k; s++) {
        const void *got = s == rank ? CL_AT(out, first(n, k, rank)) : CL_AT(in, (size_t)s * mine);
        CL_TRY(cl_verify(c, got, mine, 1000ULL * (unsigned)s + (unsigned)rank, "received block"));
    }
    return 0;
}
