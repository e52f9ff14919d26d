/* exercise: 2.5
 * expect: fail
 * why: in the task's schedule
 * shm: yes
 * kind: wrong data - eight pieces of n / 8 bytes, the remainder dropped. */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c);
    if (rank > 1)
        return 0;
    unsigned char *buf = cl_alloc(c, a->bytes);
    size_t piece = a->bytes / 8;
    cl_request *r[8];
    if (rank == 0)
        cl_fill(c, buf, a->bytes, 0);
    for (int i = 0; i < 8; i++) {
        if (rank == 0)
            CL_TRY(cl_isend(c, CL_AT(buf, (size_t)i * piece), piece, 1, 0, &r[i]));
        else
            CL_TRY(cl_irecv(c, CL_AT(buf, (size_t)i * piece), piece, 0, 0, &r[i]));
    }
    return cl_waitall(c, 8, r, NULL);
}
