/* exercise: 4.2
 * expect: fail
 * why: a data check failed
 */
/* Exercise 4.2, done wrong on purpose (the check must fail it): the tree
 * is right, but a rank forwards its buffer before its own receive has
 * filled it, so its children get whatever the buffer held. */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), size = cl_size(c);
    unsigned char *x = cl_alloc(c, a->bytes);
    int mask = 1;
    while (mask < size && !(rank & mask))
        mask <<= 1;
    int parent = rank - mask;
    if (rank == 0)
        cl_fill(c, x, a->bytes, 42);
    unsigned char *early = cl_alloc(c, a->bytes);
    for (int m = mask >> 1; m > 0; m >>= 1)
        if (rank + m < size)
            CL_TRY(cl_send(c, rank == 0 ? x : early, a->bytes, rank + m, 0));
    if (rank != 0)
        CL_TRY(cl_recv(c, x, a->bytes, parent, 0, NULL));
    return cl_verify(c, x, a->bytes, 42, "broadcast buffer");
}
