/*
 * waitfor.h - why no rank can make progress: the wait-for analysis and the
 * deadlock report, shared by the simulator and the real launcher.
 *
 * When nothing can progress (sim: the event queue is empty and some rank has
 * not returned; real: the watchdog sees every unfinished rank blocked), the
 * caller describes every rank in a wf_rank array, waitfor_analyze() finds the
 * reason, and waitfor_report() prints it.
 *
 * The model.  A blocked rank waits on ALL of its pending operations (the AND
 * model), so each pending operation is an edge rank -> peer of the wait-for
 * graph:
 *   - WF_SEND, WF_RECV with peer >= 0: one edge to peer (peer may be the rank
 *     itself: a blocking send to self is a cycle of one);
 *   - WF_RECV with peer WF_ANY_SOURCE: an edge to every other rank that has
 *     not returned;
 *   - WF_BARRIER: an edge to every other rank that has not returned and has
 *     no pending WF_BARRIER itself (the ranks that have not entered it).
 * Running ranks have no edges (they may still act); returned ranks are not
 * nodes, and an edge that would reach one is a finding of its own.  The
 * analysis looks for, in this order of importance:
 *   1. a cycle: the first one met by a depth-first search from the lowest
 *      blocked rank, following operations in pending order and wildcard
 *      edges in rank order, printed from its lowest rank;
 *   2. waits on returned ranks: a blocked rank with an operation on a peer
 *      that already returned (or a wildcard receive when every other rank
 *      returned, or a barrier some rank left by returning);
 *   3. receives nobody sends: a receive whose peer (or, for ANY_SOURCE,
 *      every other rank) is blocked and has no pending send to this rank
 *      with a compatible tag.
 * The search is iterative and the wildcard edges are never built (a
 * next-unvisited-rank skip list stands for them), so the cost is
 * O((n + P) log P) time and O(n + P) memory for n ranks and P pending
 * operations, whatever the number of wildcards.
 *
 * Ownership.  The input is only read, during the calls.  A wf_result is
 * caller memory whose arrays the analysis allocates: release it with
 * waitfor_result_release().  Nothing here keeps state between calls.
 */
#ifndef CORE_WAITFOR_H
#define CORE_WAITFOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "commlab.h"

/* Wildcards: the pattern-facing ones of commlab.h (both -1). */
#define WF_ANY_SOURCE CL_ANY_SOURCE
#define WF_ANY_TAG CL_ANY_TAG
/* wf_wait.other_tag when the peer sends nothing to the rank. */
#define WF_NO_TAG (-2)

typedef enum wf_state {
    WF_RUNNING, /* not blocked: may still make progress; no edges */
    WF_BLOCKED, /* inside a blocking call; waits on all its pending ops */
    WF_DONE,    /* the pattern function returned */
} wf_state;

/* A blocking call (wf_rank.call) or an operation (wf_pending.op). */
typedef enum wf_op {
    WF_SEND,    /* call or op: a send not yet completed */
    WF_RECV,    /* call or op: a receive not yet completed */
    WF_WAIT,    /* call only: cl_wait on one request */
    WF_WAITALL, /* call only: cl_waitall */
    WF_BARRIER, /* call or op: a barrier not every rank has entered */
} wf_op;

typedef struct wf_pending {
    wf_op op;       /* WF_SEND, WF_RECV or WF_BARRIER */
    int peer;       /* dst of a send, src of a recv (or WF_ANY_SOURCE);
                       ignored for WF_BARRIER */
    int tag;        /* >= 0; a recv may have WF_ANY_TAG; ignored for barrier */
    uint64_t bytes; /* message size in bytes (for a recv: the buffer size) */
} wf_pending;

typedef struct wf_rank {
    wf_state state;
    wf_op call;                /* the blocking call it is in, when blocked */
    const wf_pending *pending; /* incomplete ops it waits on, when blocked */
    size_t npending;           /* entries in pending (0 allowed: no edges) */
} wf_rank;

typedef struct wf_report_opts {
    uint64_t eager_limit; /* bytes; sends above it wait for their receive */
    double time;          /* seconds when progress stopped; < 0 if unknown */
    size_t max_ranks;     /* blocked-rank lines before eliding; 0: 20 */
    size_t max_cycle;     /* cycle ranks printed before eliding; 0: 20 */
} wf_report_opts;

/* One rank waiting on one peer through one of its pending operations. */
typedef struct wf_wait {
    int rank;      /* the blocked rank */
    int peer;      /* the rank waited on; WF_ANY_SOURCE: any other rank */
    size_t op;     /* index in ranks[rank].pending */
    int other_tag; /* unsent receives: a tag peer does send to rank (the
                      lowest), or WF_NO_TAG; elsewhere WF_NO_TAG */
    bool on_cycle; /* this op is rank's edge on the reported cycle */
} wf_wait;

typedef struct wf_result {
    bool deadlock;     /* a cycle or a wait on a returned rank was found */
    size_t nblocked;   /* ranks per state */
    size_t nrunning;
    size_t ndone;
    wf_wait *cycle;    /* cycle[i] waits on cycle[(i+1) % len].rank; starts
                          at the cycle's lowest rank; NULL when none */
    size_t cycle_len;
    wf_wait *on_done;  /* waits on returned ranks, by rank then op */
    size_t non_done;
    wf_wait *unsent;   /* receives nobody sends, by rank then op */
    size_t nunsent;
} wf_result;

/* ---- analysis ---- */

/* Analyze n ranks.  Returns 0 and fills *out (release it), or CL_EINVAL
 * (a state or op out of range, a peer outside [0, n), ANY_SOURCE in a send,
 * a tag < -1, pending NULL with npending > 0, n or npending > INT_MAX) or
 * CL_ENOMEM; on error *out is zeroed and needs no release. */
int waitfor_analyze(const wf_rank *ranks, size_t n, wf_result *out);

/* Free the arrays of a result and zero it.  Cannot fail; NULL-safe. */
void waitfor_result_release(wf_result *res);

/* ---- report ---- */

/* Print the report for a result of waitfor_analyze on the same ranks.
 * Deterministic: the same input prints the same bytes.  Returns 0, or
 * CL_EIO if writing to f failed (part of the report may be written). */
int waitfor_report(FILE *f, const wf_rank *ranks, size_t n,
                   const wf_report_opts *opts, const wf_result *res);

/* The one way every backend reports its blocked ranks: analyzes them and
 * prints the report to f (unless only_deadlock and no deadlock was
 * found), then releases the result.  Returns whether a deadlock was
 * found; false, with nothing printed, when the analysis failed (out of
 * memory, or ranks it refuses). */
bool waitfor_explain(FILE *f, const wf_rank *ranks, size_t n, const wf_report_opts *opts,
                     bool only_deadlock);

#endif /* CORE_WAITFOR_H */
