/*
 * run_check.h - what `commlab run` checks once its options are parsed,
 * before anything starts.
 *
 * Parsing checks each option alone; run_check checks them against each
 * other, the pattern and the backend table (cli/backend.h), and fills in
 * the defaults that depend on the backend.  Every refusal is printed
 * once, on stderr, and returned as an exit status (CLI_EXIT_USAGE).
 */
#ifndef CL_RUN_CHECK_H
#define CL_RUN_CHECK_H

#include <stddef.h>

#include "cli/run_size.h"
#include "core/pattern.h"

/* Finds o's backend, checks the options given against it and each other,
 * opens its session into *s (which learns the world of processes started
 * elsewhere and checks the backend's own options), finds --library's
 * call, and sets the defaults of iters and warmup.  0, or the exit status
 * after printing why (o partly filled in; *s, when set, to be closed with
 * backend_close). */
int run_check(run_opts *o, backend_session **s);

/* The a-th of the patterns whose rows stand side by side at each size, or
 * NULL past the last: the pattern asked for, or with --algo all every
 * algorithm of its collective; then with --library the library's call
 * (alone when a collective was named without --algo).  Cannot fail. */
const pattern_info *run_algo_at(const run_opts *o, size_t a);

#endif
