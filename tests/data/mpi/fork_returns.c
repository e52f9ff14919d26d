/* Rank 1 forks, once, and the child goes on as if it were the rank: it
 * returns into commlab's barrier. */
#include <unistd.h>

int pattern(cl_comm *c, const cl_args *a)
{
    (void)a;
    static int forked; /* per process */
    if (cl_rank(c) == 1 && !forked) {
        forked = 1;
        fork();
    }
    return cl_barrier(c);
}
