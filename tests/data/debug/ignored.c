/* ignored.c - send_modified.c by a program that ignores what cl_wait
 * returns: the misuse still ends the run (exit 1). */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    unsigned char *buf = cl_alloc(c, a->bytes);
    if (!buf || a->bytes == 0)
        return 0;
    cl_request *r;
    if (cl_rank(c) == 0 && cl_isend(c, buf, a->bytes, 1, 0, &r) == 0) {
        buf[0] ^= 1; /* the bug */
        (void)cl_wait(c, &r, NULL);
    } else if (cl_rank(c) == 1) {
        (void)cl_recv(c, buf, a->bytes, 0, 0, NULL);
    }
    return 0;
}
