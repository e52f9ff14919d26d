/* exercise: 4.8
 * expect: pass
 */
/* Exercise 4.8, right in another style: the children's buffers are
 * received with cl_irecv and cl_wait, the operator is passed through as
 * it came, and rank 0's expected value is the first rank's value combined
 * with every other's by the same comparison the operator makes. */
#include "commlab.h"

static float v(int r, size_t i)
{
    return (float)((size_t)(r + 3) * (i + 1) % 11) - 5.0f;
}

static float pick(cl_op op, float a, float b)
{
    return op == CL_OP_MAX ? (a > b ? a : b) : (a < b ? a : b);
}

int pattern(cl_comm *c, const cl_args *a)
{
    int me = cl_rank(c), k = cl_size(c);
    if (a->dtype != CL_F32 || (a->op != CL_OP_MAX && a->op != CL_OP_MIN))
        return cl_fail(c, "max or min of f32 only");
    size_t n = a->bytes / 4;
    float *x = cl_alloc(c, n * 4), *tmp = cl_alloc(c, n * 4);
    for (size_t i = 0; x && i < n; i++)
        x[i] = v(me, i);
    int low = me ? me & -me : 1 << 30; /* rank 0: every power of two below K */
    for (int bit = 1; bit < low && me + bit < k; bit *= 2) {
        cl_request *r;
        CL_TRY(cl_irecv(c, tmp, n * 4, me + bit, 0, &r));
        CL_TRY(cl_wait(c, &r, NULL));
        CL_TRY(cl_reduce_local(c, x, tmp, n, a->dtype, a->op));
    }
    if (me)
        return cl_send(c, x, n * 4, me - low, 0);
    for (size_t i = 0; x && cl_checking(c) && i < n; i++) {
        float want = v(0, i);
        for (int r = 1; r < k; r++)
            want = pick(a->op, want, v(r, i));
        if (x[i] != want)
            return cl_fail(c, "element %zu: %g, want %g", i, x[i], want);
    }
    return 0;
}
