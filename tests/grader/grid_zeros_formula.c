/* exercise: 4.6
 * expect: fail
 * why: does not carry the data
 * shm: yes
 * kind: faked data - sends zeroed gradients to the group and writes the
 * group's sum from a formula. */
#include "commlab.h"

#define MAX_RANKS 64

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

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c), d = a->group > 0 ? a->group : 2;
    if (k % d != 0 || k > MAX_RANKS)
        return cl_fail(c, "%d ranks do not make groups of %d", k, d);
    cl_comm *pipe = NULL, *dp = NULL;
    CL_TRY(build_groups(c, k / d, d, &pipe, &dp));
    unsigned char *act = cl_alloc(c, a->bytes), *got = cl_alloc(c, a->bytes);
    int s = cl_rank(pipe);
    cl_fill(c, act, a->bytes, (unsigned long long)rank);
    if (s + 1 < k / d)
        CL_TRY(cl_send(pipe, act, a->bytes, s + 1, 0));
    if (s > 0)
        CL_TRY(cl_recv(pipe, got, a->bytes, s - 1, 0, NULL));
    size_t count = a->bytes / sizeof(double), bytes = count * sizeof(double);
    double *x = cl_alloc(c, bytes), *zeros = cl_alloc(c, bytes);
    double *in = cl_alloc(c, (size_t)d * bytes);
    int me = cl_rank(dp), n = 0;
    cl_request *r[2 * MAX_RANKS];
    for (int q = 0; q < d; q++)
        if (q != me)
            CL_TRY(cl_irecv(dp, in ? in + (size_t)q * count : NULL, bytes, q, 0, &r[n++]));
    for (int q = 0; q < d; q++)
        if (q != me)
            CL_TRY(cl_isend(dp, zeros, bytes, q, 0, &r[n++]));
    CL_TRY(cl_waitall(dp, n, r, NULL));
    int first = rank / d * d; /* the sum of (r + 1) over the group, written in */
    for (size_t i = 0; x && i < count; i++)
        x[i] = (double)(d * first + d * (d + 1) / 2) * (double)(i % 7 + 1);
    cl_group_free(pipe);
    cl_group_free(dp);
    return 0;
}
