/* Exercise 4.8: the max (or min) of every rank's values at rank 0, up a
 * binomial tree.  Element i of rank r is ((r + 3)(i + 1)) mod 11 - 5, an
 * f32 in -5 .. 5.  Rank r receives from r + 1, r + 2, r + 4, ... below
 * its lowest set bit (while < K) and reduces each into its own with
 * a->op, then sends to r minus that bit: K - 1 messages in ceil(log2 K)
 * rounds.  Rank 0 checks every element against the max (min) over the
 * ranks, which a sum of the same values misses: they are of both signs. */
#include "commlab.h"

static float value(int r, size_t i)
{
    return (float)((size_t)(r + 3) * (i + 1) % 11) - 5.0f;
}

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c);
    if ((a->op != CL_OP_MAX && a->op != CL_OP_MIN) || a->dtype != CL_F32)
        return cl_fail(c, "run with --dtype f32 and --op max or --op min, not %s of %s",
                       cl_op_name(a->op), cl_dtype_name(a->dtype));
    size_t count = a->bytes / sizeof(float), bytes = count * sizeof(float);
    float *x = cl_alloc(c, bytes), *in = cl_alloc(c, bytes);
    for (size_t i = 0; x && i < count; i++)
        x[i] = value(rank, i);
    for (int mask = 1; mask < k; mask <<= 1) {
        if (rank & mask)
            return cl_send(c, x, bytes, rank - mask, 0);
        if (rank + mask < k) {
            CL_TRY(cl_recv(c, in, bytes, rank + mask, 0, NULL));
            CL_TRY(cl_reduce_local(c, x, in, count, CL_F32, a->op));
        }
    }
    for (size_t i = 0; x && cl_checking(c) && i < count; i++) {
        float want = value(0, i);
        for (int r = 1; r < k; r++) {
            float v = value(r, i);
            if (a->op == CL_OP_MAX ? v > want : v < want)
                want = v;
        }
        if (x[i] != want)
            return cl_fail(c, "element %zu is %g, expected the %s %g", i, x[i],
                           cl_op_name(a->op), want);
    }
    return 0;
}
