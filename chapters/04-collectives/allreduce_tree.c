/* allreduce-tree: a binary tree (rank r's children are 2r + 1 and
 * 2r + 2): every rank receives both children's partial results at once,
 * reduces them into its own and sends up; then rank 0's result comes down
 * the same tree, each rank sending to both children at once.  The tree is
 * D = floor(log2 K) levels deep, so alone on their links the messages take
 * 2 D (alpha + n / B), and each parent on the way up reduces what its
 * children sent, n gamma a child: up to 2 D n gamma more.  But a parent's
 * one port takes both children's n bytes at each level, going up and
 * going down: where ports are shared (a --tier run, max-min) each level
 * costs alpha + 2 n / B.  Any K and n. */
#include "coll.h"

int allreduce_tree(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c);
    coll_red r = coll_red_of(a);
    size_t count = coll_count(&r, a->bytes), bytes = count * r.size;
    void *x = cl_alloc(c, bytes), *in[2] = {cl_alloc(c, bytes), cl_alloc(c, bytes)};
    coll_reduce_init(c, &r, x, count);
    cl_request *q[2] = {NULL, NULL};
    for (int i = 0; i < 2; i++)
        if (2 * rank + 1 + i < k)
            CL_TRY(cl_irecv(c, in[i], bytes, 2 * rank + 1 + i, 0, &q[i]));
    CL_TRY(cl_waitall(c, 2, q, NULL));
    for (int i = 0; i < 2; i++)
        if (2 * rank + 1 + i < k)
            CL_TRY(coll_reduce(c, &r, x, in[i], count));
    if (rank > 0) {
        CL_TRY(cl_send(c, x, bytes, (rank - 1) / 2, 0));
        CL_TRY(cl_recv(c, x, bytes, (rank - 1) / 2, 1, NULL));
    } else {
        CL_TRY(coll_finish(c, &r, x, count, k));
    }
    for (int i = 0; i < 2; i++)
        if (2 * rank + 1 + i < k)
            CL_TRY(cl_isend(c, x, bytes, 2 * rank + 1 + i, 1, &q[i]));
    CL_TRY(cl_waitall(c, 2, q, NULL));
    return coll_reduce_verify(c, &r, x, 0, count, "result");
}
