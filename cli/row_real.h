/*
 * row_real.h - the measured rows' session (cli/row_real.c), for the rows
 * that share it: shm, tcp, rdma and mpi (cli/row_mpi.c).  No other
 * file includes it.
 */
#ifndef CL_ROW_REAL_H
#define CL_ROW_REAL_H

#include "cli/rows.h"
#include "real/boot.h"
#include "real/world.h"

typedef struct real_session {
    backend_session base;
    real_world world; /* which rank of which world (size 0: a local run) */
    boot *boot;       /* its rendezvous, joined once for every size; NULL: none */
    run_lab lab;      /* --netlab's, held for every size */
} real_session;

/* One size of o measured (real_run) over boot (NULL: a local run), lab
 * (NULL: none); fills row and env's binding, cores and signal.  first:
 * the size that may print the launcher's warnings.  Returns the run's
 * status (0 or CL_E*, already reported). */
int row_real_run(const run_opts *o, boot *boot, const struct netlab *lab, run_env *env,
                 uint64_t bytes, rec_log *log, bool first, run_row *row);

#endif
