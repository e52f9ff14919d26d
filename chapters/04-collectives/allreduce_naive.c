/* allreduce-naive: a running sum walks the ring 0 -> 1 -> ... -> K-1, each
 * rank adding its buffer (K - 1 full-size hops, one after another), then
 * the total walks back K-1 -> ... -> 0 (K - 1 more).  2(K - 1) messages of
 * n bytes in sequence: 2(K - 1)(alpha + n / B). */
#include "allreduce_check.h"
#include "commlab.h"

int allreduce_naive(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), size = cl_size(c);
    size_t count = a->bytes / sizeof(double);
    double *x = cl_alloc(c, a->bytes), *in = cl_alloc(c, a->bytes);
    allreduce_init(c, x, count, rank);
    if (rank > 0) {
        CL_TRY(cl_recv(c, in, a->bytes, rank - 1, 0, NULL));
        for (size_t i = 0; x && i < count; i++)
            x[i] += in[i];
    }
    if (rank < size - 1) {
        CL_TRY(cl_send(c, x, a->bytes, rank + 1, 0));
        CL_TRY(cl_recv(c, x, a->bytes, rank + 1, 1, NULL));
    }
    if (rank > 0)
        CL_TRY(cl_send(c, x, a->bytes, rank - 1, 1));
    return allreduce_verify(c, x, count);
}
