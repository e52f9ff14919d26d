/* exercise: 4.3
 * expect: fail
 * why: in the task's schedule
 * shm: yes
 * kind: a different algorithm with the same count - every rank sends its
 * block straight to each other rank (K (K - 1) messages, as the ring). */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c);
    size_t n = a->bytes;
    unsigned char *x = cl_alloc(c, n);
    size_t mine = (size_t)rank * n / (size_t)k, len = (size_t)(rank + 1) * n / (size_t)k - mine;
    cl_fill(c, CL_AT(x, mine), len, (unsigned long long)rank);
    cl_request *r[256];
    int m = 0;
    for (int j = 0; j < k && m < 254; j++) {
        if (j == rank)
            continue;
        size_t at = (size_t)j * n / (size_t)k, l = (size_t)(j + 1) * n / (size_t)k - at;
        CL_TRY(cl_irecv(c, CL_AT(x, at), l, j, 0, &r[m++]));
        CL_TRY(cl_isend(c, CL_AT(x, mine), len, j, 0, &r[m++]));
    }
    return cl_waitall(c, m, r, NULL);
}
