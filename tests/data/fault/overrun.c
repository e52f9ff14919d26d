/* Rank 1 writes 4 KiB past the end of its cl_alloc block (a memset of the
 * wrong length), after rank 0 printed a line. */
#include <string.h>

int pattern(cl_comm *c, const cl_args *a)
{
    unsigned char *buf = cl_alloc(c, a->bytes);
    if (cl_rank(c) == 0)
        cl_printf(c, "before the overrun");
    if (cl_rank(c) == 1 && buf)
        memset(buf, 0x5a, a->bytes + 4096);
    return cl_barrier(c);
}
