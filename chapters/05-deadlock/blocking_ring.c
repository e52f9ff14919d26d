/* blocking-ring: every rank sends its buffer (cl_fill seed r) to its right
 * neighbour, r + 1 mod K, and receives its left neighbour's, with blocking
 * cl_send and cl_recv.  Sending first everywhere works up to the eager
 * limit; above it every send waits for a receive that its receiver posts
 * only after its own send: a cycle of K waits, a deadlock.
 *   --fix evenodd  even ranks send first, odd ranks receive first.  With K
 *                  even the ring's messages go in two rounds: 2 (alpha +
 *                  n / B).  With K odd ranks K - 1 and 0 are both even, and
 *                  both send first: rank K - 1's send waits until rank 0's
 *                  own send is done, and rank K - 2's until then: three
 *                  rounds, 3 (alpha + n / B), the fewest blocking calls can
 *                  do on an odd ring (no two messages of a rank share a
 *                  round, and an odd cycle cannot be split into two sets of
 *                  messages that share no rank).  No cycle of waits: rank 1
 *                  receives first, so the chain of waits ends there. */
#include <string.h>

#include "commlab.h"

int blocking_ring(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), size = cl_size(c);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    unsigned char *out = cl_alloc(c, a->bytes), *in = cl_alloc(c, a->bytes);
    cl_fill(c, out, a->bytes, (unsigned long long)rank);
    bool receive_first = a->fix && strcmp(a->fix, "evenodd") == 0 && rank % 2 == 1;
    if (receive_first) {
        CL_TRY(cl_recv(c, in, a->bytes, left, 0, NULL));
        CL_TRY(cl_send(c, out, a->bytes, right, 0));
    } else {
        CL_TRY(cl_send(c, out, a->bytes, right, 0));
        CL_TRY(cl_recv(c, in, a->bytes, left, 0, NULL));
    }
    return cl_verify(c, in, a->bytes, (unsigned long long)left, "left neighbour's buffer");
}
