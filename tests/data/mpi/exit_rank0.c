/* Rank 0, the one that reports for the world, ends the process with
 * exit(3) instead of returning. */
#include <stdlib.h>

int pattern(cl_comm *c, const cl_args *a)
{
    (void)a;
    if (cl_rank(c) == 0)
        exit(3);
    return cl_barrier(c);
}
