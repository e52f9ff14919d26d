/* exercise: 4.3
 * expect: fail
 * why: written by the rank itself
 * kind: faked data - the ring's last step receives into scratch, and the
 * rank writes that block of its buffer itself. */
#include "commlab.h"

static size_t first(size_t n, int k, int j)
{
    return (size_t)j * n / (size_t)k;
}

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c);
    size_t n = a->bytes;
    unsigned char *x = cl_alloc(c, n), *scratch = cl_alloc(c, n);
    cl_fill(c, CL_AT(x, first(n, k, rank)), first(n, k, rank + 1) - first(n, k, rank),
            (unsigned long long)rank);
    for (int s = 0; s < k - 1; s++) {
        int out = (rank - s + k) % k, in = (rank - s - 1 + k) % k;
        size_t inlen = first(n, k, in + 1) - first(n, k, in);
        bool last = s == k - 2;
        cl_request *r[2];
        CL_TRY(cl_irecv(c, last ? scratch : CL_AT(x, first(n, k, in)), inlen,
                        (rank - 1 + k) % k, 0, &r[0]));
        CL_TRY(cl_isend(c, CL_AT(x, first(n, k, out)), first(n, k, out + 1) - first(n, k, out),
                        (rank + 1) % k, 0, &r[1]));
        CL_TRY(cl_waitall(c, 2, r, NULL));
        if (last)
            cl_fill(c, CL_AT(x, first(n, k, in)), inlen, (unsigned long long)in);
    }
    return 0;
}
