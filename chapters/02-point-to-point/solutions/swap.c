/* swap.c - exercise 2.2: even and odd neighbours swap buffers at the same
 * time.  Both post the receive and the send before waiting, so neither
 * waits for the other to receive first: no deadlock at any size, and both
 * directions of the link are busy at once. */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c);
    int partner = rank % 2 == 0 ? rank + 1 : rank - 1;
    if (partner >= cl_size(c)) /* an odd count leaves the last rank out */
        return 0;
    unsigned char *out = cl_alloc(c, a->bytes), *in = cl_alloc(c, a->bytes);
    cl_fill(c, out, a->bytes, (unsigned long long)rank);
    cl_request *r[2];
    CL_TRY(cl_irecv(c, in, a->bytes, partner, 0, &r[0]));
    CL_TRY(cl_isend(c, out, a->bytes, partner, 0, &r[1]));
    CL_TRY(cl_waitall(c, 2, r, NULL));
    return cl_verify(c, in, a->bytes, (unsigned long long)partner, "partner's buffer");
}
