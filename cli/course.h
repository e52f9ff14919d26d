/*
 * course.h - the course's exercises as chapters/NN-topic/exercises.yaml
 * describe them (cli/cmd_exercise.c lists, shows, runs and checks them).
 *
 * The YAML documents stay loaded while a course is: every string of an
 * exercise points into them, so release the course last.
 */
#ifndef CL_CLI_COURSE_H
#define CL_CLI_COURSE_H

#include <limits.h>
#include <stddef.h>

#include "core/config.h"

/* What made a step fail; each may have a hint of its own (`hints:`). */
typedef enum ex_fault {
    FAULT_DEADLOCK, /* exit 3 where another status was expected */
    FAULT_FAILED,   /* exit 1: a data check or --debug's buffer check failed */
    FAULT_EXIT,     /* any other wrong exit status */
    FAULT_OUTPUT,   /* a line missing from what the ranks print */
    FAULT_MESSAGES, /* the count of messages */
    FAULT_ROUTE,    /* the source and destination of the messages */
    FAULT_DATA,     /* the data a rank ends with */
    FAULT_CALLS,    /* the calls used or avoided */
    FAULT_TIME,     /* the modeled time */
    FAULT_LEAK,     /* a request never completed */
    FAULT_COUNT     /* number of faults; not a fault */
} ex_fault;

/* The YAML key of a fault under `hints:` ("deadlock", ...). */
const char *ex_fault_name(ex_fault f);

/* A value drawn anew at every check ("3..9 odd", "*2..4"), so a check
 * also runs at rank counts and sizes that no text announces. */
typedef struct ex_draw {
    long lo, hi;  /* the range, both included; lo > hi: nothing to draw */
    bool times;   /* "*LO..HI": times the step's drawn group */
    enum { DRAW_ANY, DRAW_ODD, DRAW_EVEN, DRAW_POW2, DRAW_X8, DRAW_NOT_X8 } only;
} ex_draw;

/* "LO..HI [odd|even|pow2|x8|notx8]", with a leading '*' when times is
 * allowed, into *out.  0, or -1 when the text is not such a range or no
 * value of it fits. */
int ex_draw_parse(const char *text, bool times, ex_draw *out);
/* Whether v passes d's filter (odd, even, ...); cannot fail. */
bool ex_draw_fits(const ex_draw *d, long v);

typedef struct ex_step {
    const char *run;          /* commlab arguments: {file}, {backend} substituted */
    long exit;                /* expected exit status */
    const char *output;       /* a line the output must contain; NULL: none */
    const char *every_rank;   /* what every rank r prints ("rank r: " + this, {r}
                                 and {n} substituted); NULL: not checked */
    long messages;            /* messages per iteration; -1: not checked */
    const char *route;        /* every message's "src>dst", blank-separated, in
                                 any order ("0>1 1>0"); NULL: not checked */
    const char *holds;        /* "R<P ...": rank R ends with a block holding the
                                 data of rank P, cl_fill(seed P), a block for
                                 each time the pair is listed; NULL: none */
    const char *sums;         /* "R<P+Q ...": rank R ends with a block of doubles
                                 holding the sum of the inputs of ranks P, Q, ...
                                 (rank r's element i: (r + 1)(i % 7 + 1), the
                                 reductions' data of chapter 04); NULL: none */
    const char *same_time_as; /* reference arguments (modeled); NULL: none */
    double factor;            /* the step's time = factor x the reference's */
    const char *uses;         /* calls the trace must show: "isend,irecv"; NULL: none */
    const char *avoids;       /* calls it must not show; NULL: none */
    ex_draw ranks, bytes, group; /* drawn for {ranks}, {bytes}, {group} */
    bool any_order;           /* reference: a rank's sends may come in any order */
    bool same_lines;          /* reference: every "rank R: " line it prints is printed */
    bool same_blocks;         /* reference: every block its ranks end with, each part
                                 of it received where the reference's was */
    bool reference;           /* compare with the solution run the same way (default
                                 when the step expects exit 0) */
    const char *hint;         /* printed when the step fails and no hint of the
                                 fault's own is given; NULL: none */
    const char *hints[FAULT_COUNT]; /* by fault; NULL: the step's hint */
} ex_step;

/* A wrong number students are likely to give, and what it tells them. */
typedef struct ex_mistake {
    long number;      /* which number of the answer, from 1 */
    double value;     /* the wrong value, in the unit asked */
    const char *says; /* printed when the answer's number is that value */
} ex_mistake;

typedef struct ex_value {
    const char *run;    /* commlab arguments */
    const char *column; /* the CSV column: every row's value, in order; or NULL */
    const char *after;  /* else: the one figure that follows this text in the output */
    double scale;       /* value x scale = the unit the question asks in */
} ex_value;

typedef struct exercise {
    const char *id, *title, *task, *explain;
    const char *file;       /* code: the student's file name */
    const char *start;      /* code: a pattern to start from (repository path) */
    const char *solution;   /* code: solution file, relative to the chapter */
    const char *seeds;      /* code: cl_fill seeds beside the ranks' that the data
                               may hold ("42"), for the probe; NULL: none */
    const char **commands;  /* what the student runs, "commlab ..." */
    size_t ncommands;
    ex_step *steps;
    size_t nsteps;
    /* answer */
    const char *ask;        /* the question; NULL for a code exercise */
    const char *solution_answer;
    ex_value *values;
    size_t nvalues;
    double tolerance;       /* relative */
    bool exact[64];         /* number i + 1 is a count: it must be exact */
    bool choice;            /* the numbers name a choice (a layout), not amounts:
                               a wrong one is never told a direction */
    ex_mistake *mistakes;   /* likely wrong answers, each with its hint */
    size_t nmistakes;
    ex_value best;          /* run: arguments with {n}; the answer is the n whose
                               column is least, then that least value x scale;
                               run NULL: not this kind */
    const char *smallest;   /* arguments with {n} */
    const char *after;      /* the figure follows this text in its output */
    double at_most;
    char chapter[128];      /* "02-point-to-point" */
    char dir[PATH_MAX];     /* the chapter's folder */
} exercise;

typedef struct course {
    cfg_doc *docs;
    size_t ndocs;
    exercise *ex;
    size_t n;
} course;

/* Loads the exercises of every chapter that has an exercises.yaml, in
 * chapter order.  Returns 0, or an exit status after printing the error
 * (a file:line:column for a bad file). */
int course_load(course *c);
/* Adds the exercises of one chapter's exercises.yaml to c (zeroed first
 * for the first call): read from the file name, or parsed from text when
 * text is not NULL (name then stands for the file in messages).  0, or a
 * CL_E* code with g naming file:line:column; c keeps what it holds either
 * way, for course_release. */
int course_add(course *c, const char *name, const char *text, const char *chapter,
               const char *dir, cl_diag *g);
/* The exercise with this id, or NULL. */
const exercise *course_find(const course *c, const char *id);
void course_release(course *c);

#endif
