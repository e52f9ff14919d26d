/* mpi_guard.c - the command that starts mpirun, and the guardians of an
 * MPI job's ranks (see mpi_guard.h). */
#ifdef CL_HAVE_MPI
#include "cli/mpi_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/row_mpi.h"
#include "cli/mpi_netns.h"
#include "cli/mpi_scratch.h"

#define ORPHANS_SECONDS 5 /* the job's processes mpirun left get this long, then SIGKILL */

static const char *sig_name(int sig)
{
    return sigabbrev_np(sig) ? sigabbrev_np(sig) : "?";
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

/* Waits for child pid, passing SIGINT, SIGTERM and SIGHUP on to it, and
 * looking every GUARD_TICK_MS whether this process's parent is still
 * `parent` (0: not looked at).  Its wait status; in *passed the last
 * signal passed on (0: none); *orphaned when the parent went first (the
 * child is then killed). */
static int wait_child(pid_t pid, const sigset_t *set, pid_t parent, int *passed,
                      bool *orphaned)
{
    struct timespec tick = {0, GUARD_TICK_MS * 1000000L};
    *passed = 0;
    *orphaned = false;
    for (;;) {
        int sig = sigtimedwait(set, NULL, &tick);
        if (sig > 0 && sig != SIGCHLD) {
            kill(pid, sig);
            *passed = sig;
        }
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid)
            return st;
        if (parent && getppid() != parent && !*orphaned) {
            *orphaned = true;
            kill(pid, SIGKILL);
        }
    }
}

/* ---- outside a launcher: mpirun, started and waited for ---- */

#define WHY_MAX 320 /* bytes of why the child could not become mpirun (a pipe's message) */

/* In mpirun's process before it starts: Open MPI's files go to the job's
 * scratch folder (a choice of the user's own stands). */
static void job_env(const char *scratch)
{
    if (!*scratch)
        return;
    setenv("OMPI_MCA_orte_tmpdir_base", scratch, 0);
    setenv("OMPI_MCA_btl_vader_backing_directory", scratch, 0);
}

/* The processes of the job that mpirun left (it was killed): they come
 * here (a child subreaper), end once their guardian sees mpirun gone,
 * and are reaped; those still there after ORPHANS_SECONDS are killed. */
static void reap_orphans(void)
{
    double waited = 0;
    bool killed = false;
    for (;;) {
        while (waitpid(-1, NULL, WNOHANG) > 0)
            ;
        char path[64], buf[4096];
        snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)getpid());
        FILE *f = fopen(path, "re");
        size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f)
            fclose(f);
        buf[n] = 0;
        if (!f || strspn(buf, " \n") == n)
            return; /* none left (or no list: each ends when its guardian looks) */
        if (waited >= ORPHANS_SECONDS && !killed) {
            char *p = buf, *end;
            for (long pid; (pid = strtol(p, &end, 10)) > 0 && end != p; p = end)
                kill((pid_t)pid, SIGKILL);
            killed = true;
        }
        struct timespec ts = {0, GUARD_TICK_MS * 1000000L};
        nanosleep(&ts, NULL);
        waited += GUARD_TICK_MS / 1000.0;
    }
}

/* The command's exit status from mpirun's wait status st, saying on
 * stderr what mpirun's -q keeps quiet. */
static int job_status(int st, int passed)
{
    if (passed) {
        fprintf(stderr, "commlab: interrupted (SIG%s): every rank was stopped\n",
                sig_name(passed));
        return 128 + passed;
    }
    if (WIFSIGNALED(st)) {
        fprintf(stderr, "commlab: mpirun was killed by signal %d (SIG%s): every rank was "
                "stopped with it\n", WTERMSIG(st), sig_name(WTERMSIG(st)));
        return CLI_EXIT_FAILED;
    }
    int code = WEXITSTATUS(st);
    if (code > 128 && code < 128 + NSIG) { /* mpirun's word for a process a signal killed */
        fprintf(stderr, "commlab: a process mpirun started for a rank was killed by signal "
                "%d (SIG%s): every rank was stopped\n", code - 128, sig_name(code - 128));
        return CLI_EXIT_FAILED;
    }
    return code;
}

int mpi_relaunch(int ranks, int argc, char **argv)
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
    mpi_launch_argv(av, argc + 10, exe, ranks, geteuid() == 0, ranks > cores, argc, argv);
    char scratch[MPI_SCRATCH_MAX];
    mpi_scratch_make(scratch); /* none: Open MPI's own folders */
    fflush(NULL);
    sigset_t set, old;
    block_signals(&set, &old);
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    int pipefd[2] = {-1, -1};
    pid_t self = getpid();
    pid_t pid = pipe2(pipefd, O_CLOEXEC) == 0 ? fork() : -1;
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != self)
            _exit(127);
        sigprocmask(SIG_SETMASK, &old, NULL);
        job_env(scratch);
        char why[WHY_MAX] = "";
        if (mpi_netns_enter(why, sizeof why) == 0) {
            execvp(av[0], (char *const *)av);
            snprintf(why, sizeof why, "mpirun cannot be started here (%s): install Open MPI "
                     "(openmpi-bin), or start it as `mpirun -np %d commlab run ...` (`srun` "
                     "under Slurm)", strerror(errno), ranks);
        }
        if (write(pipefd[1], why, sizeof why) < 0) /* the parent says it */
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
        char why[WHY_MAX];
        bool failed = read(pipefd[0], why, sizeof why) == (ssize_t)sizeof why;
        int passed;
        bool orphaned;
        int st = wait_child(pid, &set, 0, &passed, &orphaned);
        reap_orphans();
        if (failed)
            rc = cli_error("--backend mpi runs as an MPI job, and %s", why);
        else
            rc = job_status(st, passed);
    }
    prctl(PR_SET_CHILD_SUBREAPER, 0);
    mpi_scratch_remove(scratch);
    if (pipefd[0] >= 0)
        close(pipefd[0]);
    if (pipefd[1] >= 0)
        close(pipefd[1]);
    sigprocmask(SIG_SETMASK, &old, NULL);
    return rc;
}

/* ---- under a launcher: the guardian ---- */

int mpi_guard(int rank)
{
    pid_t launcher = getppid();
    sigset_t set, old;
    block_signals(&set, &old);
    pid_t guardian = getpid();
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        sigprocmask(SIG_SETMASK, &old, NULL);
        errno = e;
        return -1;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != guardian)
            _exit(CLI_EXIT_FAILED);
        sigprocmask(SIG_SETMASK, &old, NULL);
        return 0;
    }
    int passed;
    bool orphaned;
    int st = wait_child(pid, &set, launcher, &passed, &orphaned);
    if (orphaned) /* nobody reads what we would say */
        _exit(CLI_EXIT_FAILED);
    if (WIFEXITED(st))
        _exit(WEXITSTATUS(st));
    int s = WTERMSIG(st);
    if (s == passed) /* the launcher stopped the job (another process failed, or Ctrl-C) */
        _exit(128 + s);
    fprintf(stderr, "commlab: rank %d was killed by signal %d (SIG%s)\n", rank, s, sig_name(s));
    _exit(CLI_EXIT_FAILED);
}
#endif
