/*
 * sync.h - when a measured iteration starts: the window way, and the
 * clock offsets it needs across hosts.
 *
 * The barrier way starts each rank's iteration when the barrier lets that
 * rank go.  Ranks leave a barrier up to a message apart, so the first to
 * leave counts the others' lateness in its own time, and at small sizes
 * that lateness is most of what is measured.  The window way (the
 * default, core/run.h) starts every rank at one instant instead: the
 * barrier before an iteration carries each rank's proposal of a start a
 * little in the future (its arrival plus its window) and hands every rank
 * the latest proposal, the release; each rank waits for the release on
 * the common clock and starts.  The iteration's time is then the latest
 * end minus the earliest start (ranks that start on time start at the
 * release).  This is ReproMPI's window-based synchronization (Hunold and
 * Carpen-Amarie, EuroMPI 2015; IEEE TPDS 2016) and what MPIX_Harmonize
 * proposes to MPI (Schuchart, Hunold and Bosilca, EuroMPI 2023).
 *
 * The window adapts per rank: it starts at twice what the first barrier
 * took from the last rank's arrival; a rank that leaves a barrier after
 * the release (the window was too short) doubles it; otherwise it
 * shrinks by 1% an iteration, so it follows a machine that quiets down.  A late rank
 * starts at once; it is never dropped, and the spread of the ranks'
 * actual starts (the start skew) is measured every iteration: each
 * rank's lateness rides on the next iteration's barrier.
 *
 * The common clock.  Ranks of one launcher share CLOCK_MONOTONIC.  Ranks
 * started apart (other hosts, mpirun's processes) estimate their offset
 * to rank 0 first, by ping-pong: the offset whose round trip was the
 * shortest, taken at its midpoint (the error is at most half that round
 * trip, and less when the two ways cost alike).  Clocks also drift
 * apart (crystals differ by tens of parts per million: 10 us a second),
 * so where they are not shared the offset is estimated again every
 * SYNC_REESTIMATE seconds of rank 0's clock, outside the timed
 * iterations, and the rate from the first estimate to the latest (the
 * drift) carries the offset forward between them.
 */
#ifndef CL_SYNC_H
#define CL_SYNC_H

#include "commlab.h"

#define SYNC_WINDOW_MAX 0.05  /* seconds: the longest window (a rank stopped for
                                 a while does not make every later start wait) */
#define SYNC_WINDOW_MIN 50e-9 /* seconds: the shortest (a few clock readings) */
#define SYNC_SHRINK 0.99      /* the window after an iteration whose start all made */
#define SYNC_CLOCK_ROUNDS 24  /* ping-pongs per rank to estimate its offset */
#define SYNC_REESTIMATE 1.0   /* seconds between two estimates of the offsets */

/* One rank's view of the window way, zeroed before the first iteration. */
typedef struct sync_state {
    bool estimating; /* the clocks are not shared: offsets are estimated */
    bool again;      /* the last barrier asked for a new estimate */
    double offset;   /* seconds: this rank's clock minus rank 0's at .at (0: one clock) */
    double drift;    /* seconds the offset grows a second of this rank's clock */
    double at;       /* this rank's clock when .offset was estimated (rank 0: its
                        clock then, which decides when to estimate again) */
    double first_offset, first_at; /* the first estimate: the drift is measured
                                      over the whole run, so the estimates'
                                      own errors shrink as it goes on */
    double window;  /* seconds: how far past its arrival this rank proposes the start */
    double release; /* the running iteration's start, seconds on rank 0's clock */
    double late;    /* seconds after the release this rank started the last iteration */
} sync_state;

/* What the ranks' starts of the iteration before came to, over all ranks. */
typedef struct sync_spread {
    double first; /* seconds after its release the earliest rank started */
    double last;  /* idem, the latest: last - first is the start skew */
} sync_spread;

/* Estimates s->offset by ping-pong with rank 0 (rank 0's is 0), and the
 * drift since the first estimate, if any; sets s->estimating.  Every rank
 * of the world communicator c calls it, in the same place.  0, or the
 * backend's error (a failed peer), with s unchanged. */
int sync_clock_offset(cl_comm *c, sync_state *s);

/* The barrier before an iteration, the window way: agrees on the release,
 * adapts the window, and returns once the common clock reads the release
 * (c->ops->wait_until must be set).  *prev: the spread of the starts of
 * the iteration before (s->late of every rank).  0, or the barrier's
 * error. */
int sync_start(cl_comm *c, sync_state *s, sync_spread *prev);

/* After the last iteration: the spread of its starts, from a barrier that
 * starts nothing.  0, or the barrier's error. */
int sync_finish(cl_comm *c, sync_state *s, sync_spread *prev);

/* This rank's clock minus rank 0's, at this rank's clock reading t. */
static inline double sync_offset_at(const sync_state *s, double t)
{
    return s->offset + s->drift * (t - s->at);
}

/* This rank's clock reading t as seconds after the release. */
static inline double sync_since_release(const sync_state *s, double t)
{
    return t - sync_offset_at(s, t) - s->release;
}

#endif
