/* exercise: 4.2
 * expect: fail
 * why: does not carry the data
 * shm: yes
 * kind: wrong data verified against its own mistake - the root
 * broadcasts seed 43 and every rank verifies 43. */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), size = cl_size(c);
    unsigned char *x = cl_alloc(c, a->bytes);
    int mask = 1;
    while (mask < size && !(rank & mask))
        mask <<= 1;
    if (rank == 0)
        cl_fill(c, x, a->bytes, 43);
    else
        CL_TRY(cl_recv(c, x, a->bytes, rank - mask, 0, NULL));
    for (mask >>= 1; mask > 0; mask >>= 1)
        if (rank + mask < size)
            CL_TRY(cl_send(c, x, a->bytes, rank + mask, 0));
    return cl_verify(c, x, a->bytes, 43, "broadcast buffer");
}
