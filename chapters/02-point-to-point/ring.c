/* ring: every rank sends to (rank + 1) mod size and receives from its left
 * neighbour at the same time, with isend/irecv, then checks what arrived.
 * All K messages move at once: the modeled time is alpha + n / B. */
#include "commlab.h"

int ring(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), size = cl_size(c);
    int right = (rank + 1) % size, left = (rank - 1 + size) % size;
    unsigned char *out = cl_alloc(c, a->bytes), *in = cl_alloc(c, a->bytes);
    cl_fill(c, out, a->bytes, (unsigned long long)rank);
    cl_request *r[2];
    CL_TRY(cl_irecv(c, in, a->bytes, left, 0, &r[0]));
    CL_TRY(cl_isend(c, out, a->bytes, right, 0, &r[1]));
    CL_TRY(cl_waitall(c, 2, r, NULL));
    return cl_verify(c, in, a->bytes, (unsigned long long)left, "buffer from the left");
}
