/* allreduce-tree: a binary tree (rank r's children are 2r + 1 and
 * 2r + 2): every rank receives both children's partial sums at once, adds
 * its own and sends up; then rank 0's total comes down the same tree, each
 * rank sending to both children at once.  The tree is floor(log2 K)
 * levels deep, so alone on their links the messages take
 * 2 floor(log2 K)(alpha + n / B).  But a parent's one port takes both
 * children's n bytes at each level, going up and going down: where ports
 * are shared (a --tier run, max-min) each level costs alpha + 2 n / B.
 * Any K and n. */
#include "coll.h"

int allreduce_tree(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c);
    size_t count = coll_count(a->bytes), bytes = count * sizeof(double);
    double *x = cl_alloc(c, bytes), *in[2] = {cl_alloc(c, bytes), cl_alloc(c, bytes)};
    coll_reduce_init(c, x, count);
    cl_request *r[2] = {NULL, NULL};
    for (int i = 0; i < 2; i++)
        if (2 * rank + 1 + i < k)
            CL_TRY(cl_irecv(c, in[i], bytes, 2 * rank + 1 + i, 0, &r[i]));
    CL_TRY(cl_waitall(c, 2, r, NULL));
    for (int i = 0; i < 2; i++)
        if (2 * rank + 1 + i < k)
            coll_add(x, in[i], count);
    if (rank > 0) {
        CL_TRY(cl_send(c, x, bytes, (rank - 1) / 2, 0));
        CL_TRY(cl_recv(c, x, bytes, (rank - 1) / 2, 1, NULL));
    }
    for (int i = 0; i < 2; i++)
        if (2 * rank + 1 + i < k)
            CL_TRY(cl_isend(c, x, bytes, 2 * rank + 1 + i, 1, &r[i]));
    CL_TRY(cl_waitall(c, 2, r, NULL));
    return coll_reduce_verify(c, x, 0, count, "sum");
}
