/* exercise: 2.2
 * expect: fail
 * why: received into a buffer it keeps
 * shm: yes
 * kind: faked data - receives into scratch, then fills its "received"
 * block itself with the partner's seed. */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c);
    int partner = rank % 2 == 0 ? rank + 1 : rank - 1;
    if (partner >= cl_size(c))
        return 0;
    unsigned char *out = cl_alloc(c, a->bytes), *in = cl_alloc(c, a->bytes);
    unsigned char *scratch = cl_alloc(c, a->bytes);
    cl_fill(c, out, a->bytes, (unsigned long long)rank);
    cl_request *r[2];
    CL_TRY(cl_irecv(c, scratch, a->bytes, partner, 0, &r[0]));
    CL_TRY(cl_isend(c, out, a->bytes, partner, 0, &r[1]));
    CL_TRY(cl_waitall(c, 2, r, NULL));
    cl_fill(c, scratch, a->bytes, 0); /* scratch reused: the data is gone */
    cl_fill(c, in, a->bytes, (unsigned long long)partner);
    return cl_verify(c, in, a->bytes, (unsigned long long)partner, "partner's buffer");
}
