/* pingpong: ranks 0 and 1 bounce one buffer back and forth.  The round trip
 * is two messages; commlab reports half of it, the one-way time
 * alpha + n / B.  Other ranks sit out. */
#include "pingpong.h"

int pingpong_round(cl_comm *c, unsigned char *buf, size_t bytes, unsigned long long seed)
{
    int rank = cl_rank(c);
    if (rank == 0) {
        cl_fill(c, buf, bytes, seed);
        CL_TRY(cl_send(c, buf, bytes, 1, 0));
        CL_TRY(cl_recv(c, buf, bytes, 1, 0, NULL));
        CL_TRY(cl_verify(c, buf, bytes, seed + 1, "pong"));
    } else if (rank == 1) {
        CL_TRY(cl_recv(c, buf, bytes, 0, 0, NULL));
        CL_TRY(cl_verify(c, buf, bytes, seed, "ping"));
        cl_fill(c, buf, bytes, seed + 1);
        CL_TRY(cl_send(c, buf, bytes, 0, 0));
    }
    return 0;
}

int pingpong(cl_comm *c, const cl_args *a)
{
    unsigned char *buf = cl_alloc(c, a->bytes);
    return pingpong_round(c, buf, a->bytes, 1000 + (unsigned long long)a->iteration);
}
