/* Wrong work for exercise 2.5: eight pieces posted together, but rank 1
 * receives every piece at the start of its buffer; no cl_verify. */
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
            CL_TRY(cl_isend(c, CL_AT(buf, off), len, 1, i, &r[i]));
        else
            CL_TRY(cl_irecv(c, buf, len, 0, i, &r[i]));
    }
    return cl_waitall(c, PIECES, r, NULL);
}
