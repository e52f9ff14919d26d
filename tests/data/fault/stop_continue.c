/* Measured runs only: rank 0 stops rank 1 (SIGSTOP) while rank 1 is
 * blocked in a receive, sends what it waits for and waits for its answer,
 * while a process it forked continues rank 1 (SIGCONT) 3 s later: longer
 * than the deadlock timeout, every rank blocked meanwhile.  Rank 1, once
 * continued, spends 300 ms in its SIGCONT handler before it goes on: it
 * runs, no longer stopped, yet nothing has moved.  No deadlock: rank 1
 * answers. */
#include <signal.h>
#include <time.h>

/* POSIX, hidden by -std=c11. */
int kill(int pid, int sig);
int getpid(void);
int fork(void);
void _exit(int status);
int nanosleep(const struct timespec *want, struct timespec *left);

static void dawdle(int sig)
{
    (void)sig;
    struct timespec t = {0, 300000000L};
    nanosleep(&t, NULL);
}

int pattern(cl_comm *c, const cl_args *a)
{
    (void)a;
    int pid = getpid(), x = 0;
    if (cl_rank(c) == 1) {
        signal(SIGCONT, dawdle);
        cl_send(c, &pid, sizeof pid, 0, 0);
        cl_recv(c, &x, sizeof x, 0, 1, NULL);
        return cl_send(c, &x, sizeof x, 0, 2);
    }
    cl_recv(c, &pid, sizeof pid, 1, 0, NULL);
    cl_compute(c, 1.0); /* rank 1 is blocked by now */
    kill(pid, SIGSTOP);
    if (fork() == 0) {
        struct timespec t = {3, 0};
        nanosleep(&t, NULL);
        kill(pid, SIGCONT);
        _exit(0);
    }
    cl_send(c, &x, sizeof x, 1, 1);
    return cl_recv(c, &x, sizeof x, 1, 2, NULL);
}
