/*
 * run.h - the one run layer: a job, the per-rank iteration driver every
 * backend calls, how an iteration's time is defined, and what a run of
 * one size comes to.
 *
 * The data path, the same modeled and measured:
 *
 *   run_job (a pattern, its arguments, ranks, iterations)
 *     -> a backend (sim_run: coroutines in virtual time; real_run: one
 *        process per rank) starts every rank, and each rank calls
 *        run_rank_iterations(): per iteration a barrier, then the pattern;
 *     -> the backend hands every rank's times to run_iter_times(), which
 *        makes each iteration's time (the definition below);
 *     -> run_result, which run_row_fill() turns into a table row (the
 *        pattern's divisor, median/min/max, bandwidth, messages, and the
 *        start skew of a measured run).
 *
 * When an iteration starts (run_job.sync).  The window way, the default
 * on every measured backend (core/sync.h): the barrier hands every rank a
 * release time a little in the future and every rank starts the pattern
 * at that instant of the common clock (offset-corrected across hosts).
 * The barrier way: each rank starts when the barrier lets it go.  Ranks
 * leave a barrier up to a message apart, so there the rank that left
 * first counts the others' lateness in its time, which at small sizes is
 * most of it (chapter 06 shows both).  The simulator has no wait_until
 * (core/comm.h): its ranks leave the barrier at one instant wherever the
 * barrier's routes are alike (a --tier mesh), so it starts them there.
 *
 * What an iteration's time is.  The time of iteration i is the largest,
 * over ranks, of each rank's time for it, from the iteration's start to
 * the rank's return from the pattern.  The barrier way: the start is the
 * rank's own, and this is what OSU's and IMB's benchmarks report for a
 * collective (the slowest rank's time).  The window way: the start is the
 * earliest rank's actual start, so the time is the latest end minus the
 * common start (a rank that reached the release late is counted from
 * when the first rank started, and the start skew says how far apart
 * they started).  Both worlds use this one definition, so `commlab
 * compare` sets like against like.  A rank's time in cl_printf in the
 * iteration is taken off its end: formatting a line is not the pattern's
 * communication, and the simulator's virtual clock does not move while it
 * prints (relay's last rank prints after its receive: 8 B on shm measured
 * 680-860 ns counting the print, 460-690 ns without it, runs in turn).  A rank that prints
 * before it sends still delays the ranks waiting for it.
 */
#ifndef CL_RUN_H
#define CL_RUN_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "commlab.h"
#include "core/cache.h"
#include "core/diag.h"
#include "core/pattern.h"
#include "core/record.h"
#include "core/waitfor.h"

/* The eager limit every command starts from (--eager-limit changes it):
 * bytes, as the course's chapters and the measured transports' defaults. */
#define RUN_EAGER_LIMIT ((uint64_t)64 * 1024)

/* When a timed iteration starts (see above). */
typedef enum run_sync {
    RUN_SYNC_WINDOW,  /* every rank at one release time (the default) */
    RUN_SYNC_BARRIER, /* each rank when the barrier lets it go */
} run_sync;

/* "window" or "barrier". */
const char *run_sync_name(run_sync s);

/* What every backend needs to run a pattern.  The caller owns everything
 * it points to. */
typedef struct run_job {
    cl_pattern_fn *fn;    /* the rank program */
    cl_args args;         /* the same on every rank; args.bytes is this run's size */
    int nranks;           /* ranks, >= 1 */
    int warmup, iters;    /* untimed iterations first, then timed ones (>= 1) */
    uint64_t eager_limit; /* bytes; larger messages use rendezvous */
    bool payload;         /* buffers are real (false: --no-payload, modeled only) */
    bool check;           /* --check: data checks on every iteration, checksums */
    bool check_warmup;    /* data checks on the warm-up iterations only (on the first
                             timed one where there is none): for a pattern whose
                             checks cost more than its messages, a training step's,
                             whose first timed iteration would time them */
    bool debug;           /* --debug: buffer misuse checks (core/debug.h) */
    run_sync sync;        /* when timed iterations start; a backend without
                             wait_until (core/comm.h) starts at the barrier */
    cache_mode cache;     /* measured: where the lines of the rank's cl_alloc blocks
                             are when an iteration starts (core/cache.h); set by
                             the backend before each iteration's barrier */
    double timeout;       /* seconds of wall-clock time the run may take; 0: no
                             limit.  Past it the run fails with CL_ETIMEOUT,
                             saying which rank made no progress and where */
    rec_log *records;     /* where records go; NULL keeps none */
    FILE *out;            /* the pattern's cl_printf lines; NULL: stdout */
    FILE *report;         /* the deadlock report and rank failures; NULL: stderr */
} run_job;

/* What a run comes to, on any backend.  Release it with run_result_release. */
typedef struct run_result {
    int status;          /* 0, CL_EDEADLOCK, CL_ECHECK, CL_EPEER (a rank died), ... */
    cl_diag diag;        /* what failed (status != 0) */
    double *iter_time;   /* iters entries, seconds: run_iter_times' definition */
    double *start_skew;  /* iters entries, seconds: the spread of the ranks' starts
                            of each iteration (window way) */
    bool skewed;         /* start_skew was measured (a measured run the window way) */
    int iters;           /* entries in iter_time */
    uint64_t messages;   /* pattern messages sent, all iterations and ranks */
    /* measured runs only */
    bool told;           /* a run over processes: rank 0's process reports this
                            failure, this one only exits with its status */
    int signal;          /* the launcher was interrupted by this signal (0: not) */
    int cores;           /* cores on this machine */
    char binding[160];   /* how ranks were bound, for the report */
    const char *clock;   /* what the ranks' clock read: "tsc" or "monotonic"
                            (real/tick.h); NULL: not measured */
} run_result;

/* Room for iters iteration times and start skews; CL_ENOMEM (res->diag
 * says so) or 0. */
int run_result_init(run_result *res, int iters);
/* Frees them; res may be zeroed or half set up. */
void run_result_release(run_result *res);
/* The run failed with status (a CL_E*) for the reason fmt says, unless it
 * had failed already: the first failure wins, what follows is usually its
 * consequence.  Returns whether this one was the first.  Cannot fail. */
bool run_result_vfail(run_result *res, int status, const char *fmt, va_list ap);

/* ---- cl_printf's lines, held for the median iteration ----
 *
 * A pattern prints in one iteration (cl_printf).  With one timed
 * iteration that is the one printed, at once.  With several, each timed
 * iteration's lines are held back, and once every rank's times are in,
 * the backend prints those of the median iteration (run_median_iter): a
 * figure a pattern prints (the pipeline's bubble) is then that of a
 * typical iteration, not of the first one, which is slow on a real
 * machine (cold caches, data checks).  Held lines cost memory: every
 * timed iteration's, until the run ends.  When the run fails, the first
 * timed iteration's lines are printed, as they were before holding. */
typedef struct run_line {
    int iter;     /* the timed iteration that printed it */
    char *text;   /* malloc'd, no newline */
} run_line;

typedef struct run_lines {
    int iter;       /* the running iteration: lines added now belong to it */
    run_line *v;    /* in the order printed */
    size_t n, cap;
    bool lost;      /* a line could not be kept (out of memory) */
} run_lines;

/* Keeps a copy of line for the running iteration; on failure to allocate
 * the line is dropped and l->lost set. */
void run_lines_add(run_lines *l, const char *line);
/* Frees every line; l is empty after (cannot fail). */
void run_lines_release(run_lines *l);

/* The timed iteration whose time is the median of t[0..iters) (the lower
 * of the middle two for even iters; the earliest among equal times). */
int run_median_iter(const double *t, int iters);

/* ---- the per-rank iteration driver ---- */

/* One rank as the driver sees it.  The backend fills the first part and
 * the hooks; the driver keeps iter and in_pattern current, which the
 * backend may read from its operations. */
typedef struct run_rank {
    cl_comm *comm;         /* the rank's world communicator */
    const run_job *job;
    double *iter_time;     /* job->iters entries: this rank's time per timed iteration,
                              from the iteration's start (see the top) to its end */
    double *iter_skew;     /* job->iters entries, or NULL: where the start skew of each
                              timed iteration goes (the window way; one rank keeps it) */
    bool clock_shared;     /* every rank reads one clock (one launcher's processes):
                              the window way estimates no offsets */
    bool check_all;        /* data checks on every iteration, not only the warm-up
                              and the first timed one */
    int iter;              /* running iteration: warm-up negative; job->iters once done */
    bool in_pattern;       /* inside the pattern, not in the barrier between iterations */
    int returned;          /* the last iteration whose pattern returned (-warm-up - 1
                              before the first) */
    bool records_elsewhere; /* the backend gathers the records itself (a measured
                               rank's go to its launcher), so the driver writes
                               none of its own into job->records */
    /* Optional: called before the iteration's barrier. */
    void (*begin)(struct run_rank *r);
    /* Optional: called once the pattern returned rc; frees what the
     * iteration held and returns the error the iteration ends with (rc, or
     * a failure the backend saw while it ran). */
    int (*end)(struct run_rank *r, int rc);
    void *backend;         /* the backend's rank, for the hooks */
    run_lines held;        /* cl_printf's lines of the timed iterations when there
                              are several (see above); the backend releases them */
} run_rank;

/* Whether iteration it (warm-up negative) runs the pattern's data
 * checks: every one with check_all; else the warm-up and the first timed
 * one, or with j->check_warmup the warm-up alone (the first timed one
 * where there is none).  Cannot fail. */
bool run_checks(const run_job *j, bool check_all, int it);

/* How a rank blocked outside its pattern counts in a wait-for report
 * (core/waitfor.h) when the ranks blocked inside theirs are in iteration
 * k: WF_DONE when its pattern of iteration k returned (r_returned >= k),
 * else WF_RUNNING (it is on its way into iteration k).  With no rank
 * blocked in its pattern (k_known false): WF_BLOCKED, its wait as it is.
 * Cannot fail. */
wf_state run_outside_state(int r_returned, int k, bool k_known);

/* Runs the warm-up and timed iterations of r->job: per iteration a
 * barrier (the window way: core/sync.h's, after estimating the clock
 * offsets unless r->clock_shared), then the pattern, timed on cl_now() as
 * the top of this file says, with a REC_ITER span recorded from the
 * rank's start.  Returns 0, or the first error with *during saying where
 * it happened ("the barrier before an iteration", "the pattern"); the
 * iteration times already written stay.  A blocking call the rank never came back from (its wait
 * failed: a deadlock, a failed peer) is recorded as `stalled` up to the
 * moment it failed, unless r->records_elsewhere. */
int run_rank_iterations(run_rank *r, const char **during);

/* Prints, through the rank's print operation, the lines r held from timed
 * iteration iter (run_median_iter of the run's iteration times), then
 * releases all it held.  Nothing is held with one timed iteration. */
void run_rank_print_held(run_rank *r, int iter);

/* The definition of an iteration's time (see the top of this file):
 * out[i] = max over ranks r of per_rank[r * iters + i].  Cannot fail. */
void run_iter_times(const double *per_rank, int nranks, int iters, double *out);

/* ---- a row of results ---- */

typedef struct run_row {
    uint64_t bytes;
    cl_stats t;        /* per-iteration times, divided by the pattern's divisor */
    cl_stats skew;     /* the start skew, seconds, not divided; n == 0: not measured */
    double bandwidth;  /* bytes / median time */
    uint64_t messages; /* per iteration, warm-up included in the count */
} run_row;

/* row from a successful run of bytes with p's divisor; runs is the number
 * of iterations that sent messages (warm-up + timed).  Divides
 * res->iter_time in place.  0, or stats_compute's error (row unchanged). */
int run_row_fill(run_row *row, run_result *res, const pattern_info *p, uint64_t bytes,
                 int runs);

#endif
