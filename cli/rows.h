/*
 * rows.h - the entry points of the backend table's rows (cli/backend.c):
 * the model's (cli/row_sim.c), the measured backends' (cli/row_real.c)
 * and mpi's (cli/row_mpi.c).  The table and the rows include it, and
 * the two modeled commands that build a network of their own (compare,
 * collectives: row_sim_net_* and row_sim_size_on); every other caller
 * goes through the table (cli/backend.h).
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
#include "core/machine.h"
#include "core/tier.h"

struct sim_net;

/* What every row's session starts with. */
struct backend_session {
    const backend_info *be;
};

/* A row's session of size bytes (starting with backend_session) for
 * o->be into *s: 0, or the exit status after printing why (*s NULL). */
int row_session_new(const run_opts *o, size_t size, backend_session **s);

/* A row's hooks (cli/backend.h's backend_info): prefix_open, _start,
 * _describe, _close and _size. */
#define ROW_HOOKS(prefix)                                                                  \
    int prefix##_open(run_opts *o, backend_session **s);                                   \
    int prefix##_start(backend_session *s, run_opts *o, run_env *env);                     \
    void prefix##_describe(const backend_session *s, const run_opts *o, const run_env *env, \
                           backend_desc *d);                                               \
    int prefix##_close(backend_session *s);                                                \
    int prefix##_size(const run_opts *o, run_env *env, uint64_t bytes, rec_log *log,       \
                      bool first, run_row *row);

/* sim: the model's network. */
ROW_HOOKS(row_sim)
/* One size of o modeled on net, for the commands that build their own
 * network (collectives, compare).  As row_sim_size. */
int row_sim_size_on(const run_opts *o, struct sim_net *net, uint64_t bytes, rec_log *log,
                    run_row *row);
/* Those commands' networks (sim/net.h's): a full mesh of ranks on a tier
 * or priced by a machine file, a topology from YAML text (name stands for
 * the file in messages); 0, or the error with d saying why and *out NULL.
 * Its one-line description (owned by net); its release (NULL does
 * nothing). */
int row_sim_net_tier(struct sim_net **out, const cl_tier *t, int ranks, cl_diag *d);
int row_sim_net_machine(struct sim_net **out, const machine *m, int ranks, cl_diag *d);
int row_sim_net_yaml(struct sim_net **out, const char *name, const char *yaml, cl_diag *d);
const char *row_sim_net_describe(const struct sim_net *net);
void row_sim_net_destroy(struct sim_net *net);
/* The stack each simulated rank of o gets (--stack-size, else the
 * default): bytes of address space reserved per rank.  Cannot fail. */
size_t row_sim_stack_bytes(const run_opts *o);

/* shm, tcp, rdma (and mpi's world): the world of processes started
 * elsewhere, its rendezvous and the netlab. */
ROW_HOOKS(row_real)

#endif
