/* bench_mpi.c - `commlab bench mpi`: commlab's ping-pong over the MPI
 * library (`run pingpong --backend mpi`, which starts itself under mpirun)
 * beside the library's own ping-pong (build/mpi_pingpong, OSU's method),
 * so the cost of commlab's layer over MPI shows.  Figures only. */
#ifdef CL_HAVE_MPI
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/bench.h"
#include "cli/cli.h"
#include "real/mpi/mpib.h"

/* Runs the shell command cmd, its output passed through; its status. */
static int shell(const char *cmd)
{
    fflush(stdout);
    int st = system(cmd);
    return st == -1 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int bench_mpi(bool quick)
{
    char exe[PATH_MAX], lib[256];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0)
        return cli_error("bench mpi: cannot find this program");
    exe[len] = 0;
    cl_diag d = {{0}};
    if (mpib_library(lib, sizeof lib, &d))
        return cli_diag(&d, CLI_EXIT_FAILED);
    const char *sizes = quick ? "8,64KiB,1MiB" : "8:4MiB:x8";
    printf("mpi: commlab's pingpong over %s (one-way time: round trip / 2), then the "
           "library's own ping-pong\n\n", lib);
    char cmd[PATH_MAX + 200];
    snprintf(cmd, sizeof cmd, "'%s' run pingpong --backend mpi --sizes %s --iters %d", exe,
             sizes, quick ? 20 : 200);
    int rc = shell(cmd);
    if (rc != 0)
        return rc < 0 ? CLI_EXIT_FAILED : rc;
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", exe);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    char prog[PATH_MAX + 20];
    snprintf(prog, sizeof prog, "%s/mpi_pingpong", dir);
    printf("\n");
    if (access(prog, X_OK) != 0) {
        printf("the library's ping-pong: skipped, %s is missing (`make bench` builds it)\n",
               prog);
        return CLI_EXIT_OK;
    }
    printf("the library's ping-pong (%s, blocking MPI_Send/MPI_Recv):\n", prog);
    snprintf(cmd, sizeof cmd, "mpirun %s--oversubscribe -q -np 2 '%s' 8 %d %d",
             geteuid() == 0 ? "--allow-run-as-root " : "", prog, quick ? 1 << 20 : 4 << 20,
             quick ? 3 : 7);
    rc = shell(cmd);
    return rc == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILED;
}
#endif
