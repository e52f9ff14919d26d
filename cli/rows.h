/*
 * rows.h - the entry points of the backend table's rows (cli/backend.c):
 * the model's (cli/row_sim.c), the measured backends' (cli/row_real.c)
 * and mpi's (cli/mpi_launch.c).  Only the table and the rows include it;
 * every other caller goes through the table (cli/backend.h).
 *
 * Each row's session starts with backend_session and adds what only that
 * row needs; the rows cast to their own.
 */
#ifndef CL_ROWS_H
#define CL_ROWS_H

#include <stdbool.h>
#include <stdint.h>

#include "cli/backend.h"
#include "cli/run_size.h"

struct sim_net;

/* What every row's session starts with. */
struct backend_session {
    const backend_info *be;
};

/* sim: the model's network. */
int row_sim_open(run_opts *o, backend_session **s);
int row_sim_start(backend_session *s, run_opts *o, run_env *env);
void row_sim_describe(const backend_session *s, const run_opts *o, const run_env *env,
                      backend_desc *d);
int row_sim_close(backend_session *s);
int row_sim_size(const run_opts *o, run_env *env, uint64_t bytes, rec_log *log, bool first,
                 run_row *row);
/* One size of o modeled on net, for the commands that build their own
 * network (collectives, compare).  As row_sim_size. */
int row_sim_size_on(const run_opts *o, struct sim_net *net, uint64_t bytes, rec_log *log,
                    run_row *row);

/* shm, tcp, rdma (and mpi's world): the world of processes started
 * elsewhere, its rendezvous and the netlab. */
int row_real_open(run_opts *o, backend_session **s);
int row_real_start(backend_session *s, run_opts *o, run_env *env);
void row_real_describe(const backend_session *s, const run_opts *o, const run_env *env,
                       backend_desc *d);
int row_real_close(backend_session *s);
int row_real_size(const run_opts *o, run_env *env, uint64_t bytes, rec_log *log, bool first,
                  run_row *row);

#endif
