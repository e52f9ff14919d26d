/*
 * launch_impl.h - what real/launch.c and real/launch_watch.c share: the
 * launcher's state while ranks run, and the watchdog's entry points.
 * Private to those two files.
 *
 * The launcher forks the ranks (launch.c) and watches them
 * (launch_watch.c): every TICK_NS it reaps the ones that ended, reads
 * their progress counters and published waits, and reports a deadlock, a
 * --timeout or an interrupt; the first failure wins (launch__fail) and
 * ends every rank's process group.
 */
#ifndef CL_LAUNCH_IMPL_H
#define CL_LAUNCH_IMPL_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "real/job.h"
#include "real/launch.h"

#define TICK_NS 10000000L /* the watchdog looks every 10 ms */

/* What the watchdog last saw of a rank's progress counter. */
typedef struct progress_mark {
    uint64_t count; /* the slot's progress */
    double at;      /* job_now() when it last changed (or the run started) */
} progress_mark;

typedef struct launcher {
    const real_opts *o;
    job *j;
    progress_mark *marks; /* nranks */
    double started;       /* job_now() when the watchdog began */
    pid_t *pids;     /* 0 once reaped */
    pid_t *groups;   /* each rank's process group (its pid), 0: none; kept after reaping */
    int alive;
    int failed_rank; /* the first rank that failed, -1 */
    run_result *res;
    uint64_t last_progress;
    double last_moved;  /* when the progress counters last moved */
    double last_change; /* ... or a rank was last seen not blocked */
    bool noted;         /* the stopped ranks of this stall were reported */
    double deadline;    /* job_now() past which the run fails; 0: none */
    /* a rank in this process (real_transport.in_process) */
    bool in_process;
    _Atomic bool rank_ended; /* it returned, with this exit code: */
    _Atomic int rank_code;
    const sigset_t *signals; /* what the watchdog thread waits for */
    pthread_t watchdog;      /* the thread watching it ... */
    pthread_t rank_thread;   /* ... and the one running it, */
    pid_t pid;               /* in this process */
} launcher;

/* Every rank and whatever it started: its process group outlives the rank
 * as long as a process is left in it.  Cannot fail. */
void launch__kill_all(launcher *l);

/* The run's first failure (the status, the words) wins; later ones are
 * dropped.  Every rank is killed either way.  Cannot fail. */
void launch__fail(launcher *l, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Where reports go: the job's report file, else stderr. */
FILE *launch__report_file(const launcher *l);

/* Watches the ranks until none is left (and the world, when there is
 * one, has heard): reaps, reads progress, reports a deadlock, a timeout
 * or a signal of set. */
void launch__watch(launcher *l, const sigset_t *set);

/* launch__watch(arg, arg's signals) on a thread of its own, for a rank
 * that runs in the launcher's process.  Returns NULL. */
void *launch__watch_thread(void *arg);

#endif
