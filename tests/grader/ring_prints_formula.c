/* exercise: 2.1
 * expect: fail
 * why: does not carry the data
 * shm: yes
 * kind: printing instead of communicating - the messages go round, but
 * carry nothing; rank 0 prints 10 (K - 1) from the world size. */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), size = cl_size(c);
    unsigned char *x = cl_alloc(c, a->bytes);
    if (rank > 0)
        CL_TRY(cl_recv(c, x, a->bytes, rank - 1, 0, NULL));
    CL_TRY(cl_send(c, x, a->bytes, (rank + 1) % size, 0));
    if (rank == 0) {
        CL_TRY(cl_recv(c, x, a->bytes, size - 1, 0, NULL));
        cl_printf(c, "after the full circle: %d", 10 * (size - 1));
    }
    return 0;
}
