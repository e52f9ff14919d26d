/* deadlock: ranks 0 and 1 both send before they receive.  Up to the eager
 * limit a send completes once its bytes are injected, so this works; above
 * it a send waits for the matching receive, which neither side has posted:
 * a deadlock.  Two fixes complete at any size:
 *   --fix order        rank 1 receives first, then sends
 *   --fix nonblocking  both post irecv and isend, then wait for both */
#include <string.h>

#include "commlab.h"

int deadlock(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c);
    if (rank > 1)
        return 0;
    int peer = 1 - rank;
    unsigned char *out = cl_alloc(c, a->bytes), *in = cl_alloc(c, a->bytes);
    cl_fill(c, out, a->bytes, 500 + (unsigned long long)rank);
    const char *fix = a->fix ? a->fix : "";
    if (strcmp(fix, "nonblocking") == 0) {
        cl_request *r[2];
        CL_TRY(cl_irecv(c, in, a->bytes, peer, 0, &r[0]));
        CL_TRY(cl_isend(c, out, a->bytes, peer, 0, &r[1]));
        CL_TRY(cl_waitall(c, 2, r, NULL));
    } else if (strcmp(fix, "order") == 0 && rank == 1) {
        CL_TRY(cl_recv(c, in, a->bytes, peer, 0, NULL));
        CL_TRY(cl_send(c, out, a->bytes, peer, 0));
    } else {
        CL_TRY(cl_send(c, out, a->bytes, peer, 0));
        CL_TRY(cl_recv(c, in, a->bytes, peer, 0, NULL));
    }
    return cl_verify(c, in, a->bytes, 500 + (unsigned long long)peer, "peer's buffer");
}
