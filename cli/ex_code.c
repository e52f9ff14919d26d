/* ex_code.c - checks one step of a code exercise (cli/exercise.h).
 *
 * A step is a commlab command run on the student's file and what it must
 * show.  What its YAML names is checked first (exit status, printed
 * lines, messages per iteration, where each goes, the data each rank ends
 * with, the calls used, the modeled time), then, for a step that expects
 * success, the same command is run on the reference solution (modeled)
 * and the two runs are compared through the probe compiled into both
 * (include/commlab_probe.h; the comparisons are ex_compare.c's):
 *
 *   - no rank returns with a request it never completed;
 *   - every rank sends the same messages as the reference, in the same
 *     order (any order where the step allows it): the same destination,
 *     the same length and the same bytes;
 *   - every rank ends with the blocks the reference's ranks end with, and
 *     a block that holds another rank's data got it through its own
 *     completed receives, not from a cl_fill of its own;
 *   - (same_lines) every "rank R: " line the reference prints.
 *
 * The reference is the schedule: an algorithm that sends the same count to
 * other ranks, or the right one only at the announced sizes, differs in
 * some message.  Steps draw their rank counts and sizes anew at each check
 * (`ranks:`, `bytes:`, `group:`), shown only in the verdict.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/exercise.h"
#include "cli/student.h"
#include "commlab.h"
#include "core/units.h"

/* ---- drawing a step's values ---- */

static uint64_t draw_bits(void)
{
    uint64_t v = 0;
    if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v)
        v = (uint64_t)getpid() * 0x9e3779b97f4a7c15ULL ^ (uint64_t)time(NULL);
    return v;
}

/* A value of d, uniform over the range's values that fit (the loader
 * made sure one does); -1 when nothing is to be drawn. */
static long draw(const ex_draw *d)
{
    if (d->lo > d->hi)
        return -1;
    if (d->only == DRAW_POW2) {
        long pows[64];
        int n = 0;
        for (long v = 1; v <= d->hi && n < 64; v *= 2)
            if (v >= d->lo)
                pows[n++] = v;
        return pows[draw_bits() % (uint64_t)n];
    }
    /* every other filter keeps at least an eighth of the values */
    for (;;) {
        long v = d->lo + (long)(draw_bits() % (uint64_t)(d->hi - d->lo + 1));
        if (ex_draw_fits(d, v))
            return v;
    }
}

/* ---- the printed lines ---- */

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

void ex_verdict(check_ctx *k, const char *shown, const char *what, const char *why,
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

/* The line of output that is exactly `line`, or begins with it when
 * prefix is set: copied into buf (when buf is not NULL). */
static bool find_line(const char *output, const char *line, bool prefix, char *buf,
                      size_t len)
{
    size_t n = strlen(line);
    for (const char *p = output; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        size_t l = strcspn(p, "\n");
        if (strncmp(p, line, n) == 0 && (prefix || l == n)) {
            if (buf)
                cli_textf(buf, len, "%.*s", (int)l, p);
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
    if (find_line(output, label, true, line, sizeof line))
        cli_textf(why, len, "printed '%s': not the value the exercise asks for", line);
    else
        cli_textf(why, len, "printed no line '%s...'", label);
}

/* Every rank r prints "rank r: " + s->every_rank with {r} and {n}. */
static void check_every_rank(const ex_step *s, long n, const char *output, char *why,
                             size_t len)
{
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
        if (!find_line(output, line, false, NULL, 0)) {
            cli_textf(why, len, "rank %ld does not print '%s'", r, text);
            return;
        }
    }
}

/* Every "rank R: " line of ref's output is a line of mine. */
static void check_same_lines(const char *mine, const char *ref, char *why, size_t len)
{
    for (const char *p = ref; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        size_t l = strcspn(p, "\n");
        long r;
        char line[600];
        cli_textf(line, sizeof line, "%.*s", (int)l, p);
        if (sscanf(line, "rank %ld:", &r) != 1 || find_line(mine, line, false, NULL, 0))
            continue;
        why_output(line, mine, why, len);
        return;
    }
}

/* ---- one step ---- */

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
static int check_time(check_ctx *k, const ex_step *s, const ex_subst *sub, const child_run *r,
                      char *why, size_t len, char *what, size_t wlen, int *used)
{
    child_run ref;
    char rshown[2048];
    double mine, theirs;
    const char *csvopt[] = {"--csv", NULL};
    ex_subst rsub = *sub;
    rsub.backend = "sim";
    int rc = ex_run_args(s->same_time_as, &rsub, csvopt, false, k->budget, &ref, rshown,
                         sizeof rshown);
    if (rc)
        return rc;
    if (ex_csv_column(r->output, "time_median_s", &mine, 1) != 1 ||
        ex_csv_column(ref.output, "time_median_s", &theirs, 1) != 1 || ref.status) {
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

/* Runs the step's line on file (sub) with the probe reporting into
 * probe; the run's result in *r. */
static int run_probed(check_ctx *k, const char *line, const ex_subst *sub, const char *probe,
                      const char *const *extra, child_run *r, char *shown, size_t shown_len)
{
    unlink(probe);
    setenv(STUDENT_PROBE_ENV, probe, 1);
    if (k->e->seeds)
        setenv("COMMLAB_PROBE_SEEDS", k->e->seeds, 1);
    int rc = ex_run_args(line, sub, extra, false, k->budget, r, shown, shown_len);
    unsetenv(STUDENT_PROBE_ENV);
    unsetenv("COMMLAB_PROBE_SEEDS");
    return rc;
}

/* The exit status the step expects, against what the run gave. */
static void check_exit(check_ctx *k, const ex_step *s, const child_run *r, char *why,
                       size_t len, ex_fault *fault)
{
    char budget[UNITS_BUF];
    units_time_str(budget, k->budget);
    /* --timeout's report (sim/fault.c, real/launch.c): the one message the
     * grader still reads, to say what the budget was. */
    const char *limit = strstr(r->output, "the run took longer than --timeout");
    if (!limit)
        limit = strstr(r->output, "made no progress");
    if (r->stopped) {
        cli_textf(why, len, "took longer than its budget of %s per step and was stopped",
                  budget);
    } else if (limit && r->status != s->exit) {
        const char *start = limit;
        while (start > r->output && start[-1] != '\n')
            start--;
        if (strncmp(start, "commlab: ", 9) == 0)
            start += 9;
        cli_textf(why, len, "took longer than its budget of %s per step: %.*s", budget,
                  (int)strcspn(start, "\n"), start);
    } else if (r->status != s->exit) {
        cli_textf(why, len, "exited %d (%s), expected %ld (%s)", r->status,
                  status_word(r->status), s->exit, status_word(s->exit));
        *fault = r->status == CLI_EXIT_DEADLOCK ? FAULT_DEADLOCK
                 : r->status == CLI_EXIT_CHECK  ? FAULT_FAILED
                                                : FAULT_EXIT;
    }
}

/* The checks of the step's own keys, on the student's run r and its probe
 * report pd. */
static void check_keys(const ex_step *s, long nranks, const child_run *r, probe_data *pd,
                       char *why, size_t len, ex_fault *fault)
{
    double v;
    if (!why[0] && s->output && !find_line(r->output, s->output, false, NULL, 0)) {
        why_output(s->output, r->output, why, len);
        *fault = FAULT_OUTPUT;
    }
    if (!why[0] && s->every_rank) {
        check_every_rank(s, nranks, r->output, why, len);
        *fault = FAULT_OUTPUT;
    }
    if (!why[0] && s->messages >= 0) {
        if (ex_csv_column(r->output, "messages", &v, 1) != 1)
            cli_textf(why, len, "printed no table of results");
        else if (v != (double)s->messages)
            cli_textf(why, len, "sent %.0f messages per iteration, expected %ld", v,
                      s->messages);
        *fault = FAULT_MESSAGES;
    }
    for (long rank = 0; !why[0] && s->exit == 0 && rank < pd->nranks; rank++)
        if (pd->leaks[rank]) {
            cli_textf(why, len, "rank %ld returned with %ld request%s it never completed: "
                      "every cl_isend and cl_irecv needs a cl_wait, a cl_waitall or a cl_test "
                      "that reports it done before the pattern returns", rank, pd->leaks[rank],
                      pd->leaks[rank] == 1 ? "" : "s");
            *fault = FAULT_LEAK;
        }
    if (!why[0] && s->route) {
        ex_check_route(s, pd, why, len);
        *fault = FAULT_ROUTE;
    }
    if (!why[0] && s->holds) {
        ex_check_holds(s, pd, why, len);
        *fault = FAULT_DATA;
    }
    if (!why[0] && s->sums) {
        ex_check_sums(s, pd, why, len);
        *fault = FAULT_DATA;
    }
    if (!why[0] && (s->uses || s->avoids)) {
        ex_check_calls(s, pd, why, len);
        *fault = FAULT_CALLS;
    }
}

/* What the step checked, for its ok line. */
static void describe(const ex_step *s, char *what, size_t len, int *used)
{
    cli_appendf(what, len, used, "exit %ld (%s)", s->exit, status_word(s->exit));
    if (s->uses)
        cli_appendf(what, len, used, ", calls %s", s->uses);
    if (s->avoids)
        cli_appendf(what, len, used, ", never %s", s->avoids);
    if (s->output || s->every_rank || s->same_lines)
        cli_appendf(what, len, used, ", prints what the task asks");
    if (s->messages >= 0)
        cli_appendf(what, len, used, ", %ld messages", s->messages);
    if (s->route)
        cli_appendf(what, len, used, ", each from and to the right rank");
    if (s->holds || s->sums)
        cli_appendf(what, len, used, ", every rank ends with the right data");
    if (s->reference)
        cli_appendf(what, len, used, ", every message as the task's schedule (to, size, "
                    "data%s), every request completed", s->any_order ? "" : ", order");
}

/* The reference solution run as the student's was; compares the two. */
static int check_reference(check_ctx *k, const ex_step *s, const char *line,
                           const ex_subst *sub, const child_run *r, probe_data *mine,
                           const char *dir, char *why, size_t len, ex_fault *fault)
{
    char sol[PATH_MAX + 300], rprobe[PATH_MAX + 16], rshown[2048];
    cli_textf(sol, sizeof sol, "%s/%s", k->e->dir, k->e->solution);
    cli_textf(rprobe, sizeof rprobe, "%s/reference.txt", dir);
    ex_subst rsub = *sub;
    rsub.file = rsub.label = sol;
    rsub.backend = "sim";
    child_run ref;
    int rc = run_probed(k, line, &rsub, rprobe, NULL, &ref, rshown, sizeof rshown);
    if (rc)
        return rc;
    probe_data rd;
    if (ref.status != 0) {
        rc = cli_error("exercise %s: the reference solution fails `%s` (exit %d): %.*s",
                       k->e->id, rshown, ref.status, (int)strcspn(ref.output, "\n"),
                       ref.output);
    } else if ((rc = ex_probe_read(rprobe, mine->nranks, &rd)) != 0) {
        rc = cli_error("out of memory reading the reference's report");
    } else {
        ex_compare_reference(s, mine, &rd, why, len, fault);
        if (!why[0] && s->same_blocks) {
            ex_compare_blocks(mine, &rd, why, len);
            *fault = FAULT_DATA;
        }
        if (!why[0] && s->same_lines) {
            check_same_lines(r->output, ref.output, why, len);
            *fault = FAULT_OUTPUT;
        }
        ex_probe_release(&rd);
    }
    unlink(rprobe);
    free(ref.output);
    return rc;
}

/* Draws the step's values into sub. */
static void draw_step(const ex_step *s, ex_subst *sub)
{
    sub->group = draw(&s->group);
    sub->ranks = draw(&s->ranks);
    if (s->ranks.times && sub->ranks > 0 && sub->group > 0)
        sub->ranks *= sub->group;
    sub->bytes = draw(&s->bytes);
}

int ex_code_step(check_ctx *k, const ex_step *s)
{
    char dir[PATH_MAX] = "", probe[PATH_MAX + 16];
    int rc;
    if ((rc = scratch_dir(dir, sizeof dir)))
        return rc;
    cli_textf(probe, sizeof probe, "%s/probe.txt", dir);
    ex_subst sub = ex_subst_none();
    sub.file = k->file, sub.label = k->label, sub.backend = k->backend;
    draw_step(s, &sub);
    /* --debug and --timeout go into the command shown, so the student can run it. */
    char line[2300];
    cli_textf(line, sizeof line, "%s%s", s->run,
              k->debug && strncmp(s->run, "run ", 4) == 0 ? " --debug" : "");
    if (k->budget > 0 && strncmp(s->run, "run ", 4) == 0) {
        size_t used = strlen(line);
        cli_textf(line + used, sizeof line - used, " --timeout %gs", k->budget);
    }
    const char *csv[] = {"--csv", NULL};
    child_run r;
    char shown[2048], why[600] = "", what[1400] = "";
    rc = run_probed(k, line, &sub, probe, s->messages >= 0 || s->same_time_as ? csv : NULL, &r,
                    shown, sizeof shown);
    if (rc) {
        rmdir(dir);
        return rc;
    }
    long nranks = ex_command_ranks(shown + strlen("commlab"));
    ex_fault fault = FAULT_COUNT;
    probe_data pd;
    if (ex_probe_read(probe, nranks, &pd)) {
        free(r.output);
        unlink(probe), rmdir(dir);
        return cli_error("out of memory reading a run's report");
    }
    check_exit(k, s, &r, why, sizeof why, &fault);
    if (!why[0])
        check_keys(s, nranks, &r, &pd, why, sizeof why, &fault);
    if (!why[0] && s->reference && !k->is_solution) /* the solution matches itself */
        rc = check_reference(k, s, line, &sub, &r, &pd, dir, why, sizeof why, &fault);
    int used = 0;
    describe(s, what, sizeof what, &used);
    if (!rc && !why[0] && s->same_time_as) {
        rc = check_time(k, s, &sub, &r, why, sizeof why, what, sizeof what, &used);
        fault = FAULT_TIME;
    }
    ex_probe_release(&pd);
    unlink(probe), rmdir(dir);
    if (!rc) {
        const char *hint = fault < FAULT_COUNT && s->hints[fault] ? s->hints[fault] : s->hint;
        ex_verdict(k, shown, what, why[0] ? why : NULL, hint, why[0] ? &r : NULL);
    }
    free(r.output);
    return rc;
}
