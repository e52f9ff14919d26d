/* exercise: 4.8
 * expect: fail
 * why: does not carry the data the task asks for
 * shm: yes
 */
/* Exercise 4.8, done wrong on purpose: the tree is right but it adds
 * (CL_OP_SUM) what --op max asks to take the largest of, and checks the
 * sum it made, so its own check passes; the values have both signs, so
 * the partial sums it sends up are not the partial maxima the grader's
 * reference sends. */
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
            CL_TRY(cl_reduce_local(c, x, in, count, CL_F32, CL_OP_SUM));
        }
    }
    for (size_t i = 0; x && cl_checking(c) && i < count; i++) {
        float want = 0;
        for (int r = 0; r < k; r++)
            want += value(r, i);
        if (x[i] != want)
            return cl_fail(c, "element %zu is %g, expected %g", i, x[i], want);
    }
    return 0;
}
