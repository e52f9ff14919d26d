/* scatter-linear: rank 0 holds an n-byte buffer and rank r ends with its
 * block r (n cut into K, coll.h).  Rank 0 posts every block at once: alone
 * they take alpha + n / (K B), through its one port
 * alpha + (K - 1) n / (K B).  Any K and n. */
#include "coll.h"

int scatter_linear(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c);
    size_t n = a->bytes;
    unsigned char *x = cl_alloc(c, rank == 0 ? n : coll_len(n, k, rank));
    if (rank != 0) {
        CL_TRY(cl_recv(c, x, coll_len(n, k, rank), 0, 0, NULL));
        return cl_verify(c, x, coll_len(n, k, rank), coll_seed(0, rank), "scattered block");
    }
    cl_request **r;
    CL_TRY(coll_requests(c, (size_t)k - 1, &r));
    for (int d = 0; d < k; d++)
        cl_fill(c, CL_AT(x, coll_first(n, k, d)), coll_len(n, k, d), coll_seed(0, d));
    for (int d = 1; d < k; d++)
        CL_TRY(cl_isend(c, CL_AT(x, coll_first(n, k, d)), coll_len(n, k, d), d, 0, &r[d - 1]));
    CL_TRY(cl_waitall(c, k - 1, r, NULL));
    return cl_verify(c, x, coll_len(n, k, 0), coll_seed(0, 0), "scattered block");
}
