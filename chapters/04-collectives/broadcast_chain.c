/* broadcast-chain: a pipelined chain.  The n bytes are cut into m pieces
 * of --chunk bytes (default n / 8, so m = 8); rank r takes piece j from
 * r - 1 and passes it on to r + 1 while piece j + 1 is on its way in.
 * Every rank posts its receives first; it sends one piece at a time, so
 * no two of its pieces share a link.  The last rank has the last piece
 * after K - 1 + m - 1 piece times: (K - 1) alpha + (K + m - 2) n / (m B)
 * when a piece goes eagerly (its send is done once its bytes are out),
 * (K + m - 2)(alpha + n / (m B)) above the eager limit (a send is done
 * once its piece has arrived).  For large n both tend to n / B, whatever
 * K: the chain is the bandwidth-optimal broadcast.  Any K and n; a last
 * piece may be shorter. */
#include "coll.h"

#define MAX_PIECES 1024 /* request handles live on the rank's small stack */

int broadcast_chain(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c);
    size_t chunk = a->chunk ? a->chunk : (a->bytes >= 8 ? a->bytes / 8 : 1);
    size_t pieces = a->bytes ? (a->bytes + chunk - 1) / chunk : 1;
    if (pieces > MAX_PIECES) {
        cl_printf(c, "broadcast-chain: %zu pieces of %zu bytes is more than %d: raise --chunk",
                  pieces, chunk, MAX_PIECES);
        return CL_ERANGE;
    }
    unsigned char *x = cl_alloc(c, a->bytes);
    cl_request *in[MAX_PIECES], *out = NULL;
    if (rank == 0)
        cl_fill(c, x, a->bytes, coll_seed(0, 0));
    for (size_t j = 0; rank > 0 && j < pieces; j++) {
        size_t off = j * chunk, len = a->bytes - off < chunk ? a->bytes - off : chunk;
        CL_TRY(cl_irecv(c, CL_AT(x, off), a->bytes ? len : 0, rank - 1, 0, &in[j]));
    }
    for (size_t j = 0; j < pieces; j++) {
        size_t off = j * chunk, len = a->bytes - off < chunk ? a->bytes - off : chunk;
        if (rank > 0)
            CL_TRY(cl_wait(c, &in[j], NULL));
        if (rank + 1 < k) {
            CL_TRY(cl_wait(c, &out, NULL));
            CL_TRY(cl_isend(c, CL_AT(x, off), a->bytes ? len : 0, rank + 1, 0, &out));
        }
    }
    CL_TRY(cl_wait(c, &out, NULL));
    return cl_verify(c, x, a->bytes, coll_seed(0, 0), "broadcast buffer");
}
