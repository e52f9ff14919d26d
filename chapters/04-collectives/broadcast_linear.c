/* broadcast-linear: rank 0 posts a send of its n bytes to every other rank
 * at once.  K - 1 messages of n bytes, all in flight together: alone on
 * their links they take alpha + n / B, but they all leave through rank 0's
 * one port, so where that port is shared (a --tier run, max-min) they take
 * alpha + (K - 1) n / B.  Any K and n. */
#include "coll.h"

int broadcast_linear(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c);
    unsigned char *x = cl_alloc(c, a->bytes);
    if (rank != 0) {
        CL_TRY(cl_recv(c, x, a->bytes, 0, 0, NULL));
        return cl_verify(c, x, a->bytes, coll_seed(0, 0), "broadcast buffer");
    }
    cl_request **r;
    CL_TRY(coll_requests(c, (size_t)k - 1, &r));
    cl_fill(c, x, a->bytes, coll_seed(0, 0));
    for (int d = 1; d < k; d++)
        CL_TRY(cl_isend(c, x, a->bytes, d, 0, &r[d - 1]));
    return cl_waitall(c, k - 1, r, NULL);
}
