/* exchange: even and odd neighbours (0<->1, 2<->3, ...) swap buffers at the
 * same time with isend/irecv.  Both directions of each link are busy at
 * once (full duplex): alpha + n / B.  With an odd number of ranks the last
 * one has no partner and sits out. */
#include "commlab.h"

int exchange(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c);
    int partner = rank % 2 == 0 ? rank + 1 : rank - 1;
    if (partner >= cl_size(c))
        return 0;
    unsigned char *out = cl_alloc(c, a->bytes), *in = cl_alloc(c, a->bytes);
    cl_fill(c, out, a->bytes, 77 + (unsigned long long)rank);
    cl_request *r[2];
    CL_TRY(cl_irecv(c, in, a->bytes, partner, 0, &r[0]));
    CL_TRY(cl_isend(c, out, a->bytes, partner, 0, &r[1]));
    CL_TRY(cl_waitall(c, 2, r, NULL));
    return cl_verify(c, in, a->bytes, 77 + (unsigned long long)partner, "partner's buffer");
}
