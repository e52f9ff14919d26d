/* reduce-linear: every rank posts a send of its n bytes to rank 0 at once,
 * and rank 0 posts K - 1 receives into a buffer each, then adds.  Alone on
 * their links the messages take alpha + n / B; sharing rank 0's one port
 * they take alpha + (K - 1) n / B.  Rank 0 holds K buffers of n bytes.
 * Any K and n. */
#include "coll.h"

int reduce_linear(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c);
    size_t count = coll_count(a->bytes), bytes = count * sizeof(double);
    double *x = cl_alloc(c, bytes);
    coll_reduce_init(c, x, count);
    if (rank != 0)
        return cl_send(c, x, bytes, 0, 0);
    double **in = cl_array(c, (size_t)k - 1, sizeof *in);
    cl_request **r;
    if (!in)
        return CL_ENOMEM;
    CL_TRY(coll_requests(c, (size_t)k - 1, &r));
    for (int s = 1; s < k; s++) {
        in[s - 1] = cl_alloc(c, bytes);
        CL_TRY(cl_irecv(c, in[s - 1], bytes, s, 0, &r[s - 1]));
    }
    CL_TRY(cl_waitall(c, k - 1, r, NULL));
    for (int s = 1; s < k; s++)
        coll_add(x, in[s - 1], count);
    return coll_reduce_verify(c, x, 0, count, "sum at rank 0");
}
