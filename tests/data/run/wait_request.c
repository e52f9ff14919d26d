/* wait_request.c - a student's slip: cl_wait(c, r, NULL) where &r belongs.
 * C warns and the rank would crash; commlab refuses to compile it. */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    char buf[8] = {0};
    cl_request *r;
    if (cl_rank(c) == 0) {
        if (cl_isend(c, buf, sizeof buf, 1, 0, &r))
            return 1;
        return cl_wait(c, r, NULL);
    }
    (void)a;
    return cl_recv(c, buf, sizeof buf, 0, 0, NULL);
}
