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

typedef struct ex_step {
    const char *run;          /* commlab arguments: {file}, {backend} substituted */
    long exit;                /* expected exit status */
    const char *output;       /* text the output must contain; NULL: none */
    long messages;            /* messages per iteration; -1: not checked */
    const char *same_time_as; /* reference arguments (modeled); NULL: none */
    double factor;            /* the step's time = factor x the reference's */
    const char *uses;         /* calls the trace must show: "isend,irecv"; NULL: none */
    const char *avoids;       /* calls it must not show; NULL: none */
    const char *hint;         /* printed when the step fails; NULL: none */
} ex_step;

typedef struct ex_value {
    const char *run;    /* commlab arguments printing CSV */
    const char *column; /* the CSV column: every row's value, in order */
    double scale;       /* value x scale = the unit the question asks in */
} ex_value;

typedef struct exercise {
    const char *id, *title, *task, *explain;
    const char *file;       /* code: the student's file name */
    const char *start;      /* code: a pattern to start from (repository path) */
    const char *solution;   /* code: solution file, relative to the chapter */
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
