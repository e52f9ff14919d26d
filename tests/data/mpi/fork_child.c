/* Rank 1 forks, once, a child that waits for ever (with the rank's
 * descriptors and signal mask), then goes on. */
#include <unistd.h>

int pattern(cl_comm *c, const cl_args *a)
{
    (void)a;
    static int forked; /* per process */
    if (cl_rank(c) == 1 && !forked) {
        forked = 1;
        if (fork() == 0)
            for (;;)
                pause();
    }
    return cl_barrier(c);
}
