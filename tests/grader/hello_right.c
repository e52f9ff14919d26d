/* exercise: 1.1
 * expect: pass
 * shm: yes
 * kind: right, in another style - the line built first, printed once. */
#include <stdio.h>

#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    (void)a;
    char line[64];
    snprintf(line, sizeof line, "hello from rank %d of %d", cl_rank(c), cl_size(c));
    cl_printf(c, "%s", line);
    return 0;
}
