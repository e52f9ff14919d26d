/* exercise: 4.6
 * expect: fail
 * why: never calls cl_group
 * kind: what the task asks and nobody checks - the same messages, sent
 * through the world communicator with world ranks computed by hand,
 * without cl_group. */
#include "commlab.h"

#define MAX_RANKS 64

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c), d = a->group > 0 ? a->group : 2;
    if (k % d != 0 || k > MAX_RANKS)
        return cl_fail(c, "%d ranks do not make groups of %d", k, d);
    int p = k / d, s = rank / d, first = s * d;
    unsigned char *act = cl_alloc(c, a->bytes), *got = cl_alloc(c, a->bytes);
    cl_fill(c, act, a->bytes, (unsigned long long)rank);
    if (s + 1 < p)
        CL_TRY(cl_send(c, act, a->bytes, rank + d, 0));
    if (s > 0)
        CL_TRY(cl_recv(c, got, a->bytes, rank - d, 0, NULL));
    size_t count = a->bytes / sizeof(double), bytes = count * sizeof(double);
    double *x = cl_alloc(c, bytes), *in = cl_alloc(c, (size_t)d * bytes);
    for (size_t i = 0; x && i < count; i++)
        x[i] = (double)(rank + 1) * (double)(i % 7 + 1);
    cl_request *r[2 * MAX_RANKS];
    int n = 0;
    for (int q = first; q < first + d; q++)
        if (q != rank)
            CL_TRY(cl_irecv(c, in ? in + (size_t)(q - first) * count : NULL, bytes, q, 0, &r[n++]));
    for (int q = first; q < first + d; q++)
        if (q != rank)
            CL_TRY(cl_isend(c, x, bytes, q, 0, &r[n++]));
    CL_TRY(cl_waitall(c, n, r, NULL));
    for (int q = first; x && q < first + d; q++)
        for (size_t i = 0; q != rank && i < count; i++)
            x[i] += in[(size_t)(q - first) * count + i];
    return 0;
}
