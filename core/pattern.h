/*
 * pattern.h - the patterns built into commlab, by name, and what a run
 * needs to know about each: the fewest ranks it runs on, how its
 * iteration time becomes the time the table reports, and for the
 * collectives of chapter 04 which collective and algorithm it is.
 *
 * The functions live in the chapters (chapters/NN-topic/NAME.c) and include
 * only commlab.h; this table is the one place that names them all.  A
 * student's FILE.c becomes a pattern_info of its own (cli/student.h).
 *
 * Collectives.  Each algorithm is a pattern named COLLECTIVE-ALGO
 * ("allreduce-ring"); `commlab run allreduce --algo ring` finds the same
 * one, and `run allreduce` alone its collective's default algorithm.
 */
#ifndef CL_PATTERN_H
#define CL_PATTERN_H

#include <stddef.h>

#include "commlab.h"
#include "core/formula.h"

/* How nccl-tests turns a collective's algorithm bandwidth (its size over
 * its time) into bus bandwidth: a factor of K that makes every collective's
 * figure comparable with the links' own bandwidth. */
typedef enum pattern_bus {
    BUS_NONE,      /* no bandwidth columns (point-to-point, barrier) */
    BUS_ONE,       /* broadcast, reduce: 1 */
    BUS_SHARE,     /* all-gather, reduce-scatter, all-to-all, gather, scatter: (K-1)/K */
    BUS_ALLREDUCE, /* all-reduce: 2(K-1)/K */
} pattern_bus;

typedef struct collective_info {
    const char *name;    /* "allreduce" */
    const char *summary; /* one line for `commlab patterns` */
    const char *algo;    /* the algorithm `run NAME` picks without --algo */
    pattern_bus bus;     /* its bus bandwidth factor */
    bool reduces;        /* a reduction: takes --op and --dtype (cl_args) */
} collective_info;

typedef struct pattern_info {
    const char *name;    /* "pingpong", "allreduce-ring" */
    cl_pattern_fn *fn;   /* the rank program */
    const char *chapter; /* "02-point-to-point" */
    const char *summary; /* one line for `commlab patterns` */
    int min_ranks;       /* fewest ranks it runs on */
    int time_divisor;    /* reported time = iteration time / this (pingpong: 2) */
    const char *fixes;   /* accepted --fix values, comma-separated, or NULL */
    const char *schedules; /* accepted --schedule values, comma-separated, the
                              default first; NULL: it has none */
    bool group_divides;  /* --group G must divide the ranks (grid: K = P x G) */
    bool makes_groups;   /* calls cl_group in every iteration (timed with it) */
    int max_pieces;      /* --chunk cuts a size into at most this many pieces
                            (chunked's MAX_PIECES); 0: no limit */
    bool from_step_file; /* reads cl_args.step: runs only under `commlab step` */
    /* collectives only (collective NULL for the others) */
    const collective_info *collective;
    const char *algo;        /* "ring" */
    formula_fn *formula;     /* its alpha-beta time (core/formula.h) */
    const char *formula_text; /* the same, written out: "2(K-1)(a + n/(K B))" */
} pattern_info;

/* The pattern called name, or NULL.  Cannot fail. */
const pattern_info *pattern_find(const char *name);
/* The i-th pattern, NULL past the end.  Cannot fail. */
const pattern_info *pattern_at(size_t i);

/* The collective called name, or NULL.  Cannot fail. */
const collective_info *collective_find(const char *name);
/* The i-th collective, NULL past the end.  Cannot fail. */
const collective_info *collective_at(size_t i);
/* The algorithm algo of collective c, or NULL.  Cannot fail. */
const pattern_info *collective_algo(const collective_info *c, const char *algo);
/* The i-th algorithm of c, NULL past the end.  Cannot fail. */
const pattern_info *collective_algo_at(const collective_info *c, size_t i);
/* "naive, ring, rd, ..." into buf (always NUL-terminated); returns buf. */
char *collective_algo_list(const collective_info *c, char *buf, size_t len);

/* nccl-tests' bus bandwidth factor for bus on k ranks (0 for BUS_NONE). */
double pattern_bus_factor(pattern_bus bus, int k);

#endif
