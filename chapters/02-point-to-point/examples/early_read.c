/* early_read.c - pitfall 3: reading a receive buffer before its wait.
 * Rank 1 posts an irecv and looks at the buffer at once: the message is
 * still on its way (rank 0 computes 1 ms first), so what it reads is not
 * the message.  Only after cl_wait do the bytes belong to the program.
 * The value read early is printed in hexadecimal: under --debug a pending
 * receive's buffer holds the poison byte 0xdb, which shows at a glance. */
#include <string.h>

#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    (void)a;
    long long x = 0;
    if (cl_rank(c) == 0) {
        x = 42;
        CL_TRY(cl_compute(c, 1e-3));
        CL_TRY(cl_send(c, &x, sizeof x, 1, 0));
    } else if (cl_rank(c) == 1) {
        cl_request *r;
        CL_TRY(cl_irecv(c, &x, sizeof x, 0, 0, &r));
        unsigned long long early;
        memcpy(&early, &x, sizeof x); /* the bug: the receive is not complete */
        CL_TRY(cl_wait(c, &r, NULL));
        cl_printf(c, "read %#llx before the wait, %lld after it", early, x);
    }
    return 0;
}
