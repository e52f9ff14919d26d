/*
 * pattern.h - the patterns built into commlab, by name, and what a run
 * needs to know about each: the fewest ranks it runs on and how its
 * iteration time becomes the time the table reports.
 *
 * The functions live in the chapters (chapters/NN-topic/NAME.c) and include
 * only commlab.h; this table is the one place that names them all.  A
 * student's FILE.c becomes a pattern_info of its own (cli/student.h).
 */
#ifndef CL_PATTERN_H
#define CL_PATTERN_H

#include <stddef.h>

#include "commlab.h"

typedef struct pattern_info {
    const char *name;    /* "pingpong" */
    cl_pattern_fn *fn;   /* the rank program */
    const char *chapter; /* "02-point-to-point" */
    const char *summary; /* one line for `commlab patterns` */
    int min_ranks;       /* fewest ranks it runs on */
    int time_divisor;    /* reported time = iteration time / this (pingpong: 2) */
    const char *fixes;   /* accepted --fix values, comma-separated, or NULL */
} pattern_info;

/* The pattern called name, or NULL.  Cannot fail. */
const pattern_info *pattern_find(const char *name);
/* The i-th pattern, NULL past the end.  Cannot fail. */
const pattern_info *pattern_at(size_t i);

#endif
