/* Wrong work for exercise 5.1 (issue 19): rank 0 sends twice and never
 * receives; rank 1 receives twice.  Two blocking messages that never
 * deadlock - but nothing goes from rank 1 to rank 0. */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c);
    if (rank > 1)
        return 0;
    unsigned char *out = cl_alloc(c, a->bytes), *in = cl_alloc(c, a->bytes);
    cl_fill(c, out, a->bytes, (unsigned long long)rank);
    for (int i = 0; i < 2; i++) {
        if (rank == 0)
            CL_TRY(cl_send(c, out, a->bytes, 1, 0));
        else
            CL_TRY(cl_recv(c, in, a->bytes, 0, 0, NULL));
    }
    return 0;
}
