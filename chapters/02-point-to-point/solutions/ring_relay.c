/* ring_relay.c - exercise 2.1: the relay closed into a ring.  Rank r sends
 * to (r + 1) mod size, so the last rank sends back to rank 0 and the value
 * makes the full circle: size hops, of which the size - 1 after rank 0
 * add 10, so 10 (size - 1) arrives back. */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), size = cl_size(c);
    int right = (rank + 1) % size, left = (rank - 1 + size) % size;
    unsigned char *x = cl_alloc(c, a->bytes);
    long long value = 0;
    if (rank > 0) { /* rank 0 starts the circle; everyone else waits for it */
        CL_TRY(cl_recv(c, x, a->bytes, left, 0, NULL));
        value = 10LL * (rank - 1);
        CL_TRY(cl_verify(c, x, a->bytes, (unsigned long long)value, "relayed buffer"));
        value += 10;
    }
    cl_fill(c, x, a->bytes, (unsigned long long)value);
    CL_TRY(cl_send(c, x, a->bytes, right, 0));
    if (rank == 0) {
        CL_TRY(cl_recv(c, x, a->bytes, left, 0, NULL));
        value = 10LL * (size - 1);
        CL_TRY(cl_verify(c, x, a->bytes, (unsigned long long)value, "buffer back at rank 0"));
        cl_printf(c, "after the full circle: %lld", value);
    }
    return 0;
}
