/* exercise: 4.2
 * expect: pass
 * shm: yes
 * kind: right, in another style - the same binomial tree, the children
 * sent to with cl_isend, largest subtree first, then one cl_waitall. */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), size = cl_size(c);
    unsigned char *x = cl_alloc(c, a->bytes);
    int low = 1; /* rank's lowest set bit; for rank 0 the first power >= size */
    while (low < size && !(rank & low))
        low <<= 1;
    if (rank == 0)
        cl_fill(c, x, a->bytes, 42);
    else
        CL_TRY(cl_recv(c, x, a->bytes, rank - low, 0, NULL));
    cl_request *r[32];
    int n = 0;
    for (int step = low / 2; step > 0; step /= 2)
        if (rank + step < size)
            CL_TRY(cl_isend(c, x, a->bytes, rank + step, 0, &r[n++]));
    CL_TRY(cl_waitall(c, n, r, NULL));
    return cl_verify(c, x, a->bytes, 42, "broadcast buffer");
}
