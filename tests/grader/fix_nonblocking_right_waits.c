/* exercise: 5.2
 * expect: pass
 * shm: yes
 * kind: right, in another style - two cl_wait calls, send first. */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), peer = 1 - rank;
    char *mine = cl_alloc(c, a->bytes), *theirs = cl_alloc(c, a->bytes);
    cl_fill(c, mine, a->bytes, (unsigned long long)rank);
    cl_request *s = NULL, *r = NULL;
    CL_TRY(cl_irecv(c, theirs, a->bytes, peer, 0, &r));
    CL_TRY(cl_isend(c, mine, a->bytes, peer, 0, &s));
    CL_TRY(cl_wait(c, &s, NULL));
    CL_TRY(cl_wait(c, &r, NULL));
    return 0;
}
