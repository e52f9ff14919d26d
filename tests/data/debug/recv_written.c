/* recv_written.c - rank 1 writes into the buffer of its pending irecv;
 * the message then overwrites what it wrote.  Without --debug it passes. */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    unsigned char *buf = cl_alloc(c, a->bytes);
    if (!buf || a->bytes == 0)
        return 0;
    if (cl_rank(c) == 0) {
        CL_TRY(cl_send(c, buf, a->bytes, 1, 0));
    } else if (cl_rank(c) == 1) {
        cl_request *r;
        CL_TRY(cl_irecv(c, buf, a->bytes, 0, 0, &r));
        buf[0] = 1; /* the bug */
        CL_TRY(cl_wait(c, &r, NULL));
    }
    return 0;
}
