/* exercise: 2.2
 * expect: fail
 * why: never completed
 * shm: yes
 * kind: a request never completed - waits for the receive only and
 * returns with its send still pending. */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c);
    int partner = rank % 2 == 0 ? rank + 1 : rank - 1;
    if (partner >= cl_size(c))
        return 0;
    unsigned char *out = cl_alloc(c, a->bytes), *in = cl_alloc(c, a->bytes);
    cl_fill(c, out, a->bytes, (unsigned long long)rank);
    cl_request *r[2];
    CL_TRY(cl_irecv(c, in, a->bytes, partner, 0, &r[0]));
    CL_TRY(cl_isend(c, out, a->bytes, partner, 0, &r[1]));
    CL_TRY(cl_wait(c, &r[0], NULL));
    return cl_verify(c, in, a->bytes, (unsigned long long)partner, "partner's buffer");
}
