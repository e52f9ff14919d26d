/*
 * run_print.h - what `commlab run` prints of its rows, once every size has
 * run: the text table (a header line saying where the run ran, with the
 * reduction's and the start skew's lines under it), CSV or JSON.  A
 * collective's rows add nccl-tests' algorithm and bus bandwidth (algbw,
 * busbw); a row that moved no bytes has no rate.
 *
 * The printers write to stdout and cannot fail: a table that cannot be
 * made (out of memory) prints nothing.
 */
#ifndef CL_RUN_PRINT_H
#define CL_RUN_PRINT_H

#include <stdbool.h>
#include <stddef.h>

#include "cli/run_size.h"
#include "core/pattern.h"
#include "core/run.h"

/* One row of results and the pattern (an algorithm, with --algo all) it is of. */
typedef struct run_algo_row {
    run_row row;            /* the size's figures (core/run.h) */
    const pattern_info *p;  /* its pattern: o->pattern, an algorithm, or o->library_pattern */
} run_algo_row;

/* The table of n rows of o's run on env, a size a line; all: several
 * algorithms stand side by side at each size (--algo all, --library). */
void run_print_text(const run_opts *o, const run_env *env, const run_algo_row *lines, size_t n,
                    bool all);
/* The same n rows as CSV, a header line first. */
void run_print_csv(const run_opts *o, const run_algo_row *lines, size_t n);
/* The run and its n rows as one JSON object; status is the run's last
 * (0 or a CL_E* code, named as "status"). */
void run_print_json(const run_opts *o, const run_env *env, const run_algo_row *lines, size_t n,
                    bool all, int status);

#endif
