/* legal.c - buffers used by the rules, in the ways --debug must accept
 * (run it on 3 ranks or more): one buffer sent to every other rank at once;
 * a received buffer sent on once its receive completed; a buffer refilled
 * after its wait and sent again; two receives into the two halves of one
 * buffer, one completed by polling cl_test; a short message into a larger
 * buffer (the rest keeps its bytes); a subgroup's swap.  Every check
 * passes, with and without --debug. */
#include <string.h>

#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    size_t n = a->bytes;
    int me = cl_rank(c), size = cl_size(c);
    unsigned char *buf = cl_alloc(c, n), *two = cl_alloc(c, 2 * n), *ref = cl_alloc(c, 2 * n);
    cl_request *r[64];
    cl_status st;
    if (size < 3 || size > 64)
        return cl_fail(c, "legal.c runs on 3 to 64 ranks, not %d", size);

    /* One buffer to every other rank at once: nobody writes it. */
    if (me == 0) {
        cl_fill(c, buf, n, 1);
        for (int p = 1; p < size; p++)
            CL_TRY(cl_isend(c, buf, n, p, 1, &r[p - 1]));
        CL_TRY(cl_waitall(c, size - 1, r, NULL));
    } else {
        CL_TRY(cl_irecv(c, buf, n, 0, 1, &r[0]));
        CL_TRY(cl_wait(c, &r[0], NULL));
        CL_TRY(cl_verify(c, buf, n, 1, "the buffer sent to everyone"));
    }

    /* Rank 1 sends on what it received, then refills the buffer after each
     * wait; rank 0 takes the two refills into the halves of one buffer. */
    if (me == 1) {
        CL_TRY(cl_send(c, buf, n, 0, 2));
        cl_fill(c, buf, n, 3);
        CL_TRY(cl_isend(c, buf, n, 0, 3, &r[0]));
        CL_TRY(cl_wait(c, &r[0], NULL));
        cl_fill(c, buf, n, 4);
        CL_TRY(cl_isend(c, buf, n, 0, 4, &r[0]));
        CL_TRY(cl_wait(c, &r[0], NULL));
    } else if (me == 0) {
        CL_TRY(cl_recv(c, buf, n, 1, 2, NULL));
        CL_TRY(cl_verify(c, buf, n, 1, "the buffer sent on"));
        CL_TRY(cl_irecv(c, two, n, 1, 3, &r[0]));
        CL_TRY(cl_irecv(c, CL_AT(two, n), n, 1, 4, &r[1]));
        bool done = false;
        while (!done)
            CL_TRY(cl_test(c, &r[0], &done, NULL));
        CL_TRY(cl_wait(c, &r[1], NULL));
        CL_TRY(cl_verify(c, two, n, 3, "the first half"));
        CL_TRY(cl_verify(c, CL_AT(two, n), n, 4, "the second half"));
    }

    /* A message of n bytes into a buffer of 2n: the second half keeps the
     * bytes it held before the receive. */
    if (me == 1) {
        cl_fill(c, buf, n, 6);
        CL_TRY(cl_send(c, buf, n, 0, 5));
    } else if (me == 0) {
        cl_fill(c, two, 2 * n, 5);
        cl_fill(c, ref, 2 * n, 5);
        CL_TRY(cl_irecv(c, two, 2 * n, 1, 5, &r[0]));
        CL_TRY(cl_wait(c, &r[0], &st));
        if (st.bytes != n)
            return cl_fail(c, "the short message has %zu bytes, expected %zu", st.bytes, n);
        CL_TRY(cl_verify(c, two, n, 6, "the short message"));
        if (two && cl_checking(c) && memcmp(two + n, ref + n, n) != 0)
            return cl_fail(c, "the bytes past the short message changed");
    }

    /* Ranks 0 and 1 swap buffers in a subgroup of their own. */
    int pair[2] = {0, 1};
    cl_comm *g;
    CL_TRY(cl_group(c, pair, 2, &g));
    if (g) {
        int peer = 1 - cl_rank(g);
        cl_request *q[2];
        cl_fill(c, buf, n, 10 + (unsigned)cl_rank(g));
        int err = cl_irecv(g, two, n, peer, 0, &q[0]);
        if (!err)
            err = cl_isend(g, buf, n, peer, 0, &q[1]);
        if (!err)
            err = cl_waitall(g, 2, q, NULL);
        cl_group_free(g);
        CL_TRY(err);
        CL_TRY(cl_verify(c, two, n, 10 + (unsigned)peer, "the subgroup's swap"));
    }
    return 0;
}
