/*
 * engine.h - the `sim` backend: runs a pattern on every rank in virtual time.
 *
 * Every rank is a coroutine running the pattern's C code; the engine keeps
 * one event queue ordered by (time, insertion) and resumes ranks as their
 * operations complete, so a run is deterministic: the same input prints the
 * same bytes.  The network is an alpha-beta model over sim/net routes:
 *
 *   a message of n bytes from s to d arrives  alpha(s,d) + n / B(s,d)
 *   after it starts moving.  Up to the eager limit it starts when posted
 *   and the send completes once injected (n / B after posting, or the
 *   machine model's gap when it has one, sim/net.h); above it
 *   (rendezvous) it starts when both the send and the matching receive are
 *   posted, and the send completes when the data has arrived.  With the
 *   handshake option the request/clear-to-send round trip (2 alpha) is paid
 *   before the data moves.
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
#include "sim/net.h"

typedef struct sim_opts {
    int nranks;           /* ranks, >= 1 */
    sim_net *net;         /* routes and costs (borrowed) */
    uint64_t eager_limit; /* bytes; larger messages use rendezvous */
    bool handshake;       /* rendezvous pays the RTS/CTS round trip */
    bool payload;         /* move real bytes (false: --no-payload) */
    size_t stack_bytes;   /* per-rank coroutine stack; 0: default */
    int warmup;           /* untimed iterations first */
    int iters;            /* timed iterations, >= 1 */
    rec_log *records;     /* where records go; NULL keeps none */
    FILE *out;            /* pattern output (cl_printf) */
    FILE *report;         /* deadlock report and rank failures */
    uint64_t max_messages; /* stop (CL_ETIMEOUT) after this many; 0: no limit */
    bool debug;           /* --debug: buffer misuse checks (core/debug.h) */
} sim_opts;

typedef struct sim_result {
    int status;          /* 0, CL_EDEADLOCK, CL_ECHECK, or the first error */
    cl_diag diag;        /* what failed, "rank 1: ..." (status != 0) */
    double *iter_time;   /* iters entries, seconds: latest end - earliest start */
    int iters;           /* entries in iter_time */
    uint64_t messages;   /* pattern messages sent, all iterations and ranks */
    uint64_t bytes;      /* pattern bytes sent, idem */
    uint64_t total_messages; /* including the barriers between iterations */
    uint64_t events;     /* events processed */
    double end_time;     /* virtual seconds when the run ended */
} sim_result;

/* Runs fn on o->nranks ranks.  Returns 0 when the run itself could be
 * carried out (the pattern's own outcome is in res->status), or CL_EINVAL/
 * CL_ENOMEM with res->diag saying why.  Release res either way. */
int sim_run(const sim_opts *o, cl_pattern_fn *fn, const cl_args *args, sim_result *res);
void sim_result_release(sim_result *res);

#endif
