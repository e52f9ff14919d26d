/* cmd_exercise.c - `commlab exercise list|show|run|check`: the course's
 * exercises, read from chapters/NN-topic/exercises.yaml.
 *
 * An exercise is one of two kinds.
 *
 *   code    the student writes a pattern in a file of their own (`file:`);
 *           `check:` is a list of steps, each a commlab command run on the
 *           student's file and what it must show: the exit status, a line of
 *           output or every rank's line, the messages per iteration, where
 *           each message goes (the run's --timeline), the data each rank
 *           ends with (include/commlab_probe.h, compiled into the file),
 *           the calls used, or (modeled) the same time as a reference.
 *           Every run gets --debug unless --no-debug; a failed step's hint
 *           is the one its fault has (`hints:`), else the step's.
 *   answer  the student answers with numbers (`--answer "..."`); `answer:`
 *           says which commlab outputs the numbers must match, the command
 *           whose printed figure the smallest answer must bring under a bound,
 *           or (`best:`) the command whose CSV figure the answer's first
 *           number must make least, the second number being that least.
 *           A wrong number is told by direction and kind, or by the hint of
 *           a likely mistake (`mistakes:`), never by the figure itself.
 *
 * Every check runs commlab itself as a child process (/proc/self/exe), so
 * what is checked is exactly what the student sees.  Steps whose command
 * holds {backend} run on the backend asked for (`--backend`, sim by
 * default); the others are modeled and deterministic.  What an
 * exercise holds, and its loading, are in cli/course.h.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/backend.h"
#include "cli/cli.h"
#include "cli/near.h"
#include "cli/course.h"
#include "cli/run_size.h"
#include "cli/student.h"
#include "commlab.h"
#include "core/table.h"
#include "core/units.h"

const char cmd_exercise_usage[] =
    "usage: commlab exercise list\n"
    "       commlab exercise show ID\n"
    "       commlab exercise run ID [--file FILE | --solution] [--debug]\n"
    "       commlab exercise check ID [--file FILE | --solution | --answer TEXT]\n"
    "                                 [--backend NAME] [--no-debug]\n"
    "\n"
    "The course's exercises (chapters/NN-topic/exercises.yaml), each something\n"
    "you run and commlab checks.\n"
    "\n"
    "  list            every exercise: id, title, chapter\n"
    "  show ID         the task, the commands to run, and what the check runs\n"
    "  run ID          runs the exercise's commands, with your file in them\n"
    "  check ID        checks your work: your pattern file (code exercises) or\n"
    "                  your --answer (answer exercises)\n"
    "\n"
    "      --file FILE      your pattern file (default: the name the exercise\n"
    "                       gives, in the current folder)\n"
    "      --solution       use the reference solution that ships with commlab\n"
    "      --answer TEXT    your answer: numbers separated by spaces or commas;\n"
    "                       sizes may carry units (300KB, 292.97KiB)\n"
    "  -b, --backend NAME   where the measured steps of a check run: sim (the\n"
    "                       default), shm, tcp or rdma; modeled steps always run on\n"
    "                       sim\n"
    "      --debug          run: every `commlab run` of the exercise also gets\n"
    "                       --debug (check always does, unless --no-debug): a\n"
    "                       misused send or receive buffer fails the step\n"
    "      --no-debug       check: runs without --debug's buffer checks\n"
    "      --timeout TIME   the budget of each step (default 60s; 0: none): a\n"
    "                       `commlab run` gets it as its --timeout and says which\n"
    "                       rank made no progress; any step still running 15 s\n"
    "                       later is stopped; either way the step fails\n"
    "  -h, --help           this text\n"
    "\n"
    "exit status: 0 the check passed, 1 it failed (each failed step says why),\n"
    "2 bad usage (unknown id, missing file or answer)\n"
    "\n"
    "examples:\n"
    "  commlab exercise show 2.1\n"
    "  commlab exercise check 2.1 --file myring.c\n"
    "  commlab exercise check 2.1 --solution --backend shm\n"
    "  commlab exercise check 3.1 --answer \"0.90 10.74 5.37 86.62\"\n";

enum { OPT_SOLUTION = 256, OPT_ANSWER, OPT_FILE, OPT_DEBUG, OPT_NO_DEBUG, OPT_TIMEOUT };

#define STEP_BUDGET 60.0 /* seconds a step may take, by default */
#define STEP_GRACE 15.0  /* seconds past the budget before a step is stopped: its own
                            --timeout ends a run first, with the reason */

#define MAX_ARGS 64
#define MAX_OUTPUT (4u << 20) /* bytes of a child's output kept */

/* ---- running commlab ---- */

typedef struct child_run {
    int status;   /* exit status; 128+N when killed by signal N */
    bool stopped; /* still running STEP_GRACE past its budget: stopped */
    char *output; /* stdout and stderr as written, NUL-terminated */
    size_t len;
} child_run;

/* Splits args (words separated by blanks) into argv after "commlab",
 * replacing {file}, {backend} and {n}.  Returns argc, or -1 when there
 * are too many words. */
static int make_argv(char *buf, size_t len, const char *args, const char *file,
                     const char *backend, long n, char **argv)
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
        char word[PATH_MAX];
        cli_textf(word, sizeof word, "%.*s", (int)(q - p), p);
        char num[32];
        cli_textf(num, sizeof num, "%ld", n);
        const char *w = strcmp(word, "{file}") == 0      ? file
                        : strcmp(word, "{backend}") == 0 ? backend
                        : strcmp(word, "{n}") == 0       ? num
                                                         : word;
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

/* Seconds on the monotonic clock. */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Runs this commlab binary with argv[1..]; collects what it prints.  When
 * `pass` is set the output also goes to our stdout as it comes.  A child
 * still running STEP_GRACE after `budget` seconds (0: none) is stopped
 * (SIGTERM, then SIGKILL) and marked so. */
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
    ssize_t got;
    double stop_at = budget > 0 ? now_s() + budget + STEP_GRACE : 0;
    for (;;) {
        if (stop_at > 0) {
            double left = stop_at - now_s();
            struct pollfd pf = {.fd = fd[0], .events = POLLIN};
            if (left <= 0 || poll(&pf, 1, (int)(left * 1000) + 1) == 0) {
                kill(pid, r->stopped ? SIGKILL : SIGTERM); /* a measured run cleans up */
                r->stopped = true;
                stop_at = now_s() + 5;
                continue;
            }
        }
        got = read(fd[0], chunk, sizeof chunk);
        if (got == 0)
            break;
        if (got < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (pass)
            fwrite(chunk, 1, (size_t)got, stdout), fflush(stdout);
        if (r->output && r->len + (size_t)got + 1 > cap && r->len < MAX_OUTPUT) {
            while (r->len + (size_t)got + 1 > cap)
                cap *= 2;
            char *more = realloc(r->output, cap);
            if (!more) {
                free(r->output);
                r->output = NULL;
            }
            r->output = more;
        }
        if (r->output && r->len + (size_t)got + 1 <= cap) {
            memcpy(r->output + r->len, chunk, (size_t)got);
            r->len += (size_t)got;
        }
    }
    close(fd[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return cli_error("cannot wait for commlab: %s", strerror(errno));
    if (!r->output)
        return cli_error("out of memory keeping a command's output");
    r->output[r->len] = 0;
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return 0;
}

/* Runs `commlab ARGS` with the substitutions ({file}: file) and extra
 * words (a NULL-terminated list, or NULL); *shown is the
 * command as the student would type it, with label for {file}. */
static int run_args(const char *args, const char *file, const char *label,
                    const char *backend, long n, const char *const *extra, bool pass,
                    double budget, child_run *r, char *shown, size_t shown_len)
{
    char buf[8192], *argv[MAX_ARGS];
    int argc = make_argv(buf, sizeof buf, args, file, backend, n, argv);
    if (argc < 0)
        return cli_error("the command '%s' has too many words", args);
    for (int i = 0; extra && extra[i] && argc < MAX_ARGS - 1; i++) {
        argv[argc++] = (char *)extra[i];
        argv[argc] = NULL;
    }
    /* What the student would type: their file as they named it. */
    char sbuf[8192], *sargv[MAX_ARGS];
    int sargc = make_argv(sbuf, sizeof sbuf, args, label, backend, n, sargv);
    size_t used = (size_t)snprintf(shown, shown_len, "commlab");
    for (int i = 1; i < sargc && used < shown_len; i++)
        used += (size_t)snprintf(shown + used, shown_len - used, " %s", sargv[i]);
    return child_start(argv, pass, budget, r);
}

/* The values of CSV column `col` in output, one per row after the header
 * line that names it; lines with another field count are skipped (the
 * pattern's own lines, warnings). */
static size_t csv_column(const char *output, const char *col, double *out, size_t max)
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

/* ---- checking ---- */

typedef struct check_ctx {
    const exercise *e;
    const char *file;    /* the student's file, or the solution */
    const char *label;   /* file as shown: as given, or chapters/NN/solutions/x.c */
    const char *backend; /* for steps with {backend} */
    bool debug;          /* runs of the steps get --debug (--no-debug: not) */
    double budget;       /* --timeout: seconds a step may take; 0: no limit */
    int passed, failed;
} check_ctx;

static void show_output(const child_run *r)
{
    const char *p = r->output;
    int lines = 0;
    printf("        its output was:\n");
    while (*p && lines < 12) {
        const char *end = strchr(p, '\n');
        int len = end ? (int)(end - p) : (int)strlen(p);
        printf("          | %.*s\n", len, p);
        lines++;
        if (!end)
            break;
        p = end + 1;
    }
    if (*p && lines == 12)
        printf("          | ...\n");
}

static void step_result(check_ctx *k, const char *shown, const char *what, const char *why,
                        const char *hint, const child_run *r)
{
    if (!why) {
        k->passed++;
        printf("  ok    %s\n        %s\n", shown, what);
        return;
    }
    k->failed++;
    printf("  FAIL  %s\n        %s\n", shown, why);
    if (hint)
        printf("        hint: %s\n", hint);
    if (r)
        show_output(r);
}

static const char *status_word(long st)
{
    switch (st) {
    case 0: return "success";
    case 1: return "a data check failed";
    case 2: return "bad usage or a compile error";
    case 3: return "deadlock";
    case 4: return "a rank failed";
    default: return "stopped by a signal or timed out";
    }
}

/* The names of the calls in a Perfetto trace ("isend", "recv", ...), as
 * one malloc'd text to search; NULL when it cannot be read. */
static char *trace_calls(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, len = 0;
    char *text = malloc(cap);
    size_t got;
    while (text && (got = fread(text + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (len + 1 == cap) {
            char *more = cap < (64u << 20) ? realloc(text, cap * 2) : NULL;
            if (!more)
                break;
            text = more;
            cap *= 2;
        }
    }
    fclose(f);
    if (text)
        text[len] = 0;
    return text;
}

/* Whether the trace shows every call of s->uses and none of s->avoids. */
static void check_calls(const char *calls, const ex_step *s, char *why, size_t len)
{
    if (!calls) {
        cli_textf(why, len, "wrote no trace to look at");
        return;
    }
    for (int pass = 0; pass < 2; pass++) {
        const char *list = pass ? s->avoids : s->uses;
        char buf[256];
        cli_textf(buf, sizeof buf, "%s", list ? list : "");
        char *save, *name;
        for (name = strtok_r(buf, ", ", &save); name; name = strtok_r(NULL, ", ", &save)) {
            char key[300];
            cli_textf(key, sizeof key, "\"name\":\"%s\"", name);
            bool seen = strstr(calls, key) != NULL;
            if (seen == (pass == 1)) {
                cli_textf(why, len, pass ? "calls cl_%s, which this exercise asks you not to use"
                                     : "never calls cl_%s", name);
                return;
            }
        }
    }
}

/* The world size a step's command runs: its -n / --ranks, else 2 (run's
 * default). */
static long step_ranks(const char *args)
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

/* The line of output that begins with `label`, copied into buf; false
 * when there is none. */
static bool find_line(const char *output, const char *label, char *buf, size_t len)
{
    for (const char *p = output; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, label, strlen(label)) == 0) {
            const char *end = strchr(p, '\n');
            cli_textf(buf, len, "%.*s", end ? (int)(end - p) : (int)strlen(p), p);
            return true;
        }
    }
    return false;
}

/* s->output is missing: says what was printed instead, without the
 * expected text's value (the part after its last ": " is the answer the
 * exercise asks for). */
static void why_output(const char *want, const char *output, char *why, size_t len)
{
    char label[512];
    cli_textf(label, sizeof label, "%s", want);
    char *cut = strrchr(label, ':');
    if (cut && cut[1] == ' ' && cut != strchr(label, ':'))
        cut[2] = 0;
    char line[512];
    if (find_line(output, label, line, sizeof line))
        cli_textf(why, len, "printed '%s': not the value the exercise asks for", line);
    else
        cli_textf(why, len, "printed no line '%s...'", label);
}

/* Every rank r prints "rank r: " + s->every_rank with {r} and {n}. */
static void check_every_rank(const ex_step *s, const char *output, char *why, size_t len)
{
    long n = step_ranks(s->run);
    for (long r = 0; r < n; r++) {
        char text[512] = "", line[600];
        int used = 0;
        for (const char *p = s->every_rank; *p; p++) {
            if (strncmp(p, "{r}", 3) == 0 || strncmp(p, "{n}", 3) == 0) {
                cli_appendf(text, sizeof text, &used, "%ld", p[1] == 'r' ? r : n);
                p += 2;
            } else {
                cli_appendf(text, sizeof text, &used, "%c", *p);
            }
        }
        cli_textf(line, sizeof line, "rank %ld: %s", r, text);
        char found[600];
        if (!find_line(output, line, found, sizeof found) || strcmp(found, line) != 0) {
            cli_textf(why, len, "rank %ld does not print '%s'", r, text);
            return;
        }
    }
}

/* ---- the messages of a run: its timeline (cli_timeline_write's CSV) ---- */

typedef struct pair {
    long a, b; /* ranks: source and destination, or holder and owner */
} pair;

#define MAX_PAIRS 4096

/* "0>1 1>0" into pairs; the text was checked when it was loaded. */
static size_t parse_pairs(const char *text, pair *out, size_t max)
{
    size_t n = 0;
    const char *p = text;
    char *end;
    while (n < max) {
        long a = strtol(p, &end, 10);
        if (end == p)
            break;
        long b = strtol(end + 1, &end, 10);
        out[n++] = (pair){a, b};
        p = end;
    }
    return n;
}

/* The source and destination of every send in a timeline file. */
static size_t timeline_sends(const char *path, pair *out, size_t max)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[512];
    size_t n = 0;
    while (n < max && fgets(line, sizeof line, f)) {
        long rank, peer;
        char op[16];
        double t0, t1, t2;
        if (sscanf(line, "%ld,%15[a-z],%lf,%lf,%lf,%ld", &rank, op, &t0, &t1, &t2, &peer) == 6 &&
            (strcmp(op, "send") == 0 || strcmp(op, "isend") == 0))
            out[n++] = (pair){rank, peer};
    }
    fclose(f);
    return n;
}

static long count_pair(const pair *v, size_t n, pair p)
{
    long k = 0;
    for (size_t i = 0; i < n; i++)
        k += v[i].a == p.a && v[i].b == p.b;
    return k;
}

static const char *times_word(long k)
{
    static const char *const words[] = {"never", "once", "twice"};
    static char buf[32];
    if (k >= 0 && k < 3)
        return words[k];
    snprintf(buf, sizeof buf, "%ld times", k);
    return buf;
}

/* Every message goes where the task says: the sends of the run's last
 * iteration are, as a multiset, s->route. */
static void check_route(const ex_step *s, const char *timeline, char *why, size_t len)
{
    static pair want[MAX_PAIRS], got[MAX_PAIRS];
    size_t nw = parse_pairs(s->route, want, MAX_PAIRS);
    size_t ng = timeline_sends(timeline, got, MAX_PAIRS);
    for (size_t i = 0; i < ng; i++)
        if (count_pair(want, nw, got[i]) == 0) {
            cli_textf(why, len, "rank %ld sends to rank %ld: no message of this exercise "
                      "goes from %ld to %ld", got[i].a, got[i].b, got[i].a, got[i].b);
            return;
        }
    for (size_t i = 0; i < nw; i++) {
        long w = count_pair(want, nw, want[i]), g = count_pair(got, ng, want[i]);
        if (w != g) {
            char tw[32];
            cli_textf(tw, sizeof tw, "%s", times_word(w));
            cli_textf(why, len, "rank %ld sends to rank %ld %s; the task asks for %s",
                      want[i].a, want[i].b, times_word(g), tw);
            return;
        }
    }
}

/* Each rank ends with the data the task says (s->holds), as the probe
 * compiled into the student's file reports it (include/commlab_probe.h):
 * a pair listed w times needs w blocks of that rank holding that data. */
static void check_holds(const ex_step *s, const char *probe, char *why, size_t len)
{
    static pair want[MAX_PAIRS], got[MAX_PAIRS];
    size_t nw = parse_pairs(s->holds, want, MAX_PAIRS), ng = 0;
    FILE *f = fopen(probe, "r");
    char line[128];
    while (f && ng < MAX_PAIRS && fgets(line, sizeof line, f))
        if (sscanf(line, "holds %ld %ld", &got[ng].a, &got[ng].b) == 2)
            ng++;
    if (f)
        fclose(f);
    for (size_t i = 0; i < nw; i++) {
        long w = count_pair(want, nw, want[i]), g = count_pair(got, ng, want[i]);
        if (g == 0) {
            cli_textf(why, len, "rank %ld does not end with the data of rank %ld: none of its "
                      "buffers holds what rank %ld filled with cl_fill(c, buf, a->bytes, %ld)",
                      want[i].a, want[i].b, want[i].b, want[i].b);
            return;
        }
        if (g < w) {
            cli_textf(why, len, "rank %ld ends with the data of rank %ld in %ld of its buffers; "
                      "the task asks for %ld", want[i].a, want[i].b, g, w);
            return;
        }
    }
}

/* Each rank ends with the sums the task says (s->sums, "R<P+Q ..."): the
 * probe reports "sum R S" for a block of doubles whose element i is
 * S (i % 7 + 1), and the inputs of ranks P, Q, ... sum to S = (P + 1) +
 * (Q + 1) + ... */
static void check_sums(const ex_step *s, const char *probe, char *why, size_t len)
{
    static pair got[MAX_PAIRS];
    size_t ng = 0;
    FILE *f = fopen(probe, "r");
    char line[128];
    while (f && ng < MAX_PAIRS && fgets(line, sizeof line, f))
        if (sscanf(line, "sum %ld %ld", &got[ng].a, &got[ng].b) == 2)
            ng++;
    if (f)
        fclose(f);
    const char *p = s->sums;
    char *end;
    for (;;) {
        long r = strtol(p, &end, 10), sum = 0, q[64];
        int n = 0;
        if (end == p)
            return;
        do {
            long v = strtol(end + 1, &end, 10);
            sum += v + 1;
            if (n < 64)
                q[n++] = v;
        } while (*end == '+');
        if (count_pair(got, ng, (pair){r, sum}) == 0) {
            char ranks[512] = "";
            int used = 0;
            for (int i = 0; i < n; i++)
                cli_appendf(ranks, sizeof ranks, &used, "%s%ld",
                            i == 0 ? "" : i == n - 1 ? " and " : ", ", q[i]);
            cli_textf(why, len, "rank %ld does not end with the sum over rank%s %s: none of "
                      "its buffers holds, element by element, the sum of their inputs "
                      "((r + 1)(i %% 7 + 1) on rank r)", r, n == 1 ? "" : "s", ranks);
            return;
        }
        p = end;
    }
}

/* A folder of our own for the files a step's run writes. */
static int scratch_dir(char *dir, size_t len)
{
    const char *tmp = getenv("TMPDIR");
    cli_textf(dir, len, "%s/commlab-check-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        return cli_error("cannot make a temporary folder '%s': %s", dir, strerror(errno));
    return 0;
}

/* The step's modeled time against its reference's; says why when they
 * differ.  Returns 0 or the exit status of an error of our own. */
static int check_time(check_ctx *k, const ex_step *s, const child_run *r, char *why,
                      size_t len, char *what, size_t wlen, int *used)
{
    child_run ref;
    char rshown[2048];
    double mine, theirs;
    const char *csvopt[] = {"--csv", NULL};
    int rc = run_args(s->same_time_as, k->file, k->label, "sim", 0, csvopt, false, k->budget, &ref,
                      rshown, sizeof rshown);
    if (rc)
        return rc;
    if (csv_column(r->output, "time_median_s", &mine, 1) != 1 ||
        csv_column(ref.output, "time_median_s", &theirs, 1) != 1 || ref.status) {
        cli_textf(why, len, "the reference '%s' printed no time", rshown);
    } else {
        char a[UNITS_BUF], b[UNITS_BUF];
        double want = s->factor * theirs;
        char times[40] = "";
        if (s->factor != 1)
            cli_textf(times, sizeof times, "%g x ", s->factor);
        if (fabs(mine - want) > 1e-9 * fabs(want) + 1e-15)
            cli_textf(why, len, "takes %s modeled, expected %s (%sthe time of `%s`)",
                      units_time_digits(a, mine, 4), units_time_digits(b, want, 4), times,
                      rshown);
        cli_appendf(what, wlen, used, ", modeled time %s = %sthe time of `%s`",
                    units_time_digits(a, mine, 4), times, rshown);
    }
    free(ref.output);
    return 0;
}

/* Runs one step and prints its verdict.  Returns 0, 1 when the student's
 * file does not build (the other steps would fail alike), or the exit
 * status of an error of our own. */
static int check_step(check_ctx *k, const ex_step *s)
{
    child_run r;
    char shown[2048], why[600] = "", what[1200];
    const char *extra[8] = {NULL};
    char dir[PATH_MAX] = "", trace[PATH_MAX + 16], timeline[PATH_MAX + 16],
         probe[PATH_MAX + 16];
    int nx = 0, rc;
    if (s->messages >= 0 || s->same_time_as)
        extra[nx++] = "--csv";
    if ((rc = scratch_dir(dir, sizeof dir)))
        return rc;
    cli_textf(trace, sizeof trace, "%s/trace.json", dir);
    cli_textf(timeline, sizeof timeline, "%s/timeline.csv", dir);
    cli_textf(probe, sizeof probe, "%s/probe.txt", dir);
    if (s->uses || s->avoids) {
        extra[nx++] = "--trace";
        extra[nx++] = trace;
    }
    if (s->route) {
        extra[nx++] = "--timeline";
        extra[nx++] = timeline;
    }
    /* --debug goes into the command shown, so the student can run it. */
    const char *line = s->run;
    char with_debug[2048], with_budget[2100];
    if (k->debug && strncmp(line, "run ", 4) == 0) {
        cli_textf(with_debug, sizeof with_debug, "%s --debug", line);
        line = with_debug;
    }
    if (k->budget > 0 && strncmp(line, "run ", 4) == 0) {
        cli_textf(with_budget, sizeof with_budget, "%s --timeout %gs", line, k->budget);
        line = with_budget;
    }
    if (s->holds || s->sums)
        setenv(STUDENT_PROBE_ENV, probe, 1);
    rc = run_args(line, k->file, k->label, k->backend, 0, extra, false, k->budget, &r, shown,
                  sizeof shown);
    unsetenv(STUDENT_PROBE_ENV);
    char *calls = trace_calls(trace);
    if (rc) {
        free(calls);
        unlink(trace), unlink(timeline), unlink(probe), rmdir(dir);
        return rc;
    }
    int used = 0;
    cli_appendf(what, sizeof what, &used, "exit %ld (%s)", s->exit, status_word(s->exit));
    ex_fault fault = FAULT_COUNT;
    double v[4];
    char budget[UNITS_BUF];
    units_time_str(budget, k->budget);
    const char *limit = strstr(r.output, "commlab: the run took longer than --timeout");
    if (!limit)
        limit = strstr(r.output, "made no progress");
    if (r.stopped) {
        cli_textf(why, sizeof why, "took longer than its budget of %s per step and was stopped",
                  budget);
    } else if (limit && r.status != s->exit) {
        const char *start = limit;
        while (start > r.output && start[-1] != '\n')
            start--;
        if (strncmp(start, "commlab: ", 9) == 0)
            start += 9;
        cli_textf(why, sizeof why, "took longer than its budget of %s per step: %.*s", budget,
                  (int)strcspn(start, "\n"), start);
    } else if (r.status != s->exit) {
        cli_textf(why, sizeof why, "exited %d (%s), expected %ld (%s)", r.status,
                  status_word(r.status), s->exit, status_word(s->exit));
        fault = r.status == CLI_EXIT_DEADLOCK ? FAULT_DEADLOCK
                : r.status == CLI_EXIT_CHECK  ? FAULT_FAILED
                                              : FAULT_EXIT;
    }
    if (!why[0] && s->output && !strstr(r.output, s->output)) {
        why_output(s->output, r.output, why, sizeof why);
        fault = FAULT_OUTPUT;
    }
    if (!why[0] && s->every_rank) {
        check_every_rank(s, r.output, why, sizeof why);
        fault = FAULT_OUTPUT;
    }
    if (!why[0] && s->messages >= 0) {
        if (csv_column(r.output, "messages", v, 1) != 1)
            cli_textf(why, sizeof why, "printed no table of results");
        else if (v[0] != (double)s->messages)
            cli_textf(why, sizeof why, "sent %.0f messages per iteration, expected %ld", v[0],
                      s->messages);
        fault = FAULT_MESSAGES;
    }
    if (!why[0] && s->route) {
        check_route(s, timeline, why, sizeof why);
        fault = FAULT_ROUTE;
    }
    if (!why[0] && s->holds) {
        check_holds(s, probe, why, sizeof why);
        fault = FAULT_DATA;
    }
    if (!why[0] && s->sums) {
        check_sums(s, probe, why, sizeof why);
        fault = FAULT_DATA;
    }
    if (!why[0] && (s->uses || s->avoids)) {
        check_calls(calls, s, why, sizeof why);
        fault = FAULT_CALLS;
    }
    free(calls);
    unlink(trace), unlink(timeline), unlink(probe), rmdir(dir);
    if (s->uses)
        cli_appendf(what, sizeof what, &used, ", calls %s", s->uses);
    if (s->avoids)
        cli_appendf(what, sizeof what, &used, ", never %s", s->avoids);
    if (s->output || s->every_rank)
        cli_appendf(what, sizeof what, &used, ", prints what the task asks");
    if (s->messages >= 0)
        cli_appendf(what, sizeof what, &used, ", %ld messages", s->messages);
    if (s->route)
        cli_appendf(what, sizeof what, &used, ", each from and to the right rank");
    if (s->holds || s->sums)
        cli_appendf(what, sizeof what, &used, ", every rank ends with the right data");
    if (!why[0] && s->same_time_as) {
        if ((rc = check_time(k, s, &r, why, sizeof why, what, sizeof what, &used))) {
            free(r.output);
            return rc;
        }
        fault = FAULT_TIME;
    }
    const char *hint = fault < FAULT_COUNT && s->hints[fault] ? s->hints[fault] : s->hint;
    step_result(k, shown, what, why[0] ? why : NULL, hint, why[0] ? &r : NULL);
    /* A file that does not build fails every step the same way. */
    bool unbuilt = r.status == CLI_EXIT_USAGE && s->exit != CLI_EXIT_USAGE &&
                   (strstr(r.output, "commlab: cannot compile") ||
                    strstr(r.output, "commlab: cannot load the compiled") ||
                    strstr(r.output, "defines no function"));
    free(r.output);
    if (unbuilt)
        printf("        stopped: the file does not compile or load\n");
    return unbuilt ? 1 : 0;
}

/* Numbers of an answer: "0.90 10.74", "300KB, 50KB". */
static int parse_answer(const char *text, double *out, size_t max, size_t *n)
{
    char buf[2048];
    cli_textf(buf, sizeof buf, "%s", text);
    *n = 0;
    char *save, *tok;
    for (tok = strtok_r(buf, " ,;\t\n", &save); tok; tok = strtok_r(NULL, " ,;\t\n", &save)) {
        if (*n == max)
            return cli_error("the answer has more than %zu numbers", max);
        char *end, unit[32];
        double v = strtod(tok, &end);
        uint64_t scale = 1;
        cli_textf(unit, sizeof unit, "1%s", end); /* "292.97KiB": 292.97 x 1KiB */
        if (end == tok || !isfinite(v) || (*end && units_parse_size(unit, "--answer", &scale,
                                                                   NULL)))
            return cli_error("--answer must be numbers (sizes may carry units), got '%s'",
                             tok);
        out[(*n)++] = v * (double)scale;
    }
    if (*n == 0)
        return cli_error("--answer is empty");
    return 0;
}

/* Whether x is within about 3% of a power of ten times 1, away from 1. */
static int decades_off(double ratio)
{
    double l = log10(ratio), r = round(l);
    return r != 0 && fabs(l - r) < 0.013 ? (int)r : 0;
}

/* How the answer's number i (got) is off from the figure (want), in
 * words that never give the figure: the exercise's own hint when got is
 * one of its likely mistakes, else the direction and the size of the
 * gap. */
static void how_wrong(const exercise *e, size_t i, double got, double want, char *out,
                      size_t len)
{
    const char *dir = got < want ? "too low" : "too high";
    for (size_t m = 0; m < e->nmistakes; m++) {
        const ex_mistake *x = &e->mistakes[m];
        if ((size_t)x->number == i + 1 && fabs(got - x->value) <= e->tolerance * fabs(x->value)) {
            cli_textf(out, len, "%s: %s", dir, x->says);
            return;
        }
    }
    double ratio = want != 0 ? got / want : INFINITY;
    int dec = isfinite(ratio) && ratio > 0 ? decades_off(ratio) : 0;
    if (!(got > 0) && want > 0)
        cli_textf(out, len, "%s: it must be above zero", dir);
    else if (dec)
        cli_textf(out, len, "%s by a factor of about 10^%d: check the unit the question asks "
                  "in (ms, us, bytes)", dir, abs(dec));
    else if (ratio > 0.97 && ratio < 1.03)
        cli_textf(out, len, "%s by a few percent: the smaller term, or rounding too early",
                  dir);
    else if (fabs(ratio - 1.048576) < 0.01 || fabs(ratio - 1 / 1.048576) < 0.01 ||
             fabs(ratio - 1.024) < 0.005 || fabs(ratio - 1 / 1.024) < 0.005)
        cli_textf(out, len, "%s by 2.4%% or 4.9%%: KiB is 1024 bytes, KB is 1000", dir);
    else if (ratio > 0.3 && ratio < 1)
        cli_textf(out, len, "too low: you may have left out a term, or counted one too few "
                  "times");
    else if (ratio > 1 && ratio < 3.4)
        cli_textf(out, len, "too high: a term counted too many times, or one that is not "
                  "there");
    else
        cli_textf(out, len, "%s, by more than a factor of 3: go back to the formula", dir);
}

/* The number that follows the first `text` in output, into *fig: 1 when
 * there is one, else 0. */
static size_t figure_after(const char *output, const char *text, double *fig)
{
    const char *p = strstr(output, text);
    if (!p)
        return 0;
    char *end;
    double v = strtod(p + strlen(text), &end);
    if (end == p + strlen(text))
        return 0;
    *fig = v;
    return 1;
}

static int check_values(check_ctx *k, const double *ans, size_t nans)
{
    const exercise *e = k->e;
    double want[64];
    size_t nwant = 0;
    char sources[2048] = "";
    int used = 0;
    for (size_t i = 0; i < e->nvalues; i++) {
        child_run r;
        char shown[1024];
        int rc = run_args(e->values[i].run, NULL, NULL, "sim", 0, NULL, false, k->budget, &r, shown,
                          sizeof shown);
        if (rc)
            return rc;
        const ex_value *v = &e->values[i];
        size_t got = r.status || nwant == 64 ? 0
                     : v->column ? csv_column(r.output, v->column, want + nwant, 64 - nwant)
                                 : figure_after(r.output, v->after, want + nwant);
        free(r.output);
        if (got == 0)
            return cli_error("exercise %s: '%s' gave no %s '%s' (exit %d)", e->id, shown,
                             v->column ? "column" : "figure after", v->column ? v->column
                                                                            : v->after,
                             r.status);
        for (size_t j = 0; j < got; j++)
            want[nwant + j] *= e->values[i].scale;
        nwant += got;
        cli_appendf(sources, sizeof sources, &used, "%s%s", i ? "; " : "", shown);
    }
    char what[2400];
    cli_textf(what, sizeof what, "%zu number%s, each within %g%% of: %s", nwant,
             nwant == 1 ? "" : "s", e->tolerance * 100, sources);
    if (nans != nwant) {
        char why[200];
        cli_textf(why, sizeof why, "the answer has %zu number%s, the question asks for %zu",
                 nans, nans == 1 ? "" : "s", nwant);
        step_result(k, "your answer", what, why, NULL, NULL);
        return 0;
    }
    int wrong = 0;
    for (size_t i = 0; i < nwant; i++)
        if (!(fabs(ans[i] - want[i]) <= e->tolerance * fabs(want[i]))) {
            if (!wrong++)
                printf("  FAIL  your answer\n");
            char words[300];
            how_wrong(e, i, ans[i], want[i], words, sizeof words);
            printf("        number %zu (%.6g) is %s\n", i + 1, ans[i], words);
        }
    if (wrong) {
        k->failed++;
        return 0;
    }
    step_result(k, "your answer", what, NULL, NULL, NULL);
    return 0;
}

/* The figure after e->after in the output of the smallest-command at n. */
static int figure_at(check_ctx *k, long n, double *fig, char *shown, size_t len)
{
    const exercise *e = k->e;
    child_run r;
    int rc = run_args(e->smallest, NULL, NULL, "sim", n, NULL, false, k->budget, &r, shown, len);
    if (rc)
        return rc;
    rc = r.status || !figure_after(r.output, e->after, fig)
             ? cli_error("exercise %s: '%s' printed no '%s' figure (exit %d)", e->id, shown,
                         e->after, r.status)
             : 0;
    free(r.output);
    return rc;
}

static int check_smallest(check_ctx *k, const double *ans, size_t nans)
{
    const exercise *e = k->e;
    if (nans != 1 || ans[0] != floor(ans[0]) || ans[0] < 1 || ans[0] > 100000)
        return cli_error("exercise %s asks for one whole number from 1 to 100000", e->id);
    long n = (long)ans[0];
    double fig, prev = 0;
    char shown[1024], pshown[1024], why[1400], what[1400];
    int rc = figure_at(k, n, &fig, shown, sizeof shown);
    if (!rc && n > 1)
        rc = figure_at(k, n - 1, &prev, pshown, sizeof pshown);
    if (rc)
        return rc;
    cli_textf(what, sizeof what, "%s prints '%s%g', at most %g; with %ld it is above",
             shown, e->after, fig, e->at_most, n - 1);
    bool enough = fig <= e->at_most, smallest = n == 1 || prev > e->at_most;
    if (!enough)
        cli_textf(why, sizeof why, "%s prints '%s%g', above %g: %ld is not enough", shown,
                 e->after, fig, e->at_most, n);
    else if (!smallest)
        cli_textf(why, sizeof why, "%s already prints '%s%g', at most %g: %ld is not the "
                 "smallest", pshown, e->after, prev, e->at_most, n);
    const char *hint = NULL;
    for (size_t m = 0; m < e->nmistakes; m++)
        if (e->mistakes[m].value == ans[0])
            hint = e->mistakes[m].says;
    step_result(k, "your answer", what, enough && smallest ? NULL : why, hint, NULL);
    return 0;
}

/* The value of the best-command's column at n, times its scale. */
static int best_value_at(check_ctx *k, long n, double *v, char *shown, size_t len)
{
    const exercise *e = k->e;
    child_run r;
    int rc = run_args(e->best.run, NULL, NULL, "sim", n, NULL, false, k->budget, &r, shown,
                      len);
    if (rc)
        return rc;
    if (r.status || csv_column(r.output, e->best.column, v, 1) != 1)
        rc = cli_error("exercise %s: '%s' gave no column '%s' (exit %d: %.*s)", e->id, shown,
                       e->best.column, r.status, (int)strcspn(r.output, "\n"), r.output);
    free(r.output);
    *v *= e->best.scale;
    return rc;
}

#define BEST_MOST 100000 /* the largest n a best-answer may give */

/* Whether the best-command's figure stops falling after m: f(m + 1) >=
 * f(m). */
static int best_rises(check_ctx *k, long m, bool *rises)
{
    char shown[1024];
    double at, next;
    int rc = best_value_at(k, m, &at, shown, sizeof shown);
    if (!rc)
        rc = best_value_at(k, m + 1, &next, shown, sizeof shown);
    *rises = !rc && next >= at;
    return rc;
}

/* The answer "n value": n must give the least value of the best-command
 * (ties allowed), value must be that least value.  The figure is convex
 * in n (a term growing with n plus one falling with it), so whether it
 * rises after m is false up to the best n and true from there: doubling
 * from the student's n finds a point past it, halving the interval finds
 * it, in about 2 log2(n) runs of each of two commands. */
static int check_best(check_ctx *k, const double *ans, size_t nans)
{
    const exercise *e = k->e;
    if (nans != 2 || ans[0] != floor(ans[0]) || ans[0] < 1 || ans[0] >= BEST_MOST)
        return cli_error("exercise %s asks for two numbers: a whole number from 1 to %d, "
                         "then a figure", e->id, BEST_MOST - 1);
    long n = (long)ans[0], lo = 1, hi = n;
    char shown[1024], best_shown[1024];
    double at_n, least;
    bool rises;
    int rc = best_value_at(k, n, &at_n, shown, sizeof shown);
    if (!rc)
        rc = best_rises(k, hi, &rises);
    while (!rc && !rises && hi < BEST_MOST - 1) {
        lo = hi + 1;
        hi = hi * 2 < BEST_MOST - 1 ? hi * 2 : BEST_MOST - 1;
        rc = best_rises(k, hi, &rises);
    }
    while (!rc && lo < hi) {
        long mid = lo + (hi - lo) / 2;
        rc = best_rises(k, mid, &rises);
        if (rises)
            hi = mid;
        else
            lo = mid + 1;
    }
    if (!rc)
        rc = best_value_at(k, lo, &least, best_shown, sizeof best_shown);
    if (rc)
        return rc;
    char what[1400];
    cli_textf(what, sizeof what, "number 1 gives the least %s of %s, number 2 is that "
              "figure within %g%%", e->best.column, shown, e->tolerance * 100);
    bool n_ok = at_n <= least, v_ok = fabs(ans[1] - least) <= e->tolerance * fabs(least);
    if (n_ok && v_ok) {
        step_result(k, "your answer", what, NULL, NULL, NULL);
        return 0;
    }
    k->failed++;
    printf("  FAIL  your answer\n        %s\n", what);
    if (!n_ok) {
        const char *says = NULL;
        for (size_t m = 0; m < e->nmistakes; m++)
            if (e->mistakes[m].number == 1 && e->mistakes[m].value == ans[0])
                says = e->mistakes[m].says;
        printf("        number 1 (%ld) is too %s: %s\n", n, lo > n ? "low" : "high",
               says ? says : lo > n ? "more gives a lower figure" : "fewer gives a lower figure");
    }
    if (!v_ok) {
        char words[300];
        how_wrong(e, 1, ans[1], least, words, sizeof words);
        printf("        number 2 (%.6g) is %s\n", ans[1], words);
    }
    return 0;
}

/* ---- the subcommands ---- */

static int ex_list(const course *c)
{
    const char *h[] = {"id", "title", "chapter", "kind"};
    table t;
    if (table_init(&t, 4, h))
        return cli_error("out of memory");
    for (size_t i = 0; i < c->n; i++) {
        table_add(&t, "%s", c->ex[i].id);
        table_add(&t, "%s", c->ex[i].title);
        table_add(&t, "%s", c->ex[i].chapter);
        table_add(&t, "%s", c->ex[i].ask ? "answer" : "code");
    }
    table_print(&t, stdout, 0);
    table_release(&t);
    printf("\n`commlab exercise show ID` prints one; `commlab exercise check ID` checks "
           "your work.\n");
    return CLI_EXIT_OK;
}

static void print_indented(const char *text, const char *indent)
{
    const char *p = text;
    while (*p) {
        const char *end = strchr(p, '\n');
        int len = end ? (int)(end - p) : (int)strlen(p);
        printf("%s%.*s\n", len ? indent : "", len, p);
        if (!end)
            break;
        p = end + 1;
    }
}

static int ex_show(const exercise *e)
{
    printf("exercise %s: %s  (chapters/%s)\n\n", e->id, e->title, e->chapter);
    print_indented(e->task, "  ");
    if (e->start)
        printf("\n  start from: %s\n", e->start);
    if (e->file)
        printf("  your file:  %s (defines int pattern(cl_comm *c, const cl_args *a))\n",
               e->file);
    printf("\ncommands:\n");
    for (size_t i = 0; i < e->ncommands; i++)
        printf("  $ %s\n", e->commands[i]);
    printf("\nthe check:\n");
    if (e->ask) {
        printf("  asks: %s\n", e->ask);
        for (size_t i = 0; i < e->nvalues; i++)
            if (e->values[i].column)
                printf("  compares with column %s of: commlab %s\n", e->values[i].column,
                       e->values[i].run);
            else
                printf("  compares with the figure after '%s' in: commlab %s\n",
                       e->values[i].after, e->values[i].run);
        if (e->smallest)
            printf("  runs: commlab %s  (with your number as {n}; the figure after '%s' must "
                   "be at most %g, and above it with one less)\n", e->smallest, e->after,
                   e->at_most);
        if (e->best.run)
            printf("  runs: commlab %s  (with your first number as {n}: its column %s must be "
                   "the least any n gives; your second number is that figure)\n", e->best.run,
                   e->best.column);
        printf("  $ commlab exercise check %s --answer \"...\"\n", e->id);
    } else {
        for (size_t i = 0; i < e->nsteps; i++) {
            const ex_step *s = &e->steps[i];
            printf("  commlab %s: exit %ld", s->run, s->exit);
            if (s->output || s->every_rank)
                printf(", what the ranks print");
            if (s->messages >= 0)
                printf(", %ld messages per iteration", s->messages);
            if (s->route)
                printf(", where each message goes");
            if (s->holds || s->sums)
                printf(", the data each rank ends with");
            if (s->uses)
                printf(", calls %s", s->uses);
            if (s->avoids)
                printf(", never %s", s->avoids);
            if (s->same_time_as)
                printf(", the modeled time of: commlab %s%s", s->same_time_as,
                       s->factor != 1 ? " (x factor)" : "");
            printf("\n");
        }
        printf("  (every run also gets --debug: a misused buffer fails the step)\n");
        char names[128];
        printf("  ({file} is your file; {backend} is %s, or the one --backend names: %s)\n",
               backend_default()->name, backend_names(names, sizeof names, false, " or "));
        printf("  $ commlab exercise check %s --file %s\n", e->id, e->file);
    }
    return CLI_EXIT_OK;
}

/* The file a code exercise works on: --file, the solution, or the
 * exercise's file name in the current folder. */
static int pick_file(const exercise *e, const char *file, bool solution, char *buf,
                     size_t len)
{
    if (solution)
        cli_textf(buf, len, "%s/%s", e->dir, e->solution);
    else
        cli_textf(buf, len, "%s", file ? file : e->file);
    if (access(buf, R_OK) != 0) {
        if (solution)
            return cli_error("exercise %s: the solution '%s' is missing: %s", e->id, buf,
                             strerror(errno));
        return cli_error("exercise %s: no file '%s' here (%s): write it (`commlab exercise "
                         "show %s`), pass --file, or try --solution", e->id, buf,
                         strerror(errno), e->id);
    }
    return 0;
}

/* Replaces the exercise's file name in a command with the file used. */
static void substitute_file(const char *cmd, const char *name, const char *file, char *out,
                            size_t len)
{
    const char *hit = name ? strstr(cmd, name) : NULL;
    if (!hit)
        cli_textf(out, len, "%s", cmd);
    else
        cli_textf(out, len, "%.*s%s%s", (int)(hit - cmd), cmd, file, hit + strlen(name));
}

static int ex_run(const exercise *e, const char *file, bool solution, bool debug,
                  double budget)
{
    char path[PATH_MAX];
    int rc;
    if (e->file && (rc = pick_file(e, file, solution, path, sizeof path)))
        return rc;
    int worst = 0;
    for (size_t i = 0; i < e->ncommands; i++) {
        char cmd[2048];
        substitute_file(e->commands[i], e->file, e->file ? path : NULL, cmd, sizeof cmd);
        if (strncmp(cmd, "commlab ", 8) != 0) {
            printf("$ %s   (not a commlab command: run it yourself)\n", cmd);
            continue;
        }
        long want = 0;
        char *mark = strstr(cmd, "# exit ");
        if (mark) {
            want = strtol(mark + 7, NULL, 10);
            *mark = 0;
        }
        if (debug && strncmp(cmd, "commlab run ", 12) == 0) {
            size_t len = strlen(cmd);
            while (len > 0 && cmd[len - 1] == ' ')
                cmd[--len] = 0;
            cli_textf(cmd + len, sizeof cmd - len, " --debug");
        }
        printf("$ %s\n", cmd);
        child_run r;
        char shown[2048];
        if ((rc = run_args(cmd + 8, path, path, "sim", 0, NULL, true, budget, &r, shown,
                           sizeof shown)))
            return rc;
        free(r.output);
        if (r.status != want) {
            printf("(exit %d, expected %ld)\n", r.status, want);
            worst = r.status ? r.status : CLI_EXIT_CHECK;
        }
        printf("\n");
    }
    return worst;
}

static int ex_check(const exercise *e, const char *file, bool solution, const char *answer,
                    const char *backend, bool debug, double budget)
{
    char path[PATH_MAX];
    int rc;
    check_ctx k = {.e = e, .backend = backend, .debug = debug, .budget = budget};
    if (e->ask) {
        if (file)
            return cli_error("exercise %s is answered with --answer, not --file", e->id);
        if (!answer && !solution)
            return cli_error("exercise %s asks: %s\nanswer with: commlab exercise check %s "
                             "--answer \"...\"", e->id, e->ask, e->id);
        printf("exercise %s: %s (%s)\n", e->id, e->title,
               solution ? "the reference answer" : "your answer");
        double ans[64];
        size_t n;
        if ((rc = parse_answer(solution ? e->solution_answer : answer, ans, 64, &n)))
            return rc;
        rc = e->smallest    ? check_smallest(&k, ans, n)
             : e->best.run ? check_best(&k, ans, n)
                           : check_values(&k, ans, n);
    } else {
        if (answer)
            return cli_error("exercise %s is checked on a pattern file (--file), not "
                             "--answer", e->id);
        if ((rc = pick_file(e, file, solution, path, sizeof path)))
            return rc;
        char label[PATH_MAX];
        if (solution)
            cli_textf(label, sizeof label, "chapters/%s/%s", e->chapter, e->solution);
        k.file = path;
        k.label = solution ? label : path;
        printf("exercise %s: %s (%s, %s)\n", e->id, e->title, k.label, backend);
        for (size_t i = 0; !rc && i < e->nsteps; i++)
            rc = check_step(&k, &e->steps[i]);
        if (rc == 1) /* the file did not build: the verdict stands */
            rc = 0;
    }
    if (rc)
        return rc;
    if (k.failed == 0 && e->explain) {
        printf("\nwhy:\n");
        print_indented(e->explain, "  ");
    }
    if (k.failed)
        printf("\nFAILED: %d of %d checks passed\n", k.passed, k.passed + k.failed);
    else
        printf(k.passed == 1 ? "\npassed: the check\n" : "\npassed: all %d checks\n", k.passed);
    return k.failed ? CLI_EXIT_CHECK : CLI_EXIT_OK;
}

/* "unknown action 'chek'; did you mean 'check'?" */
static int unknown_action(const char *verb)
{
    static const char *const verbs[] = {"list", "show", "run", "check"};
    cli_near near;
    cli_near_init(&near, verb);
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
        cli_near_add(&near, verbs[i]);
    char hint[40] = "";
    if (near.best)
        cli_textf(hint, sizeof hint, "; did you mean '%s'?", near.best);
    return cli_error("exercise: unknown action '%s'%s (list, show, run, check)", verb, hint);
}

int cmd_exercise(int argc, char **argv)
{
    static const struct option opts[] = {
        {"file", required_argument, NULL, OPT_FILE},
        {"solution", no_argument, NULL, OPT_SOLUTION},
        {"answer", required_argument, NULL, OPT_ANSWER},
        {"backend", required_argument, NULL, 'b'},
        {"debug", no_argument, NULL, OPT_DEBUG},
        {"no-debug", no_argument, NULL, OPT_NO_DEBUG},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *file = NULL, *answer = NULL, *backend = NULL;
    bool solution = false, debug = false, no_debug = false, budget_given = false;
    double budget = STEP_BUDGET;
    int c;
    while ((c = getopt_long(argc, argv, ":b:h", opts, NULL)) != -1) {
        switch (c) {
        case OPT_TIMEOUT:
            if (run_parse_timeout(optarg, &budget))
                return CLI_EXIT_USAGE;
            budget_given = true;
            break;
        case OPT_FILE: file = optarg; break;
        case OPT_SOLUTION: solution = true; break;
        case OPT_ANSWER: answer = optarg; break;
        case 'b': backend = optarg; break;
        case OPT_DEBUG: debug = true; break;
        case OPT_NO_DEBUG: no_debug = true; break;
        case 'h': fputs(cmd_exercise_usage, stdout); return CLI_EXIT_OK;
        default: return cli_bad_option("exercise", opts, argv, c);
        }
    }
    if (optind >= argc)
        return cli_error("exercise: list, show, run or check?\ntry 'commlab help exercise'");
    const char *verb = argv[optind++];
    bool list = strcmp(verb, "list") == 0;
    if (!list && strcmp(verb, "show") != 0 && strcmp(verb, "run") != 0 &&
        strcmp(verb, "check") != 0)
        return unknown_action(verb);
    const char *id = NULL;
    if (!list) {
        if (optind >= argc)
            return cli_error("exercise %s: which exercise? (`commlab exercise list`)", verb);
        id = argv[optind++];
    }
    int rc = cli_no_extra("exercise", argc, argv);
    if (rc)
        return rc;
    if (file && solution)
        return cli_error("exercise: give either --file or --solution, not both");
    if (answer && solution)
        return cli_error("exercise: give either --answer or --solution, not both");
    bool checking = strcmp(verb, "check") == 0, running = strcmp(verb, "run") == 0;
    if ((file || solution) && !checking && !running)
        return cli_error("exercise %s: --file and --solution apply to run and check", verb);
    if ((answer || backend) && !checking)
        return cli_error("exercise %s: --answer and --backend apply to check", verb);
    if (debug && !checking && !running)
        return cli_error("exercise %s: --debug applies to run and check", verb);
    if (no_debug && !checking)
        return cli_error("exercise %s: --no-debug applies to check", verb);
    if (debug && no_debug)
        return cli_error("exercise: give either --debug or --no-debug, not both");
    if (budget_given && !checking && !running)
        return cli_error("exercise %s: --timeout applies to run and check", verb);
    const backend_info *be = backend_default();
    if (backend && (rc = backend_lookup(backend, "exercise check", false, &be)))
        return rc;
    backend = be->name;
    course co;
    if ((rc = course_load(&co)))
        return rc;
    const exercise *e = NULL;
    if (id && !(e = course_find(&co, id))) {
        rc = cli_error("unknown exercise '%s' (`commlab exercise list` lists them)", id);
    } else if (list) {
        rc = ex_list(&co);
    } else if (strcmp(verb, "show") == 0) {
        rc = ex_show(e);
    } else if (running) {
        rc = ex_run(e, file, solution, debug, budget);
    } else {
        rc = ex_check(e, file, solution, answer, backend, !no_debug, budget);
    }
    course_release(&co);
    return rc;
}
