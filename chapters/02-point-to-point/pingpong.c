/* pingpong: ranks 0 and 1 bounce one buffer back and forth.  The round trip
 * is two messages; commlab reports half of it, the one-way time
 * alpha + n / B.  Other ranks sit out. */
#include "commlab.h"

int pingpong(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c);
    unsigned char *buf = cl_alloc(c, a->bytes);
    unsigned long long seed = 1000 + (unsigned long long)a->iteration;
    if (rank == 0) {
        cl_fill(c, buf, a->bytes, seed);
        CL_TRY(cl_send(c, buf, a->bytes, 1, 0));
        CL_TRY(cl_recv(c, buf, a->bytes, 1, 0, NULL));
        CL_TRY(cl_verify(c, buf, a->bytes, seed + 1, "pong"));
    } else if (rank == 1) {
        CL_TRY(cl_recv(c, buf, a->bytes, 0, 0, NULL));
        CL_TRY(cl_verify(c, buf, a->bytes, seed, "ping"));
        cl_fill(c, buf, a->bytes, seed + 1);
        CL_TRY(cl_send(c, buf, a->bytes, 0, 0));
    }
    return 0;
}
