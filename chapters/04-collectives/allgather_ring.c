/* allgather-ring: every rank starts with its block of an n-byte buffer
 * (n cut into K, coll.h) and ends with all of them.  In step s every rank
 * sends the block it got last (its own at first) to its right neighbour
 * and receives a new one from its left: K - 1 steps of
 * alpha + n / (K B), every link busy, each port carrying one message:
 * (K - 1) alpha + (K - 1) n / (K B).  Any K and n. */
#include "coll.h"

int allgather_ring(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c);
    size_t n = a->bytes;
    unsigned char *x = cl_alloc(c, n);
    cl_fill(c, CL_AT(x, coll_first(n, k, rank)), coll_len(n, k, rank), coll_seed(rank, rank));
    int right = (rank + 1) % k, left = (rank - 1 + k) % k;
    for (int s = 0; s < k - 1; s++) {
        int out = (rank - s + k) % k, in = (rank - s - 1 + k) % k;
        CL_TRY(coll_sendrecv(c, CL_AT(x, coll_first(n, k, out)), coll_len(n, k, out), right,
                             CL_AT(x, coll_first(n, k, in)), coll_len(n, k, in), left, 0));
    }
    return coll_gathered_verify(c, x, n);
}
