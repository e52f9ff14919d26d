/* chunked: rank 0 sends one large buffer to rank 1 in pieces of --chunk
 * bytes, every piece posted at once with isend (and irecv on the other
 * side) so the pieces are in flight together: the latency of one piece
 * hides behind the bytes of the next, and the transfer costs about
 * alpha + n / B rather than (pieces) x alpha + n / B for blocking sends. */
#include "commlab.h"

/* Request handles live on the rank's small stack.  The registry's
 * max_pieces (core/pattern.c) says the same, so `run` refuses a --chunk
 * that is too small before any rank starts (a usage error, exit 2). */
#define MAX_PIECES 1024

int chunked(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c);
    if (rank > 1)
        return 0;
    size_t chunk = a->chunk ? a->chunk : (a->bytes >= 8 ? a->bytes / 8 : 1);
    size_t pieces = a->bytes ? (a->bytes + chunk - 1) / chunk : 1;
    if (pieces > MAX_PIECES)
        return cl_fail(c, "%zu pieces of %zu bytes is more than %d: raise --chunk", pieces, chunk,
                       MAX_PIECES);
    unsigned char *buf = cl_alloc(c, a->bytes);
    cl_request *req[MAX_PIECES];
    if (rank == 0)
        cl_fill(c, buf, a->bytes, 4242);
    for (size_t i = 0; i < pieces; i++) {
        size_t off = i * chunk, len = a->bytes - off < chunk ? a->bytes - off : chunk;
        if (a->bytes == 0)
            len = 0;
        if (rank == 0)
            CL_TRY(cl_isend(c, CL_AT(buf, off), len, 1, 0, &req[i]));
        else
            CL_TRY(cl_irecv(c, CL_AT(buf, off), len, 0, 0, &req[i]));
    }
    CL_TRY(cl_waitall(c, (int)pieces, req, NULL));
    return rank == 1 ? cl_verify(c, buf, a->bytes, 4242, "reassembled buffer") : 0;
}
