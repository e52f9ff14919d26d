/* Exercise 5.3 done wrong on purpose (the check must fail it): only rank 0
 * receives first.  That breaks the cycle, so nothing deadlocks and every
 * rank ends with the right data, but each send waits for the one after
 * it: the K messages go one after another. */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), size = cl_size(c);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    unsigned char *out = cl_alloc(c, a->bytes), *in = cl_alloc(c, a->bytes);
    cl_fill(c, out, a->bytes, (unsigned long long)rank);
    if (rank != 0) {
        CL_TRY(cl_send(c, out, a->bytes, right, 0));
        CL_TRY(cl_recv(c, in, a->bytes, left, 0, NULL));
    } else {
        CL_TRY(cl_recv(c, in, a->bytes, left, 0, NULL));
        CL_TRY(cl_send(c, out, a->bytes, right, 0));
    }
    return 0;
}
