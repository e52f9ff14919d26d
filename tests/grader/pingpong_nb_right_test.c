/* exercise: 2.3
 * expect: pass
 * shm: yes
 * kind: right, in another style - separate buffers for ping and pong, a
 * tag of its own, each request completed by cl_wait in a helper. */
#include "commlab.h"

static int finish(cl_comm *c, cl_request **r)
{
    cl_status st;
    return cl_wait(c, r, &st);
}

int pattern(cl_comm *c, const cl_args *a)
{
    int me = cl_rank(c);
    if (me >= 2)
        return 0;
    void *ping = cl_alloc(c, a->bytes), *pong = cl_alloc(c, a->bytes);
    cl_request *r = NULL;
    if (me == 0) {
        cl_fill(c, ping, a->bytes, 0);
        CL_TRY(cl_isend(c, ping, a->bytes, 1, 7, &r));
        CL_TRY(finish(c, &r));
        CL_TRY(cl_irecv(c, pong, a->bytes, 1, 7, &r));
        return finish(c, &r);
    }
    CL_TRY(cl_irecv(c, ping, a->bytes, 0, 7, &r));
    CL_TRY(finish(c, &r));
    cl_fill(c, pong, a->bytes, 1);
    CL_TRY(cl_isend(c, pong, a->bytes, 0, 7, &r));
    return finish(c, &r);
}
