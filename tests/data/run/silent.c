/* silent.c - a pattern that sends nothing: its rows show no bandwidth. */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    (void)c;
    (void)a;
    return 0;
}
