/* chunks.c - exercise 2.5: rank 0 sends its buffer to rank 1 in 8 pieces,
 * every piece posted before the first wait.  The pieces queue on the one
 * link: alpha + n / B in all, what the unsplit message costs (8 blocking
 * sends cost 8 alpha + n / B). */
#include "commlab.h"

#define PIECES 8

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c);
    if (rank > 1)
        return 0;
    unsigned char *buf = cl_alloc(c, a->bytes);
    size_t piece = (a->bytes + PIECES - 1) / PIECES;
    cl_request *r[PIECES];
    if (rank == 0)
        cl_fill(c, buf, a->bytes, 0);
    for (int i = 0; i < PIECES; i++) {
        size_t off = (size_t)i * piece < a->bytes ? (size_t)i * piece : a->bytes;
        size_t len = a->bytes - off < piece ? a->bytes - off : piece;
        if (rank == 0)
            CL_TRY(cl_isend(c, CL_AT(buf, off), len, 1, 0, &r[i]));
        else
            CL_TRY(cl_irecv(c, CL_AT(buf, off), len, 0, 0, &r[i]));
    }
    CL_TRY(cl_waitall(c, PIECES, r, NULL));
    return rank == 1 ? cl_verify(c, buf, a->bytes, 0, "reassembled buffer") : 0;
}
