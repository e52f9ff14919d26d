/* exercise: 2.5
 * expect: fail
 * why: in the task's schedule
 * kind: special-casing what is checked - pieces at the two announced
 * sizes, one whole message (in eight posts of which seven are empty)
 * elsewhere. */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c);
    if (rank > 1)
        return 0;
    unsigned char *buf = cl_alloc(c, a->bytes);
    bool announced = a->bytes == (8u << 20) || a->bytes == (64u << 20);
    size_t piece = announced ? a->bytes / 8 : a->bytes;
    cl_request *r[8];
    if (rank == 0)
        cl_fill(c, buf, a->bytes, 0);
    for (int i = 0; i < 8; i++) {
        size_t off = announced ? (size_t)i * piece : 0, len = announced || i == 0 ? piece : 0;
        if (rank == 0)
            CL_TRY(cl_isend(c, CL_AT(buf, off), len, 1, 0, &r[i]));
        else
            CL_TRY(cl_irecv(c, CL_AT(buf, off), len, 0, 0, &r[i]));
    }
    return cl_waitall(c, 8, r, NULL);
}
