/* pingpong_nb.c - exercise 2.3: the ping-pong with isend/irecv and wait.
 * Each side posts its operation and waits for it at once, so the messages
 * are the same as with cl_send/cl_recv; what differs is the calls. */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c);
    if (rank > 1)
        return 0;
    unsigned char *buf = cl_alloc(c, a->bytes);
    cl_request *r;
    if (rank == 0) {
        cl_fill(c, buf, a->bytes, 0);
        CL_TRY(cl_isend(c, buf, a->bytes, 1, 0, &r));
        CL_TRY(cl_wait(c, &r, NULL));
        CL_TRY(cl_irecv(c, buf, a->bytes, 1, 0, &r));
        CL_TRY(cl_wait(c, &r, NULL));
        return cl_verify(c, buf, a->bytes, 1, "pong");
    }
    CL_TRY(cl_irecv(c, buf, a->bytes, 0, 0, &r));
    CL_TRY(cl_wait(c, &r, NULL));
    CL_TRY(cl_verify(c, buf, a->bytes, 0, "ping"));
    cl_fill(c, buf, a->bytes, 1);
    CL_TRY(cl_isend(c, buf, a->bytes, 0, 0, &r));
    return cl_wait(c, &r, NULL);
}
