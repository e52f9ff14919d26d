/* scatter-binomial: gather-binomial backwards.  Rank r receives the
 * blocks of its whole subtree from r minus its lowest set bit, keeps its
 * own and sends each child r + 2^j (largest first, one after the other)
 * the blocks of that child's subtree.  For K a power of two,
 * log2(K) alpha + (K - 1) n / (K B) along every path.  Any K (a subtree
 * past K - 1 is cut short) and n. */
#include "coll.h"

int scatter_binomial(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c);
    size_t n = a->bytes;
    unsigned char *x = cl_alloc(c, n);
    int mask = 1;
    while (mask < k && !(rank & mask))
        mask <<= 1;
    if (rank == 0) {
        for (int d = 0; d < k; d++)
            cl_fill(c, CL_AT(x, coll_first(n, k, d)), coll_len(n, k, d), coll_seed(0, d));
    } else {
        int blocks = mask < k - rank ? mask : k - rank;
        CL_TRY(cl_recv(c, CL_AT(x, coll_first(n, k, rank)), coll_span(n, k, rank, blocks),
                       rank - mask, 0, NULL));
    }
    for (mask >>= 1; mask > 0; mask >>= 1) {
        int child = rank + mask;
        if (child < k) {
            int blocks = mask < k - child ? mask : k - child;
            CL_TRY(cl_send(c, CL_AT(x, coll_first(n, k, child)), coll_span(n, k, child, blocks),
                           child, 0));
        }
    }
    return cl_verify(c, CL_AT(x, coll_first(n, k, rank)), coll_len(n, k, rank),
                     coll_seed(0, rank), "scattered block");
}
