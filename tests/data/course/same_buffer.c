/* Wrong work for exercise 2.2 (issue 19): isend and irecv on one buffer.
 * What arrives depends on when the bytes really move; --debug, on in every
 * check, reports the receive into a buffer a pending send still owns. */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), partner = rank % 2 == 0 ? rank + 1 : rank - 1;
    if (partner >= cl_size(c))
        return 0;
    unsigned char *buf = cl_alloc(c, a->bytes);
    cl_fill(c, buf, a->bytes, (unsigned long long)rank);
    cl_request *r[2];
    CL_TRY(cl_isend(c, buf, a->bytes, partner, 0, &r[0]));
    CL_TRY(cl_irecv(c, buf, a->bytes, partner, 0, &r[1]));
    return cl_waitall(c, 2, r, NULL);
}
