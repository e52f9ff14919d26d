/*
 * flow.h - max-min fair sharing of bandwidth between concurrent flows.
 *
 * A resource is something with a capacity that flows share: one direction
 * of a link, or both directions of a half-duplex link.  The caller names
 * each resource with a 64-bit id of its choosing and gives its capacity
 * (bytes/s, or 1.0 with work in seconds) every time a flow crosses it.  A
 * flow has a route (1..SIM_FLOW_MAX_ROUTE distinct resources), an amount
 * of work (bytes), a rate, and a predicted end:
 *
 *   end = t + remaining / rate,   t the last time its rate was applied.
 *
 * Rates are max-min fair, by progressive filling: repeatedly take the
 * resource with the smallest fair share (remaining capacity / flows on it
 * not yet fixed; ties to the lowest id), fix those flows at that share,
 * take it from the other resources they cross, repeat.  Shares found
 * within a relative 1e-9 of the current filling level are snapped to it,
 * so flows that are equal in exact arithmetic get bit-identical rates and
 * ends (an all-to-all's flows end together, as one batch of events) at
 * the price of rates up to 1e-9 off and a resource up to 1e-9 of its
 * capacity unused or over.  Likewise work left below 1e-9 of a flow's
 * work counts as none: such a flow ends now.
 *
 * Incremental: a start or finish recomputes only the connected component
 * of flows that share resources (transitively) with it; each flow there
 * first has its remaining work advanced by rate x (now - t).  A flow whose
 * rate comes out bit-identical keeps its end; every other flow whose end
 * changed is reported through the `moved` callback given at create time,
 * so the caller can move its completion event.  Flows elsewhere are not
 * touched.
 *
 * Fast path: a flow whose resources all carry no flow gets the smallest
 * capacity as its rate in O(route) hash lookups, and finishing a flow
 * that is alone on all its resources only releases them; neither walks a
 * component nor allocates in steady state (flows and resources come from
 * free lists).  stats.fast_starts and stats.fast_finishes count them.
 *
 * Batches: between sim_flow_batch_begin and sim_flow_batch_end, starts and
 * finishes at one instant only record what changed (a contended new flow
 * has rate 0 and end +inf meanwhile), and batch_end solves every touched
 * component once.  An all-to-all posted at one instant then costs one
 * solve instead of one per flow.
 *
 * Memory: resources exist while a flow crosses them (a hash table by id
 * and a pool, both sized by the peak number in use, never by the size of
 * the network: 64 bytes each plus 32 to 64 of table; with
 * sim_flow_keep_idle, by the number ever used); flows are pooled by
 * route length, 64 + 24 x route bytes each.  Nothing is given back to
 * the allocator before sim_flow_destroy.
 *
 * Complexity.  Fast start/finish: O(route); with millions of resources
 * in use their time goes to the hash table's and the pools' cache
 * misses, not to the work (sim_flow_bench times both).  A solve of a
 * component with F flows, R resources and E = sum of route lengths:
 * O(E log R) (an indexed binary heap of resources by (share, id); a fixed
 * flow updates the key of each other resource it crosses).  Without
 * batches, n flows started one by one into one component cost
 * O(n E log R) in all, quadratic in n, where a batch solves the
 * component once: hence the batches (sim_flow_bench times an all-to-all
 * both ways; README, beside `bench sim`'s figures, has what it
 * measured).  A component whose flows end at distinct times is still
 * solved once per end: the model recomputes whatever a change can reach.
 *
 * Time: every call's `now` is >= the previous one's (asserted).  Not
 * thread-safe; one system belongs to one simulator.
 */
#ifndef SIM_FLOW_H
#define SIM_FLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define SIM_FLOW_MAX_ROUTE 16

typedef struct sim_flow_sys sim_flow_sys;
typedef struct sim_flow sim_flow;

/* Called for each flow whose predicted end changed during a solve, with
 * the new end (seconds).  Not called for the flow that sim_flow_start is
 * returning (read sim_flow_end); a flow started inside a batch on the slow
 * path is reported at batch_end.  It must not call back into the system. */
typedef void sim_flow_moved_fn(void *ctx, sim_flow *f, double end);

typedef struct sim_flow_stats {
    uint64_t starts;         /* flows started */
    uint64_t finishes;       /* flows finished */
    uint64_t fast_starts;    /* starts on free resources: no solve */
    uint64_t fast_finishes;  /* finishes of a flow alone on its route */
    uint64_t solves;         /* component recomputations */
    uint64_t solved_flows;   /* flows visited by solves, summed */
    uint64_t solved_res;     /* resources visited by solves, summed */
    uint64_t moves;          /* moved callbacks */
    double solve_s;          /* seconds of CPU wall time inside solves */
} sim_flow_stats;

/* ---- lifecycle ---- */

/* An empty system in *out; moved (may be NULL) gets ctx.  CL_ENOMEM: *out
 * is left untouched. */
int sim_flow_create(sim_flow_sys **out, sim_flow_moved_fn *moved, void *ctx);
/* Frees s with every flow still in it; NULL is a no-op. */
void sim_flow_destroy(sim_flow_sys *s);
/* From now on a resource that goes idle stays in the table instead of
 * being released: memory follows the resources ever used, and a flow on
 * a route used before finds its resources without inserting them (the
 * simulator's choice: a pattern sends over the same links again and
 * again).  sim_flow_resources then counts idle ones too.  Cannot fail. */
void sim_flow_keep_idle(sim_flow_sys *s);

/* ---- flows ---- */

/* Starts a flow of work (>= 0, finite) at now over the nres (1..16)
 * distinct resources res[], cap[i] (> 0, finite) being res[i]'s capacity.
 * A resource keeps the capacity it was given when it went from idle to in
 * use; a different one while it is in use is an error.  Returns 0 and the
 * flow in *out (owned by s until sim_flow_finish), or CL_EINVAL (a bad
 * argument, a repeated resource, a capacity mismatch) or CL_ENOMEM; on
 * error nothing is changed and *out is untouched. */
int sim_flow_start(sim_flow_sys *s, double now, const int64_t *res, const double *cap,
                   int nres, double work, void *owner, sim_flow **out);
/* A flow that started at since (<= now) over resources that carry no
 * flow, and has moved alone at their smallest capacity ever since: the
 * state sim_flow_start(since, ...) would have left, bit for bit (rate,
 * end, work advanced by the next solve).  A caller that prices a lone
 * flow itself hands it over this way once another flow comes to share
 * its resources.  CL_EINVAL also when since > now or (since < now and)
 * a resource carries a flow; otherwise as sim_flow_start. */
int sim_flow_adopt(sim_flow_sys *s, double since, double now, const int64_t *res, const double *cap,
                   int nres, double work, void *owner, sim_flow **out);
/* Removes f at now (normally its end: the caller got its completion) and
 * gives its share to the flows it met.  f is invalid afterwards.  Cannot
 * fail. */
void sim_flow_finish(sim_flow_sys *s, double now, sim_flow *f);

/* Defers solving until sim_flow_batch_end; every start and finish until
 * then must have this now (asserted).  Batches do not nest. */
void sim_flow_batch_begin(sim_flow_sys *s, double now);
/* Solves every component touched since batch_begin and reports the flows
 * whose end changed.  Call it before taking an event of a later time:
 * the solve may move an end to before events already queued.  Cannot
 * fail. */
void sim_flow_batch_end(sim_flow_sys *s);

/* ---- queries (cannot fail) ---- */

/* Predicted completion time at the current rates; +inf for a contended
 * flow started in an open batch. */
double sim_flow_end(const sim_flow *f);
/* Current rate (capacity units per second). */
double sim_flow_rate(const sim_flow *f);
/* Work left at time now (>= the flow's last update), never negative. */
double sim_flow_remaining(const sim_flow *f, double now);
void *sim_flow_owner(const sim_flow *f);
/* Flows started and not finished. */
size_t sim_flow_active(const sim_flow_sys *s);
/* Resources in use (crossed by at least one flow). */
size_t sim_flow_resources(const sim_flow_sys *s);
const sim_flow_stats *sim_flow_stats_get(const sim_flow_sys *s);

/* ---- checks ---- */

/* Checks, outside a batch: flow lists and the hash table agree; no
 * resource carries more than its capacity (relative 1e-8); every flow has
 * a bottleneck, a resource on its route that is full (within 1e-8) and
 * where no flow has a larger rate, which is what makes the rates max-min
 * fair.  O(route x flows on a resource) per flow: for tests.  Returns 0,
 * or CL_EINVAL after printing to stderr what differed. */
int sim_flow_check(const sim_flow_sys *s);

/* ---- benchmark ---- */

/* Prints figures for all-to-all at 64 and 1,024 ranks on one switch and
 * for 1,000,000 disjoint flows (sim/flow_bench.c).  Returns 0, or
 * CL_ENOMEM. */
int sim_flow_bench(FILE *out);

#endif
