/* Rank 0 sends from an address where nothing is mapped. */
#include <stdint.h>

int pattern(cl_comm *c, const cl_args *a)
{
    (void)a;
    char buf[64];
    if (cl_rank(c) == 0)
        return cl_send(c, (const void *)(uintptr_t)16, sizeof buf, 1, 0);
    return cl_recv(c, buf, sizeof buf, 0, 0, NULL);
}
