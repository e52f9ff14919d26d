/* send_modified.c - rank 0 changes its send buffer between cl_isend and
 * cl_wait; rank 1 receives without checking, so the only report is the
 * one --debug makes, whatever the timing.  Without --debug it passes. */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    unsigned char *buf = cl_alloc(c, a->bytes);
    if (!buf || a->bytes == 0)
        return 0;
    if (cl_rank(c) == 0) {
        cl_request *r;
        CL_TRY(cl_isend(c, buf, a->bytes, 1, 0, &r));
        buf[a->bytes - 1] ^= 1; /* the bug */
        CL_TRY(cl_wait(c, &r, NULL));
    } else if (cl_rank(c) == 1) {
        CL_TRY(cl_recv(c, buf, a->bytes, 0, 0, NULL));
    }
    return 0;
}
