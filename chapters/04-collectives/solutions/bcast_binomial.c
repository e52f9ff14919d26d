/* Exercise 4.2: a binomial-tree broadcast from rank 0.  Rank r receives
 * from r minus its lowest set bit, then sends to r + 2^j for each 2^j
 * below that bit, the largest subtree first.  K - 1 messages in
 * ceil(log2 K) rounds. */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), size = cl_size(c);
    unsigned char *x = cl_alloc(c, a->bytes);
    int mask = 1;
    while (mask < size && !(rank & mask))
        mask <<= 1;
    if (rank == 0)
        cl_fill(c, x, a->bytes, 42);
    else
        CL_TRY(cl_recv(c, x, a->bytes, rank - mask, 0, NULL));
    for (mask >>= 1; mask > 0; mask >>= 1)
        if (rank + mask < size)
            CL_TRY(cl_send(c, x, a->bytes, rank + mask, 0));
    return cl_verify(c, x, a->bytes, 42, "broadcast buffer");
}
