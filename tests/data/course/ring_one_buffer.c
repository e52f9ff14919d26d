/* Exercise 5.3 done wrong on purpose (the check must fail it): the
 * even/odd order, but one buffer.  An odd rank receives into the buffer it
 * then sends, so it passes its left neighbour's data on instead of its
 * own.  Nothing deadlocks, the messages and the time are right; no rank
 * checks what it got. */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), size = cl_size(c);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    unsigned char *buf = cl_alloc(c, a->bytes);
    cl_fill(c, buf, a->bytes, (unsigned long long)rank);
    if (rank % 2 == 0) {
        CL_TRY(cl_send(c, buf, a->bytes, right, 0));
        CL_TRY(cl_recv(c, buf, a->bytes, left, 0, NULL));
    } else {
        CL_TRY(cl_recv(c, buf, a->bytes, left, 0, NULL));
        CL_TRY(cl_send(c, buf, a->bytes, right, 0));
    }
    return 0;
}
