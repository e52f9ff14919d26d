/* gather-binomial: reduce-binomial's tree, but the messages grow instead
 * of being added: rank r collects the blocks of its subtree (ranks r ..
 * r + 2^j - 1 after its j-th receive, contiguous in the buffer) and sends
 * them all to r minus its lowest set bit.  Rank 0 receives 1, 2, 4, ...
 * blocks one after another: for K a power of two,
 * log2(K) alpha + (K - 1) n / (K B): the latency of a tree and the bytes
 * of the linear gather.  Any K (a subtree past K - 1 is cut short) and n. */
#include "coll.h"

int gather_binomial(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c);
    size_t n = a->bytes;
    unsigned char *x = cl_alloc(c, n);
    cl_fill(c, CL_AT(x, coll_first(n, k, rank)), coll_len(n, k, rank), coll_seed(rank, rank));
    for (int mask = 1; mask < k; mask <<= 1) {
        if (rank & mask) {
            int have = mask < k - rank ? mask : k - rank;
            return cl_send(c, CL_AT(x, coll_first(n, k, rank)), coll_span(n, k, rank, have),
                           rank - mask, 0);
        }
        int child = rank + mask;
        if (child < k) {
            int blocks = mask < k - child ? mask : k - child;
            CL_TRY(cl_recv(c, CL_AT(x, coll_first(n, k, child)),
                           coll_span(n, k, child, blocks), child, 0, NULL));
        }
    }
    return coll_gathered_verify(c, x, n);
}
