/* exercise: 2.1
 * expect: fail
 * why: not the value the exercise asks for
 * kind: special-casing what is checked - the answers for K = 3 and 5
 * written in, the value never carried. */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), size = cl_size(c);
    unsigned char *x = cl_alloc(c, a->bytes);
    if (rank > 0)
        CL_TRY(cl_recv(c, x, a->bytes, rank - 1, 0, NULL));
    cl_fill(c, x, a->bytes, rank == 0 ? 0 : 10ULL * (unsigned long long)rank);
    CL_TRY(cl_send(c, x, a->bytes, (rank + 1) % size, 0));
    if (rank == 0) {
        CL_TRY(cl_recv(c, x, a->bytes, size - 1, 0, NULL));
        cl_printf(c, "after the full circle: %d", size == 3 ? 20 : size == 5 ? 40 : 0);
    }
    return 0;
}
