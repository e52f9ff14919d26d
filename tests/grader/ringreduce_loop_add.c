/* exercise: 4.7
 * expect: fail
 * why: never calls cl_reduce_local
 */
/* Exercise 4.7, done wrong on purpose: it adds what arrives with a loop of
 * its own over doubles, which is right for f64 sums only and which the
 * model prices at nothing; the task asks for cl_reduce_local. */
#include "commlab.h"

static size_t first(size_t count, int k, int j)
{
    return (size_t)j * count / (size_t)k;
}

static size_t len(size_t count, int k, int j)
{
    return first(count, k, j + 1) - first(count, k, j);
}

/* Sends `bytes` at out to the right and receives `rbytes` into in from
 * the left, both at once. */
static int step(cl_comm *c, const void *out, size_t bytes, void *in, size_t rbytes)
{
    int rank = cl_rank(c), k = cl_size(c);
    cl_request *r[2];
    CL_TRY(cl_irecv(c, in, rbytes, (rank - 1 + k) % k, 0, &r[0]));
    CL_TRY(cl_isend(c, out, bytes, (rank + 1) % k, 0, &r[1]));
    return cl_waitall(c, 2, r, NULL);
}

/* What every element i must end as: w = i % 7 + 1 over K ranks. */
static double want(cl_op op, int k, size_t i)
{
    double w = (double)(i % 7 + 1);
    switch (op) {
    case CL_OP_SUM: return k * (k + 1) / 2.0 * w;
    case CL_OP_AVG: return (k + 1) / 2.0 * w;
    case CL_OP_MIN: return w;
    default: return k * w; /* max */
    }
}

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c);
    size_t size = cl_dtype_size(a->dtype), count = a->bytes / size;
    char *x = cl_alloc(c, count * size), *tmp = cl_alloc(c, (count / (size_t)k + 1) * size);
    for (size_t i = 0; x && i < count; i++)
        cl_set_value(a->dtype, x, i, (double)(rank + 1) * (double)(i % 7 + 1));
    for (int s = 0; s < k - 1; s++) {
        int out = (rank - s + k) % k, in = (rank - s - 1 + k) % k;
        CL_TRY(step(c, CL_AT(x, first(count, k, out) * size), len(count, k, out) * size, tmp,
                    len(count, k, in) * size));
        double *dst = (double *)CL_AT(x, first(count, k, in) * size), *src = (double *)tmp;
        for (size_t i = 0; dst && i < len(count, k, in); i++)
            dst[i] += src[i];
    }
    int mine = (rank + 1) % k;
    CL_TRY(cl_reduce_finish(c, CL_AT(x, first(count, k, mine) * size), len(count, k, mine),
                            a->dtype, a->op, k));
    for (int s = 0; s < k - 1; s++) {
        int out = (rank + 1 - s + k) % k, in = (rank - s + k) % k;
        CL_TRY(step(c, CL_AT(x, first(count, k, out) * size), len(count, k, out) * size,
                    CL_AT(x, first(count, k, in) * size), len(count, k, in) * size));
    }
    for (size_t i = 0; x && cl_checking(c) && i < count; i++)
        if (cl_value(a->dtype, x, i) != want(a->op, k, i))
            return cl_fail(c, "element %zu is %g, expected %g", i, cl_value(a->dtype, x, i),
                           want(a->op, k, i));
    return 0;
}
