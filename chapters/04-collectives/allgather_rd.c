/* allgather-rd: recursive doubling.  In step j rank r swaps everything it
 * holds with rank r XOR 2^j, so what each rank holds doubles: for K a
 * power of two, log2(K) steps of 1, 2, 4, ... blocks:
 * log2(K) alpha + (K - 1) n / (K B), the ring's bytes in fewer messages.
 * Other K: the fold of coll.h; each odd rank of the first 2(K - p) first
 * hands its block to the even rank below, which takes part for both, and
 * gets the whole buffer back at the end (two more steps).  Any n. */
#include "coll.h"

int allgather_rd(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c);
    size_t n = a->bytes;
    unsigned char *x = cl_alloc(c, n);
    cl_fill(c, CL_AT(x, coll_first(n, k, rank)), coll_len(n, k, rank), coll_seed(rank, rank));
    coll_fold f;
    coll_fold_init(&f, rank, k);
    if (f.v < 0) {
        CL_TRY(cl_send(c, CL_AT(x, coll_first(n, k, rank)), coll_len(n, k, rank), f.buddy, 0));
        CL_TRY(cl_recv(c, x, n, f.buddy, 2, NULL));
    } else {
        if (f.buddy >= 0)
            CL_TRY(cl_recv(c, CL_AT(x, coll_first(n, k, f.buddy)), coll_len(n, k, f.buddy),
                           f.buddy, 0, NULL));
        CL_TRY(coll_doubling(c, &f, x, n, 1, 1));
        if (f.buddy >= 0)
            CL_TRY(cl_send(c, x, n, f.buddy, 2));
    }
    return coll_gathered_verify(c, x, n);
}
