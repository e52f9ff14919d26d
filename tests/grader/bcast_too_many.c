/* exercise: 4.2
 * expect: fail
 * why: messages
 */
/* Exercise 4.2, done wrong on purpose (the check must fail it): the right
 * data in the right tree, but every rank also acknowledges its parent with
 * an empty message: 2(K - 1) messages where K - 1 do. */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), size = cl_size(c);
    unsigned char *x = cl_alloc(c, a->bytes);
    int mask = 1;
    while (mask < size && !(rank & mask))
        mask <<= 1;
    if (rank == 0) {
        cl_fill(c, x, a->bytes, 42);
    } else {
        CL_TRY(cl_recv(c, x, a->bytes, rank - mask, 0, NULL));
        CL_TRY(cl_send(c, NULL, 0, rank - mask, 1));
    }
    for (mask >>= 1; mask > 0; mask >>= 1)
        if (rank + mask < size) {
            CL_TRY(cl_send(c, x, a->bytes, rank + mask, 0));
            CL_TRY(cl_recv(c, NULL, 0, rank + mask, 1, NULL));
        }
    return cl_verify(c, x, a->bytes, 42, "broadcast buffer");
}
