/* broadcast-binomial: a binomial tree rooted at rank 0.  Rank r receives
 * from r minus its lowest set bit, then sends to r + 2^j for each
 * 2^j below that bit, the largest subtree first, one send after the
 * other; in round j every rank that has the data sends it on, so the
 * number of ranks holding it doubles: ceil(log2 K) rounds of alpha + n / B.
 * Each rank sends and receives one message at a time, so no port is ever
 * shared.  Any K: a child r + 2^j >= K is skipped. */
#include "coll.h"

int broadcast_binomial(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c);
    unsigned char *x = cl_alloc(c, a->bytes);
    int mask = 1;
    while (mask < k && !(rank & mask))
        mask <<= 1;
    if (rank == 0)
        cl_fill(c, x, a->bytes, coll_seed(0, 0));
    else
        CL_TRY(cl_recv(c, x, a->bytes, rank - mask, 0, NULL));
    for (mask >>= 1; mask > 0; mask >>= 1)
        if (rank + mask < k)
            CL_TRY(cl_send(c, x, a->bytes, rank + mask, 0));
    return cl_verify(c, x, a->bytes, coll_seed(0, 0), "broadcast buffer");
}
