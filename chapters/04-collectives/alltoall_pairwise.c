/* alltoall-pairwise: alltoall-linear's blocks, exchanged in K - 1 steps:
 * in step i rank r sends its block for r + i and receives from r - i
 * (mod K), so each port carries one message at a time:
 * (K - 1)(alpha + n / (K B)), shared ports or not.  It pays K - 1 alphas
 * where the linear one pays one, and never asks a port for more than it
 * has.  Any K and n. */
#include "coll.h"

int alltoall_pairwise(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c);
    size_t n = a->bytes, mine = coll_len(n, k, rank);
    unsigned char *out = cl_alloc(c, n), *in = cl_alloc(c, (size_t)k * mine);
    for (int d = 0; d < k; d++)
        cl_fill(c, CL_AT(out, coll_first(n, k, d)), coll_len(n, k, d), coll_seed(rank, d));
    for (int i = 1; i < k; i++) {
        int d = (rank + i) % k, s = (rank - i + k) % k;
        CL_TRY(coll_sendrecv(c, CL_AT(out, coll_first(n, k, d)), coll_len(n, k, d), d,
                             CL_AT(in, s * mine), mine, s, 0));
    }
    for (int s = 0; s < k; s++) {
        const void *got = s == rank ? CL_AT(out, coll_first(n, k, rank)) : CL_AT(in, s * mine);
        CL_TRY(cl_verify(c, got, mine, coll_seed(s, rank), "received block"));
    }
    return 0;
}
