/* early_use.c - rank 1 copies its receive buffer before the wait, then
 * checks the copy: the check fails, and under --debug it says the bytes
 * are the poison of a pending receive. */
#include <string.h>

#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    unsigned char *buf = cl_alloc(c, a->bytes), *copy = cl_alloc(c, a->bytes);
    if (cl_rank(c) == 0) {
        cl_fill(c, buf, a->bytes, 7);
        CL_TRY(cl_compute(c, 1e-3));
        CL_TRY(cl_send(c, buf, a->bytes, 1, 0));
    } else if (cl_rank(c) == 1) {
        cl_request *r;
        CL_TRY(cl_irecv(c, buf, a->bytes, 0, 0, &r));
        if (buf)
            memcpy(copy, buf, a->bytes); /* the bug: the receive is not complete */
        CL_TRY(cl_wait(c, &r, NULL));
        CL_TRY(cl_verify(c, buf, a->bytes, 7, "the message"));
        CL_TRY(cl_verify(c, copy, a->bytes, 7, "the copy taken before the wait"));
    }
    return 0;
}
