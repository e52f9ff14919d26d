/* Wrong work for exercise 2.2 (issue 19): every rank sends to the next one
 * around a ring instead of swapping with its partner, and checks nothing.
 * Four messages, isend/irecv, the exchange's time: only where the messages
 * go and what the ranks end with tell it apart. */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), size = cl_size(c);
    if (size % 2 && rank == size - 1)
        return 0;
    int k = size - size % 2;
    unsigned char *out = cl_alloc(c, a->bytes), *in = cl_alloc(c, a->bytes);
    cl_fill(c, out, a->bytes, (unsigned long long)rank);
    cl_request *r[2];
    CL_TRY(cl_irecv(c, in, a->bytes, (rank - 1 + k) % k, 0, &r[0]));
    CL_TRY(cl_isend(c, out, a->bytes, (rank + 1) % k, 0, &r[1]));
    return cl_waitall(c, 2, r, NULL);
}
