/* exercise: 2.2
 * expect: fail
 * why: received into a buffer it keeps
 * kind: faked data - sends a zeroed buffer and writes the partner's data
 * from its seed. */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c);
    int partner = rank % 2 == 0 ? rank + 1 : rank - 1;
    if (partner >= cl_size(c))
        return 0;
    unsigned char *out = cl_alloc(c, a->bytes), *in = cl_alloc(c, a->bytes);
    cl_request *r[2];
    CL_TRY(cl_irecv(c, in, a->bytes, partner, 0, &r[0]));
    CL_TRY(cl_isend(c, out, a->bytes, partner, 0, &r[1]));
    CL_TRY(cl_waitall(c, 2, r, NULL));
    cl_fill(c, in, a->bytes, (unsigned long long)partner);
    return 0;
}
