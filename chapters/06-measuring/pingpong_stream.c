/* pingpong-stream: chapter 02's ping-pong, ROUND_TRIPS round trips an
 * iteration instead of one.  The time is still one-way: the iteration over
 * 2 x ROUND_TRIPS (core/pattern.c's divisor).  A stream of round trips is
 * what OSU-style benchmarks, and `commlab bench`, time: whatever the first
 * messages after a start cost beyond the rest is spread over all of them.
 * Chapter 06 ("One round trip, or a stream of them") runs it next to
 * pingpong; the model prices both alike. */
#include "chapters/02-point-to-point/pingpong.h"

#define ROUND_TRIPS 32 /* core/pattern.c divides by twice this */

int pingpong_stream(cl_comm *c, const cl_args *a)
{
    unsigned char *buf = cl_alloc(c, a->bytes);
    /* Each round trip its own seeds: 2 a round trip, ROUND_TRIPS an iteration. */
    unsigned long long first = 1000 + 2ULL * ROUND_TRIPS * (unsigned long long)a->iteration;
    for (int i = 0; i < ROUND_TRIPS; i++)
        CL_TRY(pingpong_round(c, buf, a->bytes, first + 2ULL * (unsigned long long)i));
    return 0;
}
