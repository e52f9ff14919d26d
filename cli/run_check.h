/*
 * run_check.h - what `commlab run` checks once its options are parsed,
 * before anything starts, and the network its modeled runs share.
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
#include "sim/net.h"

/* Finds o's backend, checks the options given against it and each other,
 * learns the world of processes started elsewhere (tcp, rdma), finds
 * --library's call, and sets the defaults of iters, warmup and sharing.
 * 0, or the exit status after printing why (o partly filled in, nothing
 * to release but what o held before). */
int run_check(run_opts *o);

/* The a-th of the patterns whose rows stand side by side at each size, or
 * NULL past the last: the pattern asked for, or with --algo all every
 * algorithm of its collective; then with --library the library's call
 * (alone when a collective was named without --algo).  Cannot fail. */
const pattern_info *run_algo_at(const run_opts *o, size_t a);

/* The network of a modeled run into *net: a machine file's mesh (whose
 * eager limit becomes o's unless --eager-limit was given), a --topology
 * file, or a --tier mesh of o->ranks, with --reduce-bandwidth's gamma.
 * 0, or the exit status after printing why, *net then NULL or freed. */
int run_build_net(run_opts *o, sim_net **net);

#endif
