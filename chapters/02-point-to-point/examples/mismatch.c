/* mismatch.c - pitfall 1: the receive does not match the send.  Rank 0
 * sends with tag 1; rank 1 waits for tag 0.  The message arrives but no
 * receive takes it, and rank 1 waits for ever: commlab reports it. */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    (void)a;
    long long x = 7;
    if (cl_rank(c) == 0)
        CL_TRY(cl_send(c, &x, sizeof x, 1, 1));
    else if (cl_rank(c) == 1)
        CL_TRY(cl_recv(c, &x, sizeof x, 0, 0, NULL));
    return 0;
}
