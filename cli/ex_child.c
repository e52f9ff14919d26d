/* ex_child.c - `commlab exercise` runs commlab itself as a child process
 * and collects what it prints (cli/exercise.h). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/exercise.h"

#define STEP_GRACE 15.0 /* seconds past the budget before a step is stopped: its own
                           --timeout ends a run first, with the reason */
#define MAX_ARGS 64
#define MAX_OUTPUT (4u << 20) /* bytes of a child's output kept */

ex_subst ex_subst_none(void)
{
    return (ex_subst){.n = -1, .ranks = -1, .bytes = -1, .group = -1};
}

/* The word a placeholder stands for, into num; NULL when w is none. */
static const char *substitute(const char *w, const ex_subst *sub, bool shown, char *num,
                              size_t len)
{
    const struct {
        const char *word;
        long v;
    } longs[] = {{"{n}", sub->n}, {"{ranks}", sub->ranks}, {"{bytes}", sub->bytes},
                 {"{group}", sub->group}};
    if (strcmp(w, "{file}") == 0)
        return shown ? sub->label : sub->file;
    if (strcmp(w, "{backend}") == 0)
        return sub->backend;
    for (size_t i = 0; i < sizeof longs / sizeof longs[0]; i++) {
        if (strcmp(w, longs[i].word) == 0 && longs[i].v >= 0) {
            cli_textf(num, len, "%ld", longs[i].v);
            return num;
        }
    }
    return NULL;
}

/* Splits args (words separated by blanks) into argv after "commlab",
 * with sub's words substituted.  Returns argc, or -1 when there are too
 * many words. */
static int make_argv(char *buf, size_t len, const char *args, const ex_subst *sub, bool shown,
                     char **argv)
{
    size_t used = 0;
    int argc = 1;
    const char *p = args;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == '\n')
            p++;
        if (!*p)
            break;
        const char *q = p;
        while (*q && *q != ' ' && *q != '\t' && *q != '\n')
            q++;
        char word[PATH_MAX], num[32];
        cli_textf(word, sizeof word, "%.*s", (int)(q - p), p);
        const char *w = substitute(word, sub, shown, num, sizeof num);
        if (!w)
            w = word;
        size_t wl = strlen(w) + 1;
        if (argc >= MAX_ARGS - 1 || used + wl > len)
            return -1;
        memcpy(buf + used, w, wl);
        argv[argc++] = buf + used;
        used += wl;
        p = q;
    }
    argv[argc] = NULL;
    return argc;
}

/* Appends got bytes of chunk to r's output, up to MAX_OUTPUT; *cap is
 * the output's room.  Out of memory the output is dropped (NULL). */
static void keep_output(child_run *r, size_t *cap, const char *chunk, size_t got)
{
    if (r->output && r->len + got + 1 > *cap && r->len < MAX_OUTPUT) {
        while (r->len + got + 1 > *cap)
            *cap *= 2;
        char *more = realloc(r->output, *cap);
        if (!more)
            free(r->output);
        r->output = more;
    }
    if (r->output && r->len + got + 1 <= *cap) {
        memcpy(r->output + r->len, chunk, got);
        r->len += got;
    }
}

/* Runs this commlab binary with argv[1..]; collects what it prints. */
static int child_start(char **argv, bool pass, double budget, child_run *r)
{
    memset(r, 0, sizeof *r);
    char self[PATH_MAX];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl <= 0)
        return cli_error("cannot find the commlab binary: %s", strerror(errno));
    self[sl] = 0;
    argv[0] = "commlab";
    int fd[2];
    if (pipe(fd))
        return cli_error("cannot make a pipe: %s", strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return cli_error("cannot start commlab: %s", strerror(errno));
    }
    if (pid == 0) {
        dup2(fd[1], 1);
        dup2(fd[1], 2);
        close(fd[0]);
        close(fd[1]);
        execv(self, argv);
        _exit(127);
    }
    close(fd[1]);
    size_t cap = 4096;
    r->output = malloc(cap);
    char chunk[4096];
    double stop_at = budget > 0 ? cli_now() + budget + STEP_GRACE : 0;
    for (;;) {
        if (stop_at > 0) {
            double left = stop_at - cli_now();
            struct pollfd pf = {.fd = fd[0], .events = POLLIN};
            if (left <= 0 || poll(&pf, 1, (int)(left * 1000) + 1) == 0) {
                kill(pid, r->stopped ? SIGKILL : SIGTERM); /* a measured run cleans up */
                r->stopped = true;
                stop_at = cli_now() + 5;
                continue;
            }
        }
        ssize_t got = read(fd[0], chunk, sizeof chunk);
        if (got == 0)
            break;
        if (got < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (pass)
            fwrite(chunk, 1, (size_t)got, stdout), fflush(stdout);
        keep_output(r, &cap, chunk, (size_t)got);
    }
    close(fd[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) {
            free(r->output);
            return cli_error("cannot wait for commlab: %s", strerror(errno));
        }
    if (!r->output)
        return cli_error("out of memory keeping a command's output");
    r->output[r->len] = 0;
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return 0;
}

int ex_run_args(const char *args, const ex_subst *sub, const char *const *extra, bool pass,
                double budget, child_run *r, char *shown, size_t shown_len)
{
    char buf[8192], *argv[MAX_ARGS];
    int argc = make_argv(buf, sizeof buf, args, sub, false, argv);
    if (argc < 0)
        return cli_error("the command '%s' has too many words", args);
    for (int i = 0; extra && extra[i] && argc < MAX_ARGS - 1; i++) {
        argv[argc++] = (char *)extra[i];
        argv[argc] = NULL;
    }
    /* What the student would type: their file as they named it. */
    char sbuf[8192], *sargv[MAX_ARGS];
    int sargc = make_argv(sbuf, sizeof sbuf, args, sub, true, sargv);
    size_t used = (size_t)snprintf(shown, shown_len, "commlab");
    for (int i = 1; i < sargc && used < shown_len; i++)
        used += (size_t)snprintf(shown + used, shown_len - used, " %s", sargv[i]);
    return child_start(argv, pass, budget, r);
}

size_t ex_csv_column(const char *output, const char *col, double *out, size_t max)
{
    int want = -1, fields = 0;
    size_t n = 0;
    const char *line = output;
    while (*line && n < max) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char buf[1024];
        cli_textf(buf, sizeof buf, "%.*s", (int)len, line);
        int k = 0, hit = -1;
        char *save, *tok = strtok_r(buf, ",", &save);
        double vals[32];
        bool numeric = true;
        for (; tok && k < 32; tok = strtok_r(NULL, ",", &save), k++) {
            if (strcmp(tok, col) == 0)
                hit = k;
            char *e;
            vals[k] = strtod(tok, &e);
            if (e == tok)
                vals[k] = NAN;
            if (k == want && (e == tok || *e))
                numeric = false;
        }
        if (want < 0 && hit >= 0) {
            want = hit;
            fields = k;
        } else if (want >= 0 && k == fields && numeric) {
            out[n++] = vals[want];
        }
        if (!end)
            break;
        line = end + 1;
    }
    return n;
}

long ex_command_ranks(const char *args)
{
    const char *p = args;
    while ((p = strstr(p, "-n")) != NULL) {
        bool word = (p == args || p[-1] == ' ') && (p[2] == ' ');
        if (word)
            return strtol(p + 3, NULL, 10);
        p += 2;
    }
    p = strstr(args, "--ranks ");
    return p ? strtol(p + 8, NULL, 10) : 2;
}
