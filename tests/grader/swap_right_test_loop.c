/* exercise: 2.2
 * expect: pass
 * shm: yes
 * kind: right, in another style - polls both requests with cl_test, and
 * swaps from one buffer pair chosen by parity. */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    int me = cl_rank(c);
    int other = me ^ 1;
    if (other >= cl_size(c))
        return 0;
    unsigned char *bufs[2] = {cl_alloc(c, a->bytes), cl_alloc(c, a->bytes)};
    unsigned char *mine = bufs[me & 1], *theirs = bufs[!(me & 1)];
    cl_fill(c, mine, a->bytes, (unsigned long long)me);
    cl_request *send, *recv;
    CL_TRY(cl_isend(c, mine, a->bytes, other, 0, &send));
    CL_TRY(cl_irecv(c, theirs, a->bytes, other, 0, &recv));
    bool sent = false, got = false;
    while (!sent || !got) {
        if (!sent)
            CL_TRY(cl_test(c, &send, &sent, NULL));
        if (!got)
            CL_TRY(cl_test(c, &recv, &got, NULL));
    }
    return cl_verify(c, theirs, a->bytes, (unsigned long long)other, "what arrived");
}
