/* bench_start.c - `commlab bench start`: what a command costs as a whole
 * process, from fork to exit, which every test, `exercise check` step and
 * script pays per command; the goal for --help is a few milliseconds.
 * `fabric` opens libfabric (real/dlib.h), so its row shows what a command
 * that needs a library pays for it. */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/bench.h"
#include "cli/cli.h"

#define START_RUNS_MAX 21

double bench_process(const char *exe, char *const argv[], char *out, size_t len,
                     long *peak_kib)
{
    int fds[2] = {-1, -1};
    if (out && (len == 0 || pipe(fds)))
        return -1;
    fflush(stdout);
    double t0 = cli_now();
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) {
            dup2(out ? fds[1] : null, STDOUT_FILENO);
            dup2(null, STDERR_FILENO);
        }
        execv(exe, argv);
        _exit(127);
    }
    if (out) {
        close(fds[1]);
        size_t used = 0;
        char drop[256];
        for (ssize_t got = 1; pid > 0 && got > 0;) {
            bool room = used + 1 < len;
            got = read(fds[0], room ? out + used : drop, room ? len - 1 - used : sizeof drop);
            used += room && got > 0 ? (size_t)got : 0;
        }
        close(fds[0]);
        out[used] = 0;
    }
    int st;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &st, 0, &ru) != pid)
        return -1;
    double t = cli_now() - t0;
    if (peak_kib)
        *peak_kib = ru.ru_maxrss;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? t : -1;
}

int bench_start(bool quick)
{
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0)
        return cli_error("bench start: cannot find this program");
    exe[len] = 0;
    static char *const cmds[][6] = {
        {"commlab", "--help", NULL},
        {"commlab", "price", NULL},
        {"commlab", "run", "ring", "-n", "4", NULL},
        {"commlab", "fabric", NULL},
    };
    int runs = quick ? 5 : START_RUNS_MAX;
    printf("start: a command as a whole process, fork to exit (median [min-max] of %d runs)\n\n",
           runs);
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        double t[START_RUNS_MAX];
        char what[64] = "", range[3 * 32];
        int used = 0;
        for (int k = 1; cmds[i][k]; k++)
            cli_appendf(what, sizeof what, &used, "%s%s", k > 1 ? " " : "", cmds[i][k]);
        int k = 0;
        while (k < runs && (t[k] = bench_process(exe, cmds[i], NULL, 0, NULL)) >= 0)
            k++;
        cl_stats s;
        if (k < runs || stats_compute(t, (size_t)runs, &s)) {
            printf("  %-16s failed (run `commlab %s` to see why)\n", what, what);
            continue;
        }
        printf("  %-16s %s\n", what, bench_range(range, sizeof range, &s, true));
    }
    return CLI_EXIT_OK;
}
