/* exercise: 1.1
 * expect: fail
 * why: does not print 'hello from rank 1
 * kind: printing instead of communicating - rank 0 prints every rank's
 * line itself, with embedded newlines. */
#include <stdio.h>
#include <string.h>

#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    (void)a;
    if (cl_rank(c) != 0)
        return 0;
    char text[400] = "";
    size_t used = 0;
    for (int r = 0; r < cl_size(c) && used < sizeof text; r++)
        used += (size_t)snprintf(text + used, sizeof text - used, "%shello from rank %d of %d",
                                 r ? "\nrank 1: " : "", r, cl_size(c));
    for (char *p = text; (p = strstr(p, "rank 1: hello from rank ")) != NULL; p++)
        p[5] = (char)('0' + (p[24] - '0')); /* each forged line names its own rank */
    cl_printf(c, "%s", text);
    return 0;
}
