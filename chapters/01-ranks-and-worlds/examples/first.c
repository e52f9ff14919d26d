/* first.c - a first program: rank 0 sends a number to rank 1, which
 * prints it; every rank says who it is. */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    (void)a;
    int rank = cl_rank(c);
    long long x = 0;
    if (rank == 0) {
        x = 42;
        CL_TRY(cl_send(c, &x, sizeof x, 1, 0));
    } else if (rank == 1) {
        CL_TRY(cl_recv(c, &x, sizeof x, 0, 0, NULL));
        cl_printf(c, "received %lld from rank 0", x);
    }
    cl_printf(c, "I am rank %d of %d", rank, cl_size(c));
    return 0;
}
