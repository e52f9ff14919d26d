/* Rank 1 aborts (a failed assert does the same). */
#include <stdlib.h>

int pattern(cl_comm *c, const cl_args *a)
{
    (void)a;
    if (cl_rank(c) == 1)
        abort();
    return cl_barrier(c);
}
