/* fix_nonblocking.c - exercise 5.2: the head-to-head exchange made safe by
 * posting both operations first.  Each rank posts its receive and its send,
 * then waits for both: no call blocks before the other side's receive is
 * posted, at any size, and the two messages move at once: alpha + n / B. */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c);
    if (rank > 1)
        return 0;
    int peer = 1 - rank;
    unsigned char *out = cl_alloc(c, a->bytes), *in = cl_alloc(c, a->bytes);
    cl_fill(c, out, a->bytes, (unsigned long long)rank);
    cl_request *r[2];
    CL_TRY(cl_irecv(c, in, a->bytes, peer, 0, &r[0]));
    CL_TRY(cl_isend(c, out, a->bytes, peer, 0, &r[1]));
    CL_TRY(cl_waitall(c, 2, r, NULL));
    return cl_verify(c, in, a->bytes, (unsigned long long)peer, "peer's buffer");
}
