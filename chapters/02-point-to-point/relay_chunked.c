/* relay-chunked: the relay of relay.c cut into pieces.  Rank 0's n bytes
 * (cl_fill seed 0) travel K hops to rank K, in --pieces C pieces of n / C
 * bytes (default 8; a piece may be a byte longer than another).  Every
 * rank but 0 posts all its receives first; then, piece after piece, it
 * waits for piece j and sends it on with a blocking cl_send, while piece
 * j + 1 is already on its way in.  So the hops work at once, like the
 * stages of a pipeline: piece j crosses hop h in step h + j, and the last
 * piece reaches rank K after K - 1 + C steps.  Above the eager limit a
 * step is one piece's message, so the relay costs
 *     (K - 1 + C)(alpha + n / (C B)),
 * against K (alpha + n / B) unchunked.  Minimised over C (the derivative
 * of (K - 1) n / (C B) + C alpha is zero there):
 *     C* = sqrt((K - 1) n / (alpha B)),
 * the best whole C being a neighbour of it.  On one hop (K = 1) it is
 * C (alpha + n / (C B)) = C alpha + n / B: chunking only adds latency. */
#include "commlab.h"

#define MAX_PIECES 1024 /* request handles live on the rank's small stack */

int relay_chunked(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), last = cl_size(c) - 1, pieces = a->pieces ? a->pieces : 8;
    if (pieces > MAX_PIECES) {
        cl_printf(c, "relay-chunked: %d pieces is more than %d: lower --pieces", pieces,
                  MAX_PIECES);
        return CL_ERANGE;
    }
    unsigned char *x = cl_alloc(c, a->bytes);
    cl_request *in[MAX_PIECES];
    if (rank == 0)
        cl_fill(c, x, a->bytes, 0);
    for (int j = 0; rank > 0 && j < pieces; j++) {
        size_t off = a->bytes * (size_t)j / (size_t)pieces;
        size_t len = a->bytes * (size_t)(j + 1) / (size_t)pieces - off;
        CL_TRY(cl_irecv(c, CL_AT(x, off), len, rank - 1, 0, &in[j]));
    }
    for (int j = 0; j < pieces; j++) {
        size_t off = a->bytes * (size_t)j / (size_t)pieces;
        size_t len = a->bytes * (size_t)(j + 1) / (size_t)pieces - off;
        if (rank > 0)
            CL_TRY(cl_wait(c, &in[j], NULL));
        if (rank < last)
            CL_TRY(cl_send(c, CL_AT(x, off), len, rank + 1, 0));
    }
    return cl_verify(c, x, a->bytes, 0, "relayed buffer");
}
