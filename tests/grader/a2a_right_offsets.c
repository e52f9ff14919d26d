/* exercise: 4.10
 * expect: pass
 * shm: yes
 */
/* Exercise 4.10, right in another style: one table of block offsets made
 * first, the step's peers as distances, each request waited on alone
 * (send first), and every slot checked in one loop that also covers the
 * rank's own block. */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    int me = cl_rank(c), k = cl_size(c);
    size_t n = a->bytes;
    size_t *off = cl_array(c, (size_t)k + 1, sizeof *off);
    if (!off)
        return CL_ENOMEM;
    for (int d = 0; d <= k; d++)
        off[d] = (size_t)d * n / (size_t)k;
    size_t slot = off[me + 1] - off[me];
    unsigned char *send = cl_alloc(c, n), *recv = cl_alloc(c, (size_t)k * slot);
    for (int d = 0; d < k; d++)
        cl_fill(c, CL_AT(send, off[d]), off[d + 1] - off[d], (unsigned long long)(1000 * me + d));
    for (int dist = 1; dist < k; dist++) {
        int to = (me + dist) % k, from = (me + k - dist) % k;
        cl_request *s, *r;
        CL_TRY(cl_irecv(c, CL_AT(recv, (size_t)from * slot), slot, from, 0, &r));
        CL_TRY(cl_isend(c, CL_AT(send, off[to]), off[to + 1] - off[to], to, 0, &s));
        CL_TRY(cl_wait(c, &s, NULL));
        CL_TRY(cl_wait(c, &r, NULL));
    }
    for (int s = 0; s < k; s++)
        CL_TRY(cl_verify(c, s == me ? CL_AT(send, off[me]) : CL_AT(recv, (size_t)s * slot), slot,
                         (unsigned long long)(1000 * s + me), "block"));
    return 0;
}
