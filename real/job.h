/*
 * job.h - what the launcher and its rank processes share: one anonymous
 * shared mapping made before the fork, so nothing has a name in /dev/shm
 * and nothing can outlive the run.
 *
 * Who writes what.  Each rank owns its job_slot: it publishes there the
 * blocking call it is in (for the launcher's watchdog), a progress counter,
 * its per-iteration times, its records and, when it fails, why.  The
 * launcher only reads slots, and reads the wait description under the
 * slot's seqlock so it never sees a half-written one (in a run over several
 * hosts the master's launcher also writes the slots of remote ranks, from
 * what their launchers report: real/boot.h).  The seqlock is job.c's
 * alone: writers go through job_slot_wait_begin/add/end (or _set), readers
 * through job_slot_wait_read.  Each rank publishes its
 * transport address in its job_addr.  The transport's own shared area
 * (rings, doorbells) follows them in the same mapping.
 */
#ifndef REAL_JOB_H
#define REAL_JOB_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/diag.h"
#include "core/record.h"
#include "core/waitfor.h"
#include "real/tick.h"

#define JOB_LINE 64          /* cache line: slots never share one */
#define JOB_MAX_PENDING 16   /* operations of a wait shown to the watchdog */
#define JOB_ADDR_MAX 256     /* bytes of a rank's transport address */

typedef enum job_state {
    JOB_STARTING, /* forked, not yet in the pattern loop */
    JOB_RUNNING,  /* computing or polling: may still make progress */
    JOB_BLOCKED,  /* asleep in a blocking call, waiting on `pending` */
    JOB_DONE,     /* every iteration returned */
    JOB_FAILED,   /* gave up; `msg` says why */
} job_state;

typedef struct job_wait { /* the blocking call a rank is in */
    uint32_t call;     /* wf_op of the blocking call */
    uint32_t npending; /* entries in pending, <= JOB_MAX_PENDING */
    uint32_t nwaiting; /* operations waited on (may exceed JOB_MAX_PENDING) */
    int32_t iter;      /* iteration it is in */
    uint32_t outside;  /* 1: the call is not the pattern's but the iteration
                          driver's (core/run.h), a barrier between iterations */
    int32_t returned;  /* the last iteration whose pattern returned: an outside
                          rank counts as returned (WF_DONE) for the ranks
                          blocked in that iteration (run_outside_state) */
    wf_pending pending[JOB_MAX_PENDING];
} job_wait;

typedef struct job_slot {
    _Alignas(JOB_LINE) _Atomic uint32_t seq; /* seqlock: odd while writing the wait */
    _Atomic uint32_t state;                  /* a job_state */
    _Atomic uint64_t progress;               /* what the rank has completed, kept
                                                current while it is blocked (rank.h) */
    job_wait wait;     /* under seq */
    /* written once, before the rank exits */
    int32_t status;    /* 0 or the CL_E* it ended with */
    uint64_t messages; /* pattern messages sent, all iterations */
    _Atomic uint64_t nrec; /* records written (may exceed the room: dropped) */
    cl_diag why;       /* why it failed, "rank 1: ..." */
} job_slot;

/* Where a rank's transport can be reached (a socket address, a fabric
 * address), published by the rank before it connects; the launcher relays
 * it between hosts (real/boot.h).  ready is stored last (release). */
typedef struct job_addr {
    _Atomic uint32_t ready;
    uint32_t len; /* bytes in use, <= JOB_ADDR_MAX */
    unsigned char bytes[JOB_ADDR_MAX];
} job_addr;

typedef struct job {
    int nranks;         /* the world's ranks */
    int only;           /* the one rank this launcher runs, or -1: all of them */
    int cores;          /* the launcher's count (hwloc): more ranks oversubscribe */
    int warmup, iters;
    int print_fd;       /* where cl_printf's lines go */
    double t_base;      /* CLOCK_MONOTONIC seconds at launch: records start near 0 */
    tick_clock tick;    /* the ranks' clock when it is the counter (real/tick.h),
                           based at t_base */
    double clock_shift; /* seconds added to this launcher's ranks' clock, and */
    double clock_drift; /* seconds it gains a second: the debug variables
                           COMMLAB_CLOCK_SHIFT and COMMLAB_CLOCK_DRIFT, which
                           stand in for another host's clock
                           (tests/cli/test_netns.sh); 0 unless set */
    size_t rec_cap;     /* records each rank has room for (0: none kept) */
    job_slot *slots;    /* nranks */
    double *iter_time;  /* nranks * iters: rank r's time of iteration i at r * iters + i */
    double *iter_skew;  /* iters: the spread of the ranks' starts of each timed
                           iteration (core/sync.h), written by rank 0 when the
                           ranks start together */
    cl_record *recs;    /* nranks * rec_cap */
    job_addr *addrs;    /* nranks */
    void *transport;    /* the transport's shared area */
    const struct netlab *netlab; /* --netlab: every rank's namespace and address
                                    (real/netlab.h); NULL: none */
    _Atomic int stop;   /* a rank in the launcher's process (real_transport.in_process)
                           is to stop with this CL_E*: its transport's poll returns
                           it; 0: go on */
    void *map;          /* the one mapping all of this lives in */
    size_t map_bytes;
} job;

/* Monotonic seconds, the same clock in every process of the machine. */
double job_now(void);

/* The debug variables COMMLAB_CLOCK_SHIFT (seconds, within 1e6) and
 * COMMLAB_CLOCK_DRIFT (seconds a second, within 0.1): 0 each when unset;
 * and COMMLAB_CLOCK, "monotonic" (*monotonic: ranks read CLOCK_MONOTONIC
 * even where they could read the counter, real/tick.h) or "tsc" (the
 * default: the counter where it can be read).  0, or CL_EINVAL with why
 * in d. */
int job_clock_debug(double *shift, double *drift, bool *monotonic, cl_diag *d);

/* ---- a slot's wait, under its seqlock (one writer: the rank, or for a
 * remote rank the master's launcher) ---- */

/* Starts writing s's wait: the blocking call, its iteration, whether it
 * is outside the pattern and the last iteration whose pattern returned, no
 * operations yet.  Readers retry until job_slot_wait_end.  Cannot fail. */
void job_slot_wait_begin(job_slot *s, wf_op call, int iter, bool outside, int returned);
/* Adds an operation waited on; past JOB_MAX_PENDING it is only counted. */
void job_slot_wait_add(job_slot *s, const wf_pending *op);
/* Ends the write: readers see the whole wait from now on. */
void job_slot_wait_end(job_slot *s);
/* Writes a whole wait at once (npending <= JOB_MAX_PENDING, asserted). */
void job_slot_wait_set(job_slot *s, const job_wait *w);
/* Copies s's wait, never a half-written one, into *copy (npending
 * clamped).  Returns the seqlock's count it was read at: equal counts, the
 * same wait.  Cannot fail; spins while a write is under way. */
uint32_t job_slot_wait_read(const job_slot *s, job_wait *copy);

/* Publishes rank's address (len <= JOB_ADDR_MAX, asserted). */
void job_addr_publish(const job *j, int rank, const void *addr, size_t len);
/* Waits until rank's address is published, up to the absolute job_now()
 * deadline, and copies it out.  0, CL_ETIMEOUT, or CL_EPROTO when it does
 * not fit cap. */
int job_addr_wait(const job *j, int rank, void *out, size_t cap, size_t *len, double deadline);

#endif
