/* tags_and_groups.c - what the mpi backend maps onto MPI's own matching
 * (run it on 4 ranks or more): messages to oneself, a wildcard receive
 * that takes one message from every rank (its source and size from the
 * status), a wildcard tag, a message too large for its receive (CL_ETRUNC,
 * the rank carries on), and a subgroup of the odd ranks whose ring must
 * not see the world's messages of the same tag.  Every check passes. */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    int me = cl_rank(c), n = cl_size(c);
    unsigned char *out = cl_alloc(c, a->bytes), *in = cl_alloc(c, a->bytes);
    cl_request *r;
    cl_status st;
    if (n < 4)
        return cl_fail(c, "tags_and_groups.c runs on 4 ranks or more, not %d", n);

    /* To oneself: the receive posted after the send. */
    cl_fill(c, out, a->bytes, 100 + (unsigned)me);
    CL_TRY(cl_isend(c, out, a->bytes, me, 3, &r));
    CL_TRY(cl_recv(c, in, a->bytes, me, 3, NULL));
    CL_TRY(cl_wait(c, &r, NULL));
    CL_TRY(cl_verify(c, in, a->bytes, 100 + (unsigned)me, "a message to oneself"));

    /* Everyone sends rank 0 me + 1 bytes; rank 0 takes them as they come. */
    unsigned char x[64] = {0};
    x[0] = (unsigned char)(me + 1);
    CL_TRY(cl_isend(c, x, (size_t)me + 1, 0, 5, &r));
    if (me == 0) {
        unsigned seen = 0;
        for (int i = 0; i < n; i++) {
            unsigned char y[64] = {0};
            CL_TRY(cl_recv(c, y, sizeof y, CL_ANY_SOURCE, CL_ANY_TAG, &st));
            if (y[0] != st.source + 1 || st.bytes != (size_t)st.source + 1 || st.tag != 5 ||
                (seen & (1u << st.source)))
                return cl_fail(c, "wildcard receive %d: %d from rank %d, %zu bytes, tag %d", i,
                               y[0], st.source, st.bytes, st.tag);
            seen |= 1u << st.source;
        }
    }
    CL_TRY(cl_wait(c, &r, NULL));
    CL_TRY(cl_barrier(c)); /* no later message may meet that wildcard */

    /* Too large for its receive: the receive fails, nothing else does. */
    if (me == 1)
        CL_TRY(cl_send(c, x, 8, 2, 6));
    if (me == 2 && cl_recv(c, x, 4, 1, 6, NULL) != CL_ETRUNC)
        return cl_fail(c, "an 8-byte message into 4 bytes did not fail with CL_ETRUNC");

    /* The odd ranks' ring, tag 0, while every rank sends its right
     * neighbour in the world with tag 0 too. */
    int odd[32], k = 0;
    for (int i = 1; i < n && k < 32; i += 2)
        odd[k++] = i;
    cl_comm *g;
    CL_TRY(cl_group(c, odd, k, &g));
    cl_request *w[2];
    unsigned char wout = (unsigned char)(200 + me), win = 0;
    CL_TRY(cl_irecv(c, &win, 1, (me + n - 1) % n, 0, &w[0]));
    CL_TRY(cl_isend(c, &wout, 1, (me + 1) % n, 0, &w[1]));
    if (g) {
        int gr = cl_rank(g), gn = cl_size(g);
        unsigned char gout = (unsigned char)(10 + gr), gin = 0;
        cl_request *q[2];
        CL_TRY(cl_irecv(g, &gin, 1, (gr + gn - 1) % gn, 0, &q[0]));
        CL_TRY(cl_isend(g, &gout, 1, (gr + 1) % gn, 0, &q[1]));
        CL_TRY(cl_waitall(g, 2, q, NULL));
        cl_group_free(g);
        if (gin != 10 + (gr + gn - 1) % gn)
            return cl_fail(c, "the group's ring: got %d", gin);
    }
    CL_TRY(cl_waitall(c, 2, w, NULL));
    if (win != 200 + (me + n - 1) % n)
        return cl_fail(c, "the world's ring: got %d", win);
    return 0;
}
