/* Wrong work for exercise 1.1 (issue 19): only the even ranks say hello. */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    (void)a;
    if (cl_rank(c) % 2 == 0)
        cl_printf(c, "hello from rank %d of %d", cl_rank(c), cl_size(c));
    return 0;
}
