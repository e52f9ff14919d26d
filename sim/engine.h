/*
 * engine.h - the `sim` backend: runs a pattern on every rank in virtual time.
 *
 * Every rank is a coroutine running the pattern's C code; the engine keeps
 * one event queue ordered by (time, insertion) and resumes ranks as their
 * operations complete, so a run is deterministic: the same input prints the
 * same bytes.  Each rank runs core/run.h's iteration driver, and an
 * iteration's time is run_iter_times' definition, as on measured backends.
 * The network is an alpha-beta model over sim/net routes:
 *
 *   a message of n bytes from s to d, alone on its links, arrives
 *   alpha(s,d) + n / B(s,d) after it starts moving; messages that cross one
 *   link direction at once share its bandwidth max-min fairly (sim/flow.h,
 *   SIM_SHARE_MAXMIN), and their completions move as flows start and end.
 *   Up to the eager limit it starts when posted
 *   and the send completes once injected (n / B after posting, or the
 *   machine model's gap when it has one, sim/net.h); above it
 *   (rendezvous) it starts when both the send and the matching receive are
 *   posted, and the send completes when the data has arrived.  With the
 *   handshake option the request/clear-to-send round trip (2 alpha) is paid
 *   before the data moves.
 * cl_compute advances the rank's clock by its seconds; cl_reduce_local and
 * cl_reduce_finish spend their bytes times the network's gamma
 * (sim_net_gamma) the same way (comm_ops.reduce_time).
 *
 * When no event is left and a rank has not returned, the engine prints the
 * wait-for report (core/waitfor) and the run ends with CL_EDEADLOCK.  Every
 * rank is then unwound (its pending calls fail with CL_EPEER) so nothing is
 * leaked.
 */
#ifndef SIM_ENGINE_H
#define SIM_ENGINE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "commlab.h"
#include "core/diag.h"
#include "core/record.h"
#include "core/run.h"
#include "sim/net.h"

/* How messages that cross one link at the same time are priced. */
typedef enum sim_sharing {
    SIM_SHARE_MAXMIN, /* they share its bandwidth, max-min fair (sim/flow.h) */
    SIM_SHARE_NONE,   /* each is priced alone; one pair's messages queue */
} sim_sharing;

/* The model's options; the job (core/run.h) is what every backend shares. */
typedef struct sim_opts {
    run_job job;          /* pattern, ranks, iterations, eager limit, output */
    sim_net *net;         /* routes and costs (borrowed) */
    sim_sharing sharing;  /* SIM_SHARE_MAXMIN where the network can share
                             (sim_net_can_share), else none */
    bool handshake;       /* rendezvous pays the RTS/CTS round trip */
    size_t stack_bytes;   /* per-rank coroutine stack; 0: default */
    uint64_t max_messages; /* stop (CL_ETIMEOUT) after this many; 0: no limit */
    bool solver_only;     /* tests: every flow goes to the max-min solver, none
                             is priced alone on free ports (same figures) */
} sim_opts;

/* What the engine did, beside the run's result. */
typedef struct sim_stats {
    uint64_t total_messages; /* including the barriers between iterations */
    uint64_t events;     /* events processed */
    double end_time;     /* virtual seconds when the run ended */
    uint64_t flows;      /* shared links: flows started */
    uint64_t lone;       /* ... of which priced alone on free ports */
    uint64_t adopted;    /* ... of those, handed to the solver when met */
    uint64_t solves;     /* shared links: max-min recomputations */
    double solve_s;      /* shared links: wall seconds inside them */
} sim_stats;

/* Runs o->job modeled.  Returns 0 when the run itself could be carried
 * out (the pattern's own outcome is in res->status), or CL_EINVAL/
 * CL_ENOMEM with res->diag saying why.  Release res either way
 * (run_result_release); stats may be NULL. */
int sim_run(const sim_opts *o, run_result *res, sim_stats *stats);

#endif
