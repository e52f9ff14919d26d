/* send_pending_recv.c - rank 1 posts an irecv into its buffer and sends
 * that same buffer back before the receive completed: what leaves is not
 * what it means to send.  Without --debug it passes (the bytes are never
 * checked). */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    unsigned char *buf = cl_alloc(c, a->bytes);
    if (cl_rank(c) == 0) {
        CL_TRY(cl_send(c, buf, a->bytes, 1, 0));
        CL_TRY(cl_recv(c, buf, a->bytes, 1, 0, NULL));
    } else if (cl_rank(c) == 1) {
        cl_request *r;
        CL_TRY(cl_irecv(c, buf, a->bytes, 0, 0, &r));
        CL_TRY(cl_send(c, buf, a->bytes, 0, 0)); /* the bug: wait first */
        CL_TRY(cl_wait(c, &r, NULL));
    }
    return 0;
}
