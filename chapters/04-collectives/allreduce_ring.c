/* allreduce-ring: reduce-scatter then all-gather around the ring.  The
 * buffer is cut into K chunks; in each of K - 1 steps every rank sends one
 * chunk to its right and adds the chunk from its left, after which rank r
 * owns the full sum of chunk (r + 1) mod K; K - 1 more steps pass the
 * summed chunks around.  2(K - 1) steps of n / K bytes per rank, all links
 * busy at once: 2(K - 1)(alpha + n / (K B)). */
#include "allreduce_check.h"
#include "commlab.h"

/* Chunk j covers elements [first, first + len) with the remainder spread
 * over the first chunks; in size-only runs the same split in bytes. */
static void chunk_span(size_t total, int k, int j, size_t *first, size_t *len)
{
    size_t base = total / (size_t)k, extra = total % (size_t)k, uj = (size_t)j;
    *first = uj * base + (uj < extra ? uj : extra);
    *len = base + (uj < extra ? 1 : 0);
}

static int step(cl_comm *c, double *x, double *tmp, size_t count, int send_chunk,
                int recv_chunk, int tag, int reduce)
{
    int rank = cl_rank(c), size = cl_size(c);
    size_t sf, sl, rf, rl;
    chunk_span(count, size, send_chunk, &sf, &sl);
    chunk_span(count, size, recv_chunk, &rf, &rl);
    double *dst = reduce ? tmp : CL_AT(x, rf * sizeof(double));
    cl_request *r[2];
    CL_TRY(cl_irecv(c, dst, rl * sizeof(double), (rank - 1 + size) % size, tag, &r[0]));
    CL_TRY(cl_isend(c, CL_AT(x, sf * sizeof(double)), sl * sizeof(double), (rank + 1) % size,
                    tag, &r[1]));
    CL_TRY(cl_waitall(c, 2, r, NULL));
    if (reduce && x)
        for (size_t i = 0; i < rl; i++)
            x[rf + i] += tmp[i];
    return 0;
}

int allreduce_ring(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c);
    size_t count = a->bytes / sizeof(double);
    double *x = cl_alloc(c, a->bytes);
    double *tmp = cl_alloc(c, (count / (size_t)k + 1) * sizeof(double));
    allreduce_init(c, x, count, rank);
    for (int s = 0; s < k - 1; s++)
        CL_TRY(step(c, x, tmp, count, (rank - s + k) % k, (rank - s - 1 + k) % k, 0, 1));
    for (int s = 0; s < k - 1; s++)
        CL_TRY(step(c, x, tmp, count, (rank + 1 - s + k) % k, (rank - s + k) % k, 1, 0));
    return allreduce_verify(c, x, count);
}
