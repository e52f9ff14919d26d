/* incast.c - every other rank sends one buffer to rank 0 at once, as
 * workers push their gradients to one parameter server.  On a switch the
 * senders' own ports are idle most of the time: what limits them is rank
 * 0's one port out of the switch, which they share, so with K senders an
 * iteration takes about K times one message's time (chapter 03, "When
 * messages share a link"). */
#include "commlab.h"

int incast(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), n = cl_size(c);
    if (rank != 0) {
        unsigned char *out = cl_alloc(c, a->bytes);
        cl_fill(c, out, a->bytes, 700 + (unsigned long long)rank);
        return cl_send(c, out, a->bytes, 0, 0);
    }
    /* A buffer and a request per sender: arrays from cl_array, which (unlike
     * the rank's small stack) hold any number of senders. */
    unsigned char **in = cl_array(c, (size_t)n - 1, sizeof *in);
    cl_request **r = cl_array(c, (size_t)n - 1, sizeof *r);
    if (!in || !r)
        return CL_ENOMEM;
    for (int s = 1; s < n; s++) {
        in[s - 1] = cl_alloc(c, a->bytes);
        CL_TRY(cl_irecv(c, in[s - 1], a->bytes, s, 0, &r[s - 1]));
    }
    CL_TRY(cl_waitall(c, n - 1, r, NULL));
    for (int s = 1; s < n; s++)
        CL_TRY(cl_verify(c, in[s - 1], a->bytes, 700 + (unsigned long long)s,
                         "a sender's buffer"));
    return 0;
}
