/* pingpong: ranks 0 and 1 bounce one buffer back and forth.  The round trip
 * is two messages; commlab reports half of it, the one-way time
 * alpha + n / B.  Other ranks sit out.
 *
 * pingpong-stream makes STREAM_ROUND_TRIPS of them an iteration, its time
 * the iteration over twice that (core/pattern.c's divisor): a stream of
 * round trips, as OSU-style benchmarks and `commlab bench` time them,
 * spreads whatever the first messages after a start cost beyond the rest
 * over all of them (chapter 06, "One round trip, or a stream of them").
 * The model prices both alike. */
#include "commlab.h"

#define STREAM_ROUND_TRIPS 32 /* core/pattern.c divides by twice this */

/* One round trip of buf's bytes: the ping carries the fill of seed, the
 * pong that of seed + 1 (checked when checking). */
static int round_trip(cl_comm *c, unsigned char *buf, size_t bytes, unsigned long long seed)
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
    return round_trip(c, buf, a->bytes, 1000 + (unsigned long long)a->iteration);
}

int pingpong_stream(cl_comm *c, const cl_args *a)
{
    unsigned char *buf = cl_alloc(c, a->bytes);
    /* Each round trip its own seeds: two a round trip. */
    unsigned long long first =
        1000 + 2ULL * STREAM_ROUND_TRIPS * (unsigned long long)a->iteration;
    for (int i = 0; i < STREAM_ROUND_TRIPS; i++)
        CL_TRY(round_trip(c, buf, a->bytes, first + 2ULL * (unsigned long long)i));
    return 0;
}
