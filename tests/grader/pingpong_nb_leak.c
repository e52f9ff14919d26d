/* exercise: 2.3
 * expect: fail
 * why: never completed
 * shm: yes
 * kind: a request never completed - rank 1 posts its answer with cl_isend
 * and returns. */
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
        return cl_wait(c, &r, NULL);
    }
    CL_TRY(cl_irecv(c, buf, a->bytes, 0, 0, &r));
    CL_TRY(cl_wait(c, &r, NULL));
    cl_fill(c, buf, a->bytes, 1);
    return cl_isend(c, buf, a->bytes, 0, 0, &r);
}
