/* Rank 1 ends the process with exit(0) instead of returning. */
#include <stdlib.h>

int pattern(cl_comm *c, const cl_args *a)
{
    (void)a;
    if (cl_rank(c) == 1)
        exit(0);
    return cl_barrier(c);
}
