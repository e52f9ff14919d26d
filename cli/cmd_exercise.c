/* cmd_exercise.c - `commlab exercise list|show|run|check`: the course's
 * exercises, read from chapters/NN-topic/exercises.yaml (cli/course.h).
 *
 * An exercise is one of two kinds.
 *
 *   code    the student writes a pattern in a file of their own (`file:`);
 *           `check:` is a list of steps, each a commlab command run on the
 *           student's file and what it must show, and the same command run
 *           on the reference solution to compare with (cli/ex_code.c runs the steps,
 *           cli/ex_compare.c compares what the probe recorded).
 *   answer  the student answers with numbers (`--answer "..."`), checked
 *           against what commlab computes (cli/ex_answer.c).
 *
 * Steps whose command holds {backend} run on the backend asked for
 * (`--backend`, sim by default); the others are modeled and
 * deterministic.  The explanation of an exercise is printed once the
 * student has passed it (cli/ex_state.c).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/backend.h"
#include "cli/cli.h"
#include "cli/course.h"
#include "cli/exercise.h"
#include "cli/near.h"
#include "cli/run_size.h"
#include "cli/student.h"
#include "core/table.h"

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
            if (s->reference)
                printf(", every message and the data every rank ends with as the reference "
                       "solution's");
            if (s->same_time_as)
                printf(", the modeled time of: commlab %s%s", s->same_time_as,
                       s->factor != 1 ? " (x factor)" : "");
            printf("\n");
        }
        printf("  (every run also gets --debug: a misused buffer fails the step)\n");
        printf("  ({ranks}, {bytes} and {group} are drawn anew at every check: your pattern "
               "must work for any)\n");
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
        ex_subst sub = ex_subst_none();
        sub.file = sub.label = path;
        sub.backend = "sim";
        if ((rc = ex_run_args(cmd + 8, &sub, NULL, true, budget, &r, shown, sizeof shown)))
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

/* Whether the student's file compiles and loads as it will in every
 * step (with the probe): a file that does not fails every step alike.
 * The compiler's messages are printed as it wrote them. */
static bool file_builds(const char *path)
{
    setenv(STUDENT_PROBE_ENV, "/dev/null", 1);
    student_pattern sp;
    fflush(NULL);
    int rc = student_load(&sp, path);
    unsetenv(STUDENT_PROBE_ENV);
    student_unload(&sp);
    return rc == 0;
}

static int check_answer(check_ctx *k, bool solution, const char *answer)
{
    const exercise *e = k->e;
    if (!answer && !solution)
        return cli_error("exercise %s asks: %s\nanswer with: commlab exercise check %s "
                         "--answer \"...\"", e->id, e->ask, e->id);
    printf("exercise %s: %s (%s)\n", e->id, e->title,
           solution ? "the reference answer" : "your answer");
    double ans[64];
    int digits[64];
    size_t n;
    int rc = ex_answer_parse(solution ? e->solution_answer : answer, ans, digits, 64, &n);
    return rc ? rc : ex_answer_check(k, ans, digits, n);
}

static int check_code(check_ctx *k, const char *file, bool solution)
{
    const exercise *e = k->e;
    char path[PATH_MAX], label[PATH_MAX];
    int rc = pick_file(e, file, solution, path, sizeof path);
    if (rc)
        return rc;
    if (solution)
        cli_textf(label, sizeof label, "chapters/%s/%s", e->chapter, e->solution);
    k->file = path;
    k->label = solution ? label : path;
    k->is_solution = solution;
    printf("exercise %s: %s (%s, %s)\n", e->id, e->title, k->label, k->backend);
    if (!file_builds(path)) {
        printf("  FAIL  %s does not compile or load (the compiler's messages are above); "
               "no step was run\n", k->label);
        k->failed++;
        return 0;
    }
    for (size_t i = 0; !rc && i < e->nsteps; i++)
        rc = ex_code_step(k, &e->steps[i]);
    return rc;
}

static int ex_check(const exercise *e, const char *file, bool solution, const char *answer,
                    const char *backend, bool debug, double budget)
{
    check_ctx k = {.e = e, .backend = backend, .debug = debug, .budget = budget};
    int rc;
    if (e->ask && file)
        return cli_error("exercise %s is answered with --answer, not --file", e->id);
    if (!e->ask && answer)
        return cli_error("exercise %s is checked on a pattern file (--file), not --answer",
                         e->id);
    k.directions = solution || ex_state_tries(e->id) < EX_DIRECTIONS;
    rc = e->ask ? check_answer(&k, solution, answer) : check_code(&k, file, solution);
    if (rc)
        return rc;
    if (!solution)
        ex_state_record(e->id, k.failed == 0);
    if (k.failed)
        printf("\nFAILED: %d of %d checks passed\n", k.passed, k.passed + k.failed);
    else
        printf(k.passed == 1 ? "\npassed: the check\n" : "\npassed: all %d checks\n", k.passed);
    if (k.failed == 0 && e->explain) {
        if (solution && !ex_state_passed(e->id)) {
            printf("\n(the explanation is shown once you pass this exercise with your own "
                   "work)\n");
        } else {
            printf("\nwhy:\n");
            print_indented(e->explain, "  ");
        }
    }
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

/* Which options a command line gave, for check_given. */
typedef struct ex_given {
    bool code;           /* --file or --solution */
    bool check_only;     /* --answer or --backend */
    bool answer_and_sol; /* --answer with --solution */
    bool file_and_sol;   /* --file with --solution */
    bool debug, no_debug, timeout;
} ex_given;

/* Options that do not go together, or not with verb: the exit status
 * after saying why, or 0. */
static int check_given(const char *verb, bool checking, bool running, const ex_given *g)
{
    if (g->file_and_sol)
        return cli_error("exercise: give either --file or --solution, not both");
    if (g->answer_and_sol)
        return cli_error("exercise: give either --answer or --solution, not both");
    if (g->code && !checking && !running)
        return cli_error("exercise %s: --file and --solution apply to run and check", verb);
    if (g->check_only && !checking)
        return cli_error("exercise %s: --answer and --backend apply to check", verb);
    if (g->debug && !checking && !running)
        return cli_error("exercise %s: --debug applies to run and check", verb);
    if (g->no_debug && !checking)
        return cli_error("exercise %s: --no-debug applies to check", verb);
    if (g->debug && g->no_debug)
        return cli_error("exercise: give either --debug or --no-debug, not both");
    if (g->timeout && !checking && !running)
        return cli_error("exercise %s: --timeout applies to run and check", verb);
    return 0;
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
    double budget = EX_STEP_BUDGET;
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
    bool checking = strcmp(verb, "check") == 0, running = strcmp(verb, "run") == 0;
    const ex_given g = {file || solution, answer || backend, answer && solution,
                        file && solution, debug, no_debug, budget_given};
    if ((rc = check_given(verb, checking, running, &g)))
        return rc;
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
