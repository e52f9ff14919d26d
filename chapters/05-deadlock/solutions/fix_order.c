/* fix_order.c - exercise 5.1: the head-to-head exchange made safe by order.
 * Rank 0 sends then receives; rank 1 receives then sends, so every send
 * finds its receive posted, at any size.  The two messages go one after
 * the other: 2 (alpha + n / B). */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c);
    if (rank > 1)
        return 0;
    int peer = 1 - rank;
    unsigned char *out = cl_alloc(c, a->bytes), *in = cl_alloc(c, a->bytes);
    cl_fill(c, out, a->bytes, (unsigned long long)rank);
    if (rank == 0) {
        CL_TRY(cl_send(c, out, a->bytes, peer, 0));
        CL_TRY(cl_recv(c, in, a->bytes, peer, 0, NULL));
    } else {
        CL_TRY(cl_recv(c, in, a->bytes, peer, 0, NULL));
        CL_TRY(cl_send(c, out, a->bytes, peer, 0));
    }
    return cl_verify(c, in, a->bytes, (unsigned long long)peer, "peer's buffer");
}
