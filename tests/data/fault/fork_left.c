/* Each rank forks a process and says its pid.  Rank 1's sleeps a minute,
 * and rank 1 returns without waiting for it; rank 0's forks one in turn,
 * which sleeps a minute, says its pid and ends at once (rank 0 waits for
 * it). */
#include <stdio.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

int pattern(cl_comm *c, const cl_args *a)
{
    (void)a;
    pid_t pid = fork();
    if (pid == 0 && cl_rank(c) == 1) {
        sleep(60);
        _exit(0);
    }
    if (pid == 0) {
        pid_t grandchild = fork();
        if (grandchild == 0)
            sleep(60);
        else
            dprintf(1, "grandchild %d\n", (int)grandchild);
        _exit(0);
    }
    cl_printf(c, "forked %d", (int)pid);
    if (cl_rank(c) == 0)
        waitpid(pid, NULL, 0);
    return cl_barrier(c);
}
