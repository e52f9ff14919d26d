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
 * what their launchers report: real/boot.h).  Each rank publishes its
 * transport address in its job_addr.  The transport's own shared area
 * (rings, doorbells) follows them in the same mapping.
 */
#ifndef REAL_JOB_H
#define REAL_JOB_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "core/record.h"
#include "core/waitfor.h"

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

typedef struct job_slot {
    _Alignas(JOB_LINE) _Atomic uint32_t seq; /* seqlock: odd while writing the wait */
    _Atomic uint32_t state;                  /* a job_state */
    _Atomic uint64_t progress;               /* grows whenever something completes */
    /* the wait, under seq */
    uint32_t call;     /* wf_op of the blocking call */
    uint32_t npending; /* entries in pending */
    uint32_t nwaiting; /* operations waited on (may exceed JOB_MAX_PENDING) */
    int32_t iter;      /* iteration it is in */
    wf_pending pending[JOB_MAX_PENDING];
    /* written once, before the rank exits */
    int32_t status;    /* 0 or the CL_E* it ended with */
    uint64_t messages; /* pattern messages sent, all iterations */
    uint64_t bytes;    /* pattern bytes sent */
    _Atomic uint64_t nrec; /* records written (may exceed the room: dropped) */
    char msg[512];     /* why it failed, "rank 1: ..." */
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
    size_t rec_cap;     /* records each rank has room for (0: none kept) */
    job_slot *slots;    /* nranks */
    double *iter_time;  /* nranks * iters: rank r's time of iteration i at r * iters + i */
    cl_record *recs;    /* nranks * rec_cap */
    job_addr *addrs;    /* nranks */
    void *transport;    /* the transport's shared area */
    const struct netlab *netlab; /* --netlab: every rank's namespace and address
                                    (real/netlab.h); NULL: none */
    void *map;          /* the one mapping all of this lives in */
    size_t map_bytes;
} job;

/* Monotonic seconds, the same clock in every process of the machine. */
double job_now(void);

/* Publishes rank's address (len <= JOB_ADDR_MAX, asserted). */
void job_addr_publish(const job *j, int rank, const void *addr, size_t len);
/* Waits until rank's address is published, up to the absolute job_now()
 * deadline, and copies it out.  0, CL_ETIMEOUT, or CL_EPROTO when it does
 * not fit cap. */
int job_addr_wait(const job *j, int rank, void *out, size_t cap, size_t *len, double deadline);

#endif
