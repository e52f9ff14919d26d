/* reduce-linear: every rank posts a send of its n bytes to rank 0 at once,
 * and rank 0 posts K - 1 receives into a buffer each, then reduces them
 * one after another.  Alone on their links the messages take
 * alpha + n / B; sharing rank 0's one port they take alpha + (K - 1) n / B.
 * Then rank 0 alone reduces K - 1 buffers: (K - 1) n gamma more.  Rank 0
 * holds K buffers of n bytes.  Any K and n. */
#include "coll.h"

int reduce_linear(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c);
    coll_red r = coll_red_of(a);
    size_t count = coll_count(&r, a->bytes), bytes = count * r.size;
    void *x = cl_alloc(c, bytes);
    coll_reduce_init(c, &r, x, count);
    if (rank != 0)
        return cl_send(c, x, bytes, 0, 0);
    void **in = cl_array(c, (size_t)k - 1, sizeof *in);
    cl_request **q;
    if (!in)
        return CL_ENOMEM;
    CL_TRY(coll_requests(c, (size_t)k - 1, &q));
    for (int s = 1; s < k; s++) {
        in[s - 1] = cl_alloc(c, bytes);
        CL_TRY(cl_irecv(c, in[s - 1], bytes, s, 0, &q[s - 1]));
    }
    CL_TRY(cl_waitall(c, k - 1, q, NULL));
    for (int s = 1; s < k; s++)
        CL_TRY(coll_reduce(c, &r, x, in[s - 1], count));
    CL_TRY(coll_finish(c, &r, x, count, k));
    return coll_reduce_verify(c, &r, x, 0, count, "result at rank 0");
}
