/* exercise: 5.1
 * expect: fail
 * why: received into a buffer it keeps
 * kind: faked data - both ranks receive into one scratch buffer, then
 * write the other's data themselves. */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), peer = 1 - rank;
    unsigned char *out = cl_alloc(c, a->bytes), *in = cl_alloc(c, a->bytes);
    unsigned char *scratch = cl_alloc(c, a->bytes);
    cl_fill(c, out, a->bytes, (unsigned long long)rank);
    if (rank == 0) {
        CL_TRY(cl_send(c, out, a->bytes, peer, 0));
        CL_TRY(cl_recv(c, scratch, a->bytes, peer, 0, NULL));
    } else {
        CL_TRY(cl_recv(c, scratch, a->bytes, peer, 0, NULL));
        CL_TRY(cl_send(c, out, a->bytes, peer, 0));
    }
    cl_fill(c, scratch, a->bytes, 99);
    cl_fill(c, in, a->bytes, (unsigned long long)peer);
    return 0;
}
