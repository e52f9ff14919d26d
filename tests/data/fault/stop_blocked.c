/* Measured runs only: rank 0 stops rank 1 (SIGSTOP) while rank 1 is
 * blocked in a receive, then sends what it waits for and waits for its
 * answer.  Every rank looks blocked, yet it is no deadlock: rank 1 would
 * answer if it were continued. */
#include <signal.h>

/* POSIX, hidden by -std=c11. */
int kill(int pid, int sig);
int getpid(void);

int pattern(cl_comm *c, const cl_args *a)
{
    (void)a;
    int pid = getpid(), x = 0;
    if (cl_rank(c) == 1) {
        cl_send(c, &pid, sizeof pid, 0, 0);
        cl_recv(c, &x, sizeof x, 0, 1, NULL);
        return cl_send(c, &x, sizeof x, 0, 2);
    }
    cl_recv(c, &pid, sizeof pid, 1, 0, NULL);
    cl_compute(c, 0.3); /* rank 1 is blocked by now */
    kill(pid, SIGSTOP);
    cl_send(c, &x, sizeof x, 1, 1);
    return cl_recv(c, &x, sizeof x, 1, 2, NULL);
}
