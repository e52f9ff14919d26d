/* student.c - compiles and loads a pattern from the user's own .c file. */
#include "cli/student.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/file.h"

bool student_is_file(const char *arg)
{
    size_t n = strlen(arg);
    return strchr(arg, '/') || (n > 2 && strcmp(arg + n - 2, ".c") == 0);
}

/* The folder that holds commlab.h, for the compiler's -I. */
static int include_dir(char *buf, size_t len)
{
    cl_diag d = {{0}};
    if (cli_data_path(buf, len, "include/commlab.h", &d))
        return cli_diag(&d, CLI_EXIT_USAGE);
    *strrchr(buf, '/') = 0;
    char real[PATH_MAX];
    if (realpath(buf, real)) /* "build/../include" reads worse in compiler notes */
        snprintf(buf, len, "%s", real);
    return 0;
}

/* Runs the compiler; its messages go where ours go.  0 when it succeeded. */
static int compile(const char *src, const char *inc, const char *out)
{
    const char *cc = getenv("CC");
    if (!cc || !*cc)
        cc = "cc";
    char incflag[PATH_MAX + 2];
    snprintf(incflag, sizeof incflag, "-I%s", inc);
    /* -fstack-clash-protection: a large local array touches its stack page
     * by page, so a rank running off its stack hits the guard page below it
     * (sim/coro.h) before it writes over anything else.  Under a grader the
     * probe follows commlab.h (include/commlab_probe.h). */
    bool probe = getenv(STUDENT_PROBE_ENV) && *getenv(STUDENT_PROBE_ENV);
    /* The warnings that are a crash waiting to happen are errors, as GCC 14
     * makes them: `cl_wait(c, r, NULL)` for `&r` passes a request where a
     * pointer to one belongs, and a call with no prototype or a function
     * that falls off its end returns garbage.  The C library's POSIX calls
     * (fork, usleep, dprintf) are declared, so only a name nobody declared
     * is refused.  --wrap: a rank's exit() and fork() reach the simulator's
     * guard (sim/fault.h), and nothing else of the tool's does. */
    char *argv[] = {(char *)cc, "-std=c11", "-D_DEFAULT_SOURCE", "-O2", "-g", "-Wall",
                    "-Wextra", "-fPIC",
                    "-Werror=incompatible-pointer-types", "-Werror=int-conversion",
                    "-Werror=implicit-function-declaration", "-Werror=return-type",
                    "-fstack-clash-protection", "-shared", "-Wl,-Bsymbolic",
                    "-Wl,--wrap=exit,--wrap=_exit,--wrap=_Exit,--wrap=fork", "-DCL_STUDENT",
                    incflag, "-include", "commlab.h", "-o", (char *)out, (char *)src,
                    probe ? "-include" : NULL, "commlab_probe.h", NULL};
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return cli_error("cannot start the C compiler: %s", strerror(errno));
    if (pid == 0) {
        execvp(cc, argv);
        fprintf(stderr, "commlab: cannot run the C compiler '%s': %s (set CC to another)\n",
                cc, strerror(errno));
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return cli_error("cannot wait for the C compiler: %s", strerror(errno));
    if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
        return CLI_EXIT_USAGE; /* the child said why */
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return cli_error("cannot compile '%s': %s %s %d (its messages are above)", src, cc,
                         WIFEXITED(st) ? "exited with status" : "was killed by signal",
                         WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
    return 0;
}

int student_load(student_pattern *s, const char *path)
{
    memset(s, 0, sizeof *s);
    cl_diag d = {{0}};
    if (file_check_regular(path, "the pattern file", &d))
        return cli_diag(&d, CLI_EXIT_USAGE);
    size_t n = strlen(path);
    if (n < 3 || strcmp(path + n - 2, ".c") != 0)
        return cli_error("a pattern file must be C source ending in .c, got '%s'", path);
    char inc[PATH_MAX];
    int rc = include_dir(inc, sizeof inc);
    if (rc)
        return rc;
    const char *tmp = getenv("TMPDIR");
    char dir[PATH_MAX], so[PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s/commlab-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        return cli_error("cannot make a temporary folder in '%s': %s",
                         tmp && *tmp ? tmp : "/tmp", strerror(errno));
    snprintf(so, sizeof so, "%s/pattern.so", dir);
    rc = compile(path, inc, so);
    if (!rc) {
        s->handle = dlopen(so, RTLD_NOW | RTLD_LOCAL);
        const char *why = s->handle ? NULL : dlerror();
        if (why && strstr(why, "probe_student")) /* the probe wraps a missing pattern */
            rc = cli_error("'%s' defines no function '" STUDENT_SYMBOL "': write "
                           "int " STUDENT_SYMBOL "(cl_comm *c, const cl_args *a)", path);
        else if (why)
            rc = cli_error("cannot load the compiled '%s': %s", path, why);
    }
    unlink(so); /* a loaded object stays mapped */
    rmdir(dir);
    if (rc)
        return rc;
    void *sym = dlsym(s->handle, STUDENT_SYMBOL);
    if (!sym) {
        student_unload(s);
        return cli_error("'%s' defines no function '" STUDENT_SYMBOL "': write "
                         "int " STUDENT_SYMBOL "(cl_comm *c, const cl_args *a)", path);
    }
    const char *base = strrchr(path, '/');
    snprintf(s->name, sizeof s->name, "%s", base ? base + 1 : path);
    s->info = (pattern_info){
        .name = s->name, .chapter = "(your file)", .summary = path, .min_ranks = 1,
        .time_divisor = 1, .fixes = NULL,
    };
    /* POSIX lets a function pointer go through void * (dlsym's contract). */
    memcpy(&s->info.fn, &sym, sizeof sym);
    return 0;
}

void student_unload(student_pattern *s)
{
    if (s->handle)
        dlclose(s->handle);
    s->handle = NULL;
}
