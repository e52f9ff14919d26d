/*
 * run_print.h - what `commlab run` prints of its rows, once every size has
 * run: the text table (a header line saying where the run ran, with the
 * reduction's and the start skew's lines under it), CSV or JSON.  A
 * collective's rows add nccl-tests' algorithm and bus bandwidth (algbw,
 * busbw); a row that moved no bytes has no rate.
 *
 * run_print writes to stdout and cannot fail: a table that cannot be
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

/* The n rows of o's run on env in o's format: a table (nothing when n is
 * 0), CSV or JSON.  all: several algorithms stand side by side at each
 * size (--algo all, --library); status is the run's last (0 or a CL_E*
 * code, JSON's "status"). */
void run_print(const run_opts *o, const run_env *env, const backend_desc *desc,
               const run_algo_row *lines, size_t n, bool all, int status);

#endif
