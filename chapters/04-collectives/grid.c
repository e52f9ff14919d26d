/* grid: K = P x D ranks train one model cut into P pipeline stages, D
 * times over (D data-parallel replicas).  Two kinds of subgroup, built
 * with cl_group as torch's new_group builds them:
 *
 *   data-parallel group of stage s:    the D ranks that hold stage s,
 *                                      ranks sD .. sD + D - 1;
 *   pipeline group of replica d:       the P stages of one replica,
 *                                      ranks d, D + d, 2D + d, ...
 *
 * (Megatron-LM's order with no tensor parallelism: data-parallel ranks
 * are neighbours, a pipeline strides across them.)  D is --group (by
 * default the topology's first dimension, else 2) and must divide K.
 *
 * One step of training, reduced to its messages: every stage sends its
 * activation (n bytes, cl_fill with its world rank) to the next stage of
 * its replica, inside the pipeline group; then every data-parallel group
 * all-reduces its gradients (n / 8 doubles) with the ring of
 * allreduce_ring.c.  Rank r's gradient element i is (r + 1)(i % 7 + 1),
 * so the sum over a group is the sum of its (r + 1) times (i % 7 + 1).
 * No message leaves its group.  Above the eager limit each send returns
 * when its data has arrived, so both steps start together on every
 * rank: alpha + n/B, then 2(D - 1)(alpha + n/(D B)) + (D - 1) n gamma / D. */
#include "coll.h"

/* The grid's shape and this rank's place in it. */
typedef struct grid_shape {
    int p, d;         /* stages, replicas */
    int stage, replica;
} grid_shape;

/* Every rank builds every group, in the same order; it keeps the two it
 * belongs to.  On failure it keeps none. */
static int build_groups(cl_comm *c, const grid_shape *g, cl_comm **pipe, cl_comm **dp)
{
    int *members = cl_array(c, (size_t)(g->p > g->d ? g->p : g->d), sizeof *members), err = 0;
    cl_comm *mine;
    if (!members)
        return CL_ENOMEM;
    for (int d = 0; !err && d < g->d; d++) {
        for (int s = 0; s < g->p; s++)
            members[s] = s * g->d + d;
        if (!(err = cl_group(c, members, g->p, &mine)) && mine)
            *pipe = mine;
    }
    for (int s = 0; !err && s < g->p; s++) {
        for (int d = 0; d < g->d; d++)
            members[d] = s * g->d + d;
        if (!(err = cl_group(c, members, g->d, &mine)) && mine)
            *dp = mine;
    }
    if (err) {
        cl_group_free(*pipe);
        cl_group_free(*dp);
        *pipe = *dp = NULL;
    }
    return err;
}

/* Stage s sends its activation to stage s + 1 and receives stage s - 1's,
 * both at once, in the pipeline group (rank there = stage). */
static int pipeline_step(cl_comm *pipe, const grid_shape *g, int world, size_t bytes,
                         unsigned char *out, unsigned char *in)
{
    int s = cl_rank(pipe);
    cl_fill(pipe, out, bytes, (unsigned long long)world);
    CL_TRY(coll_sendrecv(pipe, out, bytes, s + 1 < g->p ? s + 1 : -1, in, bytes,
                         s > 0 ? s - 1 : -1, 0));
    if (s == 0)
        return 0;
    return cl_verify(pipe, in, bytes, (unsigned long long)(world - g->d), "activation");
}

/* The data-parallel all-reduce: rank r's element i is (r + 1)(i % 7 + 1),
 * and every member ends with the sum over the group. */
static int dp_allreduce(cl_comm *dp, const grid_shape *g, int world, double *x, size_t count)
{
    for (size_t i = 0; x && i < count; i++)
        x[i] = (double)(world + 1) * (double)(i % 7 + 1);
    coll_red r = {CL_F64, CL_OP_SUM, sizeof(double)};
    CL_TRY(coll_ring_allreduce(dp, &r, x, count, 0));
    if (!x || !cl_checking(dp))
        return 0;
    int first = g->stage * g->d;
    double sum = 0; /* of (r + 1) over the group's ranks */
    for (int d = 0; d < g->d; d++)
        sum += first + d + 1;
    for (size_t i = 0; i < count; i++)
        if (x[i] != sum * (double)(i % 7 + 1))
            return cl_fail(dp, "gradient element %zu is %g, want %g", i, x[i],
                           sum * (double)(i % 7 + 1));
    return 0;
}

int grid(cl_comm *c, const cl_args *a)
{
    int k = cl_size(c), r = cl_rank(c);
    int d = a->group > 0 ? a->group : 2;
    if (d > k || k % d != 0) {
        cl_printf(c, "grid: %d ranks do not make data-parallel groups of %d (--group must "
                  "divide the ranks)", k, d);
        return CL_EINVAL;
    }
    grid_shape g = {.p = k / d, .d = d, .stage = r / d, .replica = r % d};
    cl_comm *pipe = NULL, *dp = NULL;
    CL_TRY(build_groups(c, &g, &pipe, &dp));
    cl_printf(c, "stage %d of replica %d: pipeline group rank %d of %d, data-parallel group "
              "rank %d of %d", g.stage, g.replica, cl_rank(pipe), cl_size(pipe), cl_rank(dp),
              cl_size(dp));
    unsigned char *out = cl_alloc(c, a->bytes), *in = cl_alloc(c, a->bytes);
    size_t count = a->bytes / sizeof(double);
    double *x = cl_alloc(c, count * sizeof(double));
    int err = pipeline_step(pipe, &g, r, a->bytes, out, in);
    if (!err)
        err = dp_allreduce(dp, &g, r, x, count);
    cl_group_free(pipe);
    cl_group_free(dp);
    return err;
}
