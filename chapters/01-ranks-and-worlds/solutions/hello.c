/* hello.c - exercise 1.1: every rank says who it is. */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    (void)a;
    cl_printf(c, "hello from rank %d of %d", cl_rank(c), cl_size(c));
    return 0;
}
