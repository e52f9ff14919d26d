/* exercise: 4.2
 * expect: fail
 * why: the task's schedule
 * kind: special-casing what is checked - the binomial tree at the K the
 * steps announce (5, 7 and 8), rank 0 sending to everyone elsewhere. */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), size = cl_size(c);
    unsigned char *x = cl_alloc(c, a->bytes);
    if (size != 5 && size != 7 && size != 8) {
        if (rank == 0) {
            cl_fill(c, x, a->bytes, 42);
            for (int r = 1; r < size; r++)
                CL_TRY(cl_send(c, x, a->bytes, r, 0));
        } else {
            CL_TRY(cl_recv(c, x, a->bytes, 0, 0, NULL));
        }
        return cl_verify(c, x, a->bytes, 42, "broadcast buffer");
    }
    int mask = 1;
    while (mask < size && !(rank & mask))
        mask <<= 1;
    if (rank == 0)
        cl_fill(c, x, a->bytes, 42);
    else
        CL_TRY(cl_recv(c, x, a->bytes, rank - mask, 0, NULL));
    for (mask >>= 1; mask > 0; mask >>= 1)
        if (rank + mask < size)
            CL_TRY(cl_send(c, x, a->bytes, rank + mask, 0));
    return cl_verify(c, x, a->bytes, 42, "broadcast buffer");
}
