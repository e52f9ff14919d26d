/* barrier-dissemination: the barrier commlab runs between iterations
 * (core/comm.c), written as a pattern.  In round j rank r tells rank
 * r + 2^j (mod K) everything it has heard and hears from r - 2^j: after
 * ceil(log2 K) rounds every rank has heard, through others, from every
 * rank, so none can leave before all have arrived.  Any K, powers of two
 * or not (the last round reaches around the ring).
 *
 * Its messages are the proof: each carries the set of ranks its sender has
 * heard from, one bit a rank ((K + 7) / 8 bytes, whatever --bytes says), and
 * at the end every rank's set must be full.  ceil(log2 K)(alpha + m / B)
 * for m = (K + 7) / 8. */
#include "coll.h"

int barrier_dissemination(cl_comm *c, const cl_args *a)
{
    (void)a;
    int rank = cl_rank(c), k = cl_size(c);
    size_t m = ((size_t)k + 7) / 8;
    unsigned char *heard = cl_alloc(c, m), *in = cl_alloc(c, m);
    if (heard)
        heard[rank / 8] |= (unsigned char)(1u << (rank % 8));
    for (int j = 1; j < k; j <<= 1) {
        CL_TRY(coll_sendrecv(c, heard, m, (rank + j) % k, in, m, (rank - j % k + k) % k, 0));
        for (size_t i = 0; heard && i < m; i++)
            heard[i] |= in[i];
    }
    for (int s = 0; heard && cl_checking(c) && s < k; s++)
        if (!(heard[s / 8] & (1u << (s % 8))))
            return cl_fail(c, "rank %d left the barrier without hearing from rank %d", rank, s);
    return 0;
}
