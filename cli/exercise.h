/*
 * exercise.h - the parts of `commlab exercise` (cli/cmd_exercise.c), each
 * in a file of its own:
 *
 *   ex_child.c   runs commlab itself as a child and collects its output
 *   ex_probe.c   reads what include/commlab_probe.h reported of a run
 *   ex_code.c    checks a code exercise, step by step, against its YAML
 *                and against the reference solution run the same way
 *   ex_compare.c what the probe saw of a run, against the step's keys
 *                and against the reference solution's run
 *   ex_answer.c  checks an answer exercise's numbers
 *   ex_state.c   what a student has passed and tried (a file per user)
 *
 * Every check runs commlab as a child process (/proc/self/exe), so what
 * is checked is exactly what the student sees; what a run did is read
 * from structured results (its exit status, CSV columns, the probe's
 * report, the --timeline file), not from the text of other modules'
 * messages.
 */
#ifndef CL_CLI_EXERCISE_H
#define CL_CLI_EXERCISE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli/course.h"

#define EX_STEP_BUDGET 60.0 /* seconds a step may take, by default */
#define EX_DIRECTIONS 3     /* failed tries of an answer told "too low" or "too high" */

/* ---- running commlab (ex_child.c) ---- */

typedef struct child_run {
    int status;   /* exit status; 128+N when killed by signal N */
    bool stopped; /* still running well past its budget: stopped */
    char *output; /* stdout and stderr as written, NUL-terminated */
    size_t len;
} child_run;

/* What the words of a command stand for.  A NULL string or a value < 0
 * leaves the word as it is. */
typedef struct ex_subst {
    const char *file;    /* {file} */
    const char *label;   /* {file} as shown to the student */
    const char *backend; /* {backend} */
    long n;              /* {n}: an answer's number */
    long ranks;          /* {ranks}: drawn for a step */
    long bytes;          /* {bytes}: drawn for a step */
    long group;          /* {group}: drawn for a step */
} ex_subst;

/* An ex_subst that substitutes nothing. */
ex_subst ex_subst_none(void);

/* Runs `commlab ARGS` with the words of sub substituted and the extra
 * words (a NULL-terminated list, or NULL) appended; *shown is the command
 * as the student would type it.  When pass is set the output also goes to
 * our stdout as it comes.  A child still running well past budget seconds
 * (0: none) is stopped and marked so.  0, or an exit status after
 * printing why (r then holds nothing to free). */
int ex_run_args(const char *args, const ex_subst *sub, const char *const *extra, bool pass,
                double budget, child_run *r, char *shown, size_t shown_len);

/* The values of CSV column col in output, one per row after the header
 * line that names it, at most max; how many. */
size_t ex_csv_column(const char *output, const char *col, double *out, size_t max);

/* The world size a command runs: its -n / --ranks, else 2 (run's default). */
long ex_command_ranks(const char *args);

/* ---- a check's verdicts ---- */

typedef struct check_ctx {
    const exercise *e;
    const char *file;    /* the student's file, or the solution */
    const char *label;   /* file as shown: as given, or chapters/NN/solutions/x.c */
    const char *backend; /* for steps with {backend} */
    bool is_solution;    /* file is the reference solution (--solution) */
    bool debug;          /* runs of the steps get --debug (--no-debug: not) */
    double budget;       /* --timeout: seconds a step may take; 0: no limit */
    bool directions;     /* answers: a wrong number may be told too low or too high */
    int passed, failed;
} check_ctx;

/* Prints a step's verdict: ok with what it checked, or FAIL with why, the
 * hint (or NULL) and the start of the output of r (or NULL). */
void ex_verdict(check_ctx *k, const char *shown, const char *what, const char *why,
                const char *hint, const child_run *r);

/* ---- the probe's report (ex_probe.c) ---- */

typedef struct probe_msg {
    long rank;     /* world rank that sent it */
    long peer;     /* world rank it goes to */
    uint64_t bytes;
    uint64_t hash; /* of the bytes (include/commlab_probe.h) */
} probe_msg;

typedef struct probe_held {
    long rank;     /* world rank that ends with the block */
    long seed;     /* holds: the cl_fill seed; sum: S */
    bool arrived;  /* holds: every byte came through its receives */
    bool used;     /* scratch for matching */
} probe_held;

typedef struct probe_block_seen {
    long rank;       /* world rank that ends with it */
    uint64_t bytes;  /* its length */
    uint64_t hash;   /* of its bytes at the end */
    char parts[1024]; /* "OFF+LEN,...": the ranges that arrived there; "-": none */
} probe_block_seen;

typedef struct probe_data {
    probe_block_seen *blocks;
    size_t nblocks;
    probe_msg *sends;
    size_t nsends;
    probe_held *holds, *sums;
    size_t nholds, nsums;
    char *calls;   /* "RANK NAME\n" lines */
    long *leaks;   /* [rank]: requests never completed, for ranks < nranks */
    bool *done;    /* [rank]: the rank's report is complete */
    long nranks;   /* ranks of the run */
} probe_data;

/* Reads a probe file of a run of nranks ranks; 0, or CL_ENOMEM / CL_ENOENT
 * (d then holds nothing to free). */
int ex_probe_read(const char *path, long nranks, probe_data *d);
void ex_probe_release(probe_data *d);
/* Whether a rank's report names call (send, isend, group, ...). */
bool ex_probe_called(const probe_data *d, long rank, const char *call);
/* Whether any rank's report names call. */
bool ex_probe_any_called(const probe_data *d, const char *call);

/* ---- the probe's report against the step and the reference (ex_compare.c) ----
 * Each leaves why (len bytes) as it is when the check passes, and writes
 * why not there when it fails; the ex_compare_ ones also set *fault. */

/* Every message goes where the task says: the sends pd saw are, as a
 * multiset, s->route. */
void ex_check_route(const ex_step *s, const probe_data *pd, char *why, size_t len);
/* Each rank ends with the data s->holds names ("R<P"), received through
 * its own receives when P is another rank.  Leaves pd's scratch marks
 * clear. */
void ex_check_holds(const ex_step *s, probe_data *pd, char *why, size_t len);
/* Each rank ends with the sums s->sums names ("R<P+Q ..."). */
void ex_check_sums(const ex_step *s, probe_data *pd, char *why, size_t len);
/* The probe saw every call of s->uses and none of s->avoids. */
void ex_check_calls(const ex_step *s, const probe_data *pd, char *why, size_t len);
/* The student's run (mine) against the reference's (ref), rank by rank:
 * the same sends (in order unless s->any_order), the data received and
 * kept, the reduction's result. */
void ex_compare_reference(const ex_step *s, probe_data *mine, probe_data *ref, char *why,
                          size_t len, ex_fault *fault);
/* Every block a rank of ref ends with that received something, a rank of
 * mine ends with too, received where ref's was. */
void ex_compare_blocks(const probe_data *mine, const probe_data *ref, char *why, size_t len);

/* ---- the two kinds (ex_code.c, ex_answer.c) ---- */

/* Runs one step of a code exercise and prints its verdict.  Returns 0, 1
 * when the student's file does not build (the other steps would fail
 * alike), or the exit status of an error of our own. */
int ex_code_step(check_ctx *k, const ex_step *s);
/* Checks an answer's numbers (ans, n of them, each typed with digits[i]
 * digits after the point, -1 with a unit or an exponent) and prints the
 * verdict; 0, or the exit status of an error of our own. */
int ex_answer_check(check_ctx *k, const double *ans, const int *digits, size_t n);
/* Numbers of an answer, "0.90 10.74" or "300KB, 50KB", into out (at most
 * max), each with the digits typed after the point (digits, or NULL);
 * 0, or CLI_EXIT_USAGE after saying why. */
int ex_answer_parse(const char *text, double *out, int *digits, size_t max, size_t *n);

/* ---- what a student passed and tried (ex_state.c) ---- */

/* Whether the student passed exercise id before (false when unknown). */
bool ex_state_passed(const char *id);
/* Failed answers to id so far. */
long ex_state_tries(const char *id);
/* Records a pass, or one more failed try, of id.  Cannot fail: a state
 * that cannot be written is simply not kept (the check says nothing). */
void ex_state_record(const char *id, bool passed);

#endif
