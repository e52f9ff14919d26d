/* gather-linear: rank 0 ends with every rank's block of an n-byte buffer
 * (block r of n cut into K, coll.h).  Every rank posts its block to rank
 * 0 at once; alone they take alpha + n / (K B), through rank 0's one port
 * alpha + (K - 1) n / (K B).  Any K and n. */
#include "coll.h"

int gather_linear(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c);
    size_t n = a->bytes;
    unsigned char *x = cl_alloc(c, n);
    unsigned char *mine = CL_AT(x, coll_first(n, k, rank));
    cl_fill(c, mine, coll_len(n, k, rank), coll_seed(rank, rank));
    if (rank != 0)
        return cl_send(c, mine, coll_len(n, k, rank), 0, 0);
    cl_request **r;
    CL_TRY(coll_requests(c, (size_t)k - 1, &r));
    for (int s = 1; s < k; s++)
        CL_TRY(cl_irecv(c, CL_AT(x, coll_first(n, k, s)), coll_len(n, k, s), s, 0, &r[s - 1]));
    CL_TRY(cl_waitall(c, k - 1, r, NULL));
    return coll_gathered_verify(c, x, n);
}
