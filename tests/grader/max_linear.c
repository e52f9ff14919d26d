/* exercise: 4.8
 * expect: fail
 * why: does not carry the data the task asks for
 */
/* Exercise 4.8, done wrong on purpose: the right maxima, but every rank
 * sends straight to rank 0 (K - 1 messages, as many as the tree's), which
 * then reduces them one after another; the task asks for the tree. */
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
    if (rank != 0)
        return cl_send(c, x, bytes, 0, 0);
    for (int s = 1; s < k; s++) {
        CL_TRY(cl_recv(c, in, bytes, s, 0, NULL));
        CL_TRY(cl_reduce_local(c, x, in, count, CL_F32, a->op));
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
