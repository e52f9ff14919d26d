/* Measured runs only: rank 1 stops itself (SIGSTOP) before it sends. */
#include <signal.h>

int pattern(cl_comm *c, const cl_args *a)
{
    (void)a;
    int x = 0;
    if (cl_rank(c) == 1) {
        raise(SIGSTOP);
        return cl_send(c, &x, sizeof x, 0, 0);
    }
    return cl_recv(c, &x, sizeof x, 1, 0, NULL);
}
