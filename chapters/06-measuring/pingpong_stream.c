/* pingpong-stream: chapter 02's ping-pong, ROUND_TRIPS round trips an
 * iteration instead of one.  The time is still one-way: the iteration over
 * 2 x ROUND_TRIPS (core/pattern.c's divisor).  A stream of round trips is
 * what OSU-style benchmarks, and `commlab bench`, time: whatever the first
 * messages after a start cost beyond the rest is spread over all of them.
 * Chapter 06 ("One round trip, or a stream of them") runs it next to
 * pingpong; the model prices both alike. */
#include "commlab.h"

#define ROUND_TRIPS 32 /* core/pattern.c divides by twice this */

int pingpong_stream(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c);
    unsigned char *buf = cl_alloc(c, a->bytes);
    for (int i = 0; i < ROUND_TRIPS; i++) {
        unsigned long long seed = 1000 + 2ULL * ROUND_TRIPS * (unsigned long long)a->iteration +
                                  2ULL * (unsigned long long)i;
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
    }
    return 0;
}
