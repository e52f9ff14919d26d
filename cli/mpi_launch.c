/* mpi_launch.c - `run --backend mpi` as an MPI job (see mpi_launch.h). */
#ifdef CL_HAVE_MPI
#include "cli/mpi_launch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "real/mpi/mpib.h"

int mpi_launch_argv(const char **out, int cap, const char *exe, int n, bool as_root,
                    bool oversubscribe, int argc, char **argv)
{
    static char np[16];
    int k = 0;
    if (cap < argc + 9)
        return -1;
    snprintf(np, sizeof np, "%d", n);
    out[k++] = "mpirun";
    if (as_root)
        out[k++] = "--allow-run-as-root";
    if (oversubscribe)
        out[k++] = "--oversubscribe";
    out[k++] = "-q"; /* its banners: commlab's rank 0 reports the run */
    out[k++] = "-np";
    out[k++] = np;
    out[k++] = exe;
    for (int i = 0; i < argc; i++)
        out[k++] = argv[i];
    out[k] = NULL;
    return k;
}

/* Blocks the signals a waiting parent passes on (and SIGCHLD) into *set;
 * the old mask into *old. */
static void block_signals(sigset_t *set, sigset_t *old)
{
    sigemptyset(set);
    sigaddset(set, SIGCHLD);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGHUP);
    sigprocmask(SIG_BLOCK, set, old);
}

/* Waits for child pid, passing SIGINT, SIGTERM and SIGHUP on to it; its
 * wait status. */
static int wait_passing_signals(pid_t pid, const sigset_t *set)
{
    for (;;) {
        int sig = sigwaitinfo(set, NULL);
        if (sig > 0 && sig != SIGCHLD) {
            kill(pid, sig);
            continue;
        }
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid)
            return st;
    }
}

/* Outside a launcher: the same command under mpirun, and its exit status.
 * mpirun gets what stops this process (and SIGTERM if it dies), and stops
 * the job. */
static int relaunch(const run_opts *o, int argc, char **argv)
{
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0)
        return cli_error("--backend mpi: cannot find this program to start it under mpirun: "
                         "%s", strerror(errno));
    exe[len] = 0;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    const char **av = calloc((size_t)argc + 10, sizeof *av);
    if (!av)
        return cli_error("out of memory");
    mpi_launch_argv(av, argc + 10, exe, o->ranks, geteuid() == 0, o->ranks > cores, argc,
                    argv);
    fflush(NULL);
    sigset_t set, old;
    block_signals(&set, &old);
    int pipefd[2] = {-1, -1};
    pid_t self = getpid();
    pid_t pid = pipe2(pipefd, O_CLOEXEC) == 0 ? fork() : -1;
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != self)
            _exit(127);
        sigprocmask(SIG_SETMASK, &old, NULL);
        execvp(av[0], (char *const *)av);
        int e = errno; /* the parent says it */
        if (write(pipefd[1], &e, sizeof e) < 0)
            _exit(127);
        _exit(127);
    }
    free(av);
    int rc;
    if (pid < 0) {
        rc = cli_error("--backend mpi: cannot start mpirun: %s", strerror(errno));
    } else {
        close(pipefd[1]);
        pipefd[1] = -1;
        int e = 0;
        bool failed = read(pipefd[0], &e, sizeof e) == (ssize_t)sizeof e;
        int st = wait_passing_signals(pid, &set);
        if (failed)
            rc = cli_error("--backend mpi runs as an MPI job, and mpirun cannot be started "
                           "here (%s): install Open MPI (openmpi-bin), or start it as "
                           "`mpirun -np %d commlab run ...` (`srun` under Slurm)",
                           strerror(e), o->ranks);
        else
            rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    if (pipefd[0] >= 0)
        close(pipefd[0]);
    if (pipefd[1] >= 0)
        close(pipefd[1]);
    sigprocmask(SIG_SETMASK, &old, NULL);
    return rc;
}

/* The process the launcher started: forks the one that runs the rank and
 * waits for it, passing signals on.  Returns in the child only (0), or -1
 * when the fork failed. */
static int guard(int rank)
{
    sigset_t set, old;
    block_signals(&set, &old);
    pid_t guardian = getpid();
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        sigprocmask(SIG_SETMASK, &old, NULL);
        return -1;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != guardian)
            _exit(CLI_EXIT_FAILED);
        sigprocmask(SIG_SETMASK, &old, NULL);
        return 0;
    }
    int st = wait_passing_signals(pid, &set);
    if (WIFEXITED(st))
        _exit(WEXITSTATUS(st));
    int s = WTERMSIG(st);
    fprintf(stderr, "commlab: rank %d was killed by signal %d (SIG%s)\n", rank, s,
            sigabbrev_np(s) ? sigabbrev_np(s) : "?");
    _exit(CLI_EXIT_FAILED);
}

int mpi_enter(run_opts *o, int argc, char **argv)
{
    if (o->eager_given)
        return cli_error("--eager-limit: the MPI library's eager limit is its own (Open MPI: "
                         "OMPI_MCA_btl_vader_eager_limit within a host, "
                         "OMPI_MCA_btl_tcp_eager_limit across hosts)");
    if (o->world.size == 0)
        return relaunch(o, argc, argv);
    if (guard(o->world.rank) < 0)
        return cli_error("--backend mpi: cannot fork the rank's process: %s", strerror(errno));
    cl_diag d = {{0}};
    if (mpib_init(o->world.rank, o->world.size, &d))
        return cli_diag(&d, CLI_EXIT_FAILED);
    atexit(mpib_finalize);
    uint64_t limit;
    if (mpib_eager_limit(o->world.rdv == WORLD_RDV_UNIX, &limit) == 0)
        o->eager_limit = limit;
    return -1;
}
#endif
