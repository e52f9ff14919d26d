/* Exercise 4.6: a grid of P stages x D replicas (D = --group), rank
 * r = s D + d.  Every rank builds every group with cl_group, in the same
 * order: the pipeline group of each replica (d, D + d, 2D + d, ...) and
 * the data-parallel group of each stage (sD .. sD + D - 1), keeping the
 * two it is in.  Stage s sends its activation (cl_fill with its world
 * rank) to stage s + 1 inside the pipeline group; then each data-parallel
 * group all-reduces its gradients by sending everything to everyone at
 * once and adding what arrives. */
#include "commlab.h"

#define MAX_RANKS 64

/* Builds every group; *pipe and *dp get the two this rank is in. */
static int build_groups(cl_comm *c, int p, int d, cl_comm **pipe, cl_comm **dp)
{
    int members[MAX_RANKS];
    cl_comm *mine;
    for (int rep = 0; rep < d; rep++) {
        for (int s = 0; s < p; s++)
            members[s] = s * d + rep;
        CL_TRY(cl_group(c, members, p, &mine));
        if (mine)
            *pipe = mine;
    }
    for (int s = 0; s < p; s++) {
        for (int rep = 0; rep < d; rep++)
            members[rep] = s * d + rep;
        CL_TRY(cl_group(c, members, d, &mine));
        if (mine)
            *dp = mine;
    }
    return 0;
}

/* Every rank of g sends x to every other and adds what the others sent. */
static int allreduce(cl_comm *g, double *x, double *in, size_t count)
{
    int me = cl_rank(g), k = cl_size(g), n = 0;
    size_t bytes = count * sizeof(double);
    cl_request *r[2 * MAX_RANKS];
    for (int q = 0; q < k; q++)
        if (q != me)
            CL_TRY(cl_irecv(g, in ? in + (size_t)q * count : NULL, bytes, q, 0, &r[n++]));
    for (int q = 0; q < k; q++)
        if (q != me)
            CL_TRY(cl_isend(g, x, bytes, q, 0, &r[n++]));
    CL_TRY(cl_waitall(g, n, r, NULL));
    for (int q = 0; x && q < k; q++)
        for (size_t i = 0; q != me && i < count; i++)
            x[i] += in[(size_t)q * count + i];
    return 0;
}

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c), d = a->group > 0 ? a->group : 2;
    if (k % d != 0 || k > MAX_RANKS)
        return cl_fail(c, "%d ranks do not make groups of %d (at most %d ranks)", k, d,
                       MAX_RANKS);
    int p = k / d;
    cl_comm *pipe = NULL, *dp = NULL;
    CL_TRY(build_groups(c, p, d, &pipe, &dp));

    unsigned char *act = cl_alloc(c, a->bytes), *got = cl_alloc(c, a->bytes);
    int s = cl_rank(pipe);
    cl_fill(c, act, a->bytes, (unsigned long long)rank);
    if (s + 1 < p)
        CL_TRY(cl_send(pipe, act, a->bytes, s + 1, 0));
    if (s > 0)
        CL_TRY(cl_recv(pipe, got, a->bytes, s - 1, 0, NULL));

    size_t count = a->bytes / sizeof(double);
    double *x = cl_alloc(c, count * sizeof(double));
    double *in = cl_alloc(c, (size_t)d * count * sizeof(double));
    for (size_t i = 0; x && i < count; i++)
        x[i] = (double)(rank + 1) * (double)(i % 7 + 1);
    CL_TRY(allreduce(dp, x, in, count));
    cl_group_free(pipe);
    cl_group_free(dp);
    return 0;
}
