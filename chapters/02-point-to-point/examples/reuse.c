/* reuse.c - pitfall 2: a send buffer written before the send completed.
 * Rank 0 posts an isend, then refills the same buffer for "the next
 * message" before waiting.  Above the eager limit the bytes leave only when
 * rank 1's receive is posted (here 1 ms later), so rank 1 gets the new
 * contents; below it the send took a copy at once and the bug hides. */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    unsigned char *buf = cl_alloc(c, a->bytes);
    if (cl_rank(c) == 0) {
        cl_request *r;
        cl_fill(c, buf, a->bytes, 1);
        CL_TRY(cl_isend(c, buf, a->bytes, 1, 0, &r));
        cl_fill(c, buf, a->bytes, 2); /* too early: the send may not have read it yet */
        CL_TRY(cl_wait(c, &r, NULL));
    } else if (cl_rank(c) == 1) {
        CL_TRY(cl_compute(c, 1e-3));
        CL_TRY(cl_recv(c, buf, a->bytes, 0, 0, NULL));
        CL_TRY(cl_verify(c, buf, a->bytes, 1, "the first message"));
    }
    return 0;
}
