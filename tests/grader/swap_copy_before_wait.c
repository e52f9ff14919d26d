/* exercise: 2.2
 * expect: fail
 * why: received into a buffer it keeps
 * shm: yes
 * kind: reads a receive buffer before its receive completed - copies it
 * into the block it keeps, then waits. */
#include <string.h>

#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c);
    int partner = rank % 2 == 0 ? rank + 1 : rank - 1;
    if (partner >= cl_size(c))
        return 0;
    unsigned char *out = cl_alloc(c, a->bytes), *in = cl_alloc(c, a->bytes);
    unsigned char *kept = cl_alloc(c, a->bytes);
    cl_fill(c, out, a->bytes, (unsigned long long)rank);
    cl_request *r[2];
    CL_TRY(cl_irecv(c, in, a->bytes, partner, 0, &r[0]));
    CL_TRY(cl_isend(c, out, a->bytes, partner, 0, &r[1]));
    if (in && kept)
        memcpy(kept, in, a->bytes);
    CL_TRY(cl_waitall(c, 2, r, NULL));
    cl_fill(c, in, a->bytes, 0); /* the receive buffer is scratch */
    return 0;
}
