/*
 * patterns.h - the patterns built into commlab, by name.
 *
 * The functions live in the chapters (chapters/NN-topic/NAME.c) and include
 * only commlab.h; this table is the one place that names them all.
 */
#ifndef CL_PATTERNS_H
#define CL_PATTERNS_H

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

/* The pattern called name, or NULL. */
const pattern_info *patterns_find(const char *name);
/* The i-th pattern, NULL past the end. */
const pattern_info *patterns_at(size_t i);

#endif
