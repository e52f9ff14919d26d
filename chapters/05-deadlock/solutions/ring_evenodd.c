/* ring_evenodd.c - exercise 5.3: the blocking ring made safe by order.
 * Even ranks send to the right, then receive from the left; odd ranks
 * receive first.  Rank 1 receives first, so no cycle of waits can close,
 * at any K and any size: two rounds of messages for K even, three for K
 * odd (ranks K - 1 and 0, both even, both send first). */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), size = cl_size(c);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    unsigned char *out = cl_alloc(c, a->bytes), *in = cl_alloc(c, a->bytes);
    cl_fill(c, out, a->bytes, (unsigned long long)rank);
    if (rank % 2 == 0) {
        CL_TRY(cl_send(c, out, a->bytes, right, 0));
        CL_TRY(cl_recv(c, in, a->bytes, left, 0, NULL));
    } else {
        CL_TRY(cl_recv(c, in, a->bytes, left, 0, NULL));
        CL_TRY(cl_send(c, out, a->bytes, right, 0));
    }
    return cl_verify(c, in, a->bytes, (unsigned long long)left, "left neighbour's buffer");
}
