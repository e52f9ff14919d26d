/*
 * flow_bench.c - sim_flow_bench: what the flow solver costs per flow.
 *
 * Drives sim/flow.c the way the engine will: completion events in a
 * sim_queue, moved by the `moved` callback (a queue cannot move an event,
 * so a moved flow gets a new event with a new version and the old one is
 * skipped when it pops).  Three cases:
 *   - all-to-all of P ranks on one switch (rank r's port is two resources,
 *     up 2r and down 2r+1, of 50 GB/s), P(P-1) flows of 256 MiB posted in
 *     the order an all-to-all posts them (rank 0 to 1, 2, .., then rank 1,
 *     ..), all at t = 0, drained to the end.  "each" solves on every start
 *     and finish; "batch" wraps the starts, and the finishes at one
 *     instant, in a batch.
 *   - disjoint flows (rank i to rank i+1 on a mesh's ports), the fast
 *     path: 1,000,000 at once (2,000,000 resources in use: the cost is
 *     mostly cache misses in the table and pool), and 1,000 at once
 *     1,000 times over (all in cache: the cost of the code).
 * Prints figures; asserts nothing.
 */
#include "sim/flow.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "commlab.h"
#include "sim/queue.h"

#define N_BYTES 268435456.0 /* 256 MiB */
#define BW 50e9             /* bytes/s */

typedef struct rec {
    sim_flow *f;
    uint64_t version; /* events carrying an older one are stale */
} rec;

typedef struct drive {
    sim_queue *q;
    int err;
} drive;

static double secs(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void post(drive *d, rec *r, double end)
{
    sim_event ev = {.time = end, .arg = ++r->version, .ptr = r};
    if (sim_queue_push(d->q, &ev))
        d->err = CL_ENOMEM;
}

static void moved(void *ctx, sim_flow *f, double end)
{
    post(ctx, sim_flow_owner(f), end);
}

static int all_to_all(FILE *out, int P, bool batch)
{
    drive d = {0};
    sim_flow_sys *s = NULL;
    size_t nf = (size_t)P * (size_t)(P - 1);
    rec *recs = calloc(nf, sizeof(*recs));
    int rc = CL_ENOMEM;
    if (!recs || sim_queue_create(&d.q) || sim_flow_create(&s, moved, &d))
        goto out;
    double t0 = secs();
    if (batch)
        sim_flow_batch_begin(s, 0);
    size_t i = 0;
    for (int src = 0; src < P; src++) {
        for (int k = 1; k < P; k++, i++) {
            int dst = (src + k) % P;
            int64_t res[2] = {2 * (int64_t)src, 2 * (int64_t)dst + 1};
            double cap[2] = {BW, BW};
            if ((rc = sim_flow_start(s, 0, res, cap, 2, N_BYTES, &recs[i], &recs[i].f)))
                goto out;
            if (sim_flow_end(recs[i].f) < INFINITY)
                post(&d, &recs[i], sim_flow_end(recs[i].f));
        }
    }
    if (batch)
        sim_flow_batch_end(s);
    double t1 = secs();
    sim_flow_stats st0 = *sim_flow_stats_get(s);
    sim_event ev;
    double last = 0;
    bool open = false; /* a batch of the finishes at `last` */
    for (;;) {
        /* A batch ends before an event of a later time is taken: its solve
         * may move ends to before events already queued. */
        const sim_event *next = sim_queue_peek(d.q);
        if (open && (!next || next->time != last)) {
            sim_flow_batch_end(s);
            open = false;
            continue;
        }
        if (!sim_queue_pop(d.q, &ev))
            break;
        rec *r = ev.ptr;
        if (ev.arg != r->version)
            continue;
        r->version++; /* finished: any later event for it is stale */
        if (batch && !open) {
            sim_flow_batch_begin(s, ev.time);
            open = true;
        }
        last = ev.time;
        sim_flow_finish(s, ev.time, r->f);
    }
    double t2 = secs();
    rc = d.err;
    if (rc)
        goto out;
    const sim_flow_stats *st = sim_flow_stats_get(s);
    fprintf(out,
            "all-to-all %5d ranks %-5s %8zu flows: start %8.3f s, drain %8.3f s, %10.0f flows/s;"
            " %" PRIu64 " solves (%" PRIu64 " at start), %" PRIu64
            " flows solved, solver %.3f s, %" PRIu64 " moves, last end %.6f s = %.12f (P-1)n/B\n",
            P, batch ? "batch" : "each", nf, t1 - t0, t2 - t1, (double)nf / (t2 - t0), st->solves,
            st0.solves, st->solved_flows, st->solve_s, st->moves, last,
            last / ((double)(P - 1) * N_BYTES / BW));
out:
    sim_flow_destroy(s);
    sim_queue_destroy(d.q);
    free(recs);
    return rc;
}

/* n flows i -> i+1 on a ring of n mesh ports, all started then all
 * finished, `rounds` times; the first round grows the pools and the
 * table, the others run on warm ones. */
static int disjoint(FILE *out, int n, int rounds)
{
    sim_flow_sys *s = NULL;
    sim_flow **f = malloc((size_t)n * sizeof(*f));
    int rc = CL_ENOMEM;
    if (!f || sim_flow_create(&s, NULL, NULL))
        goto out;
    double now = 0, start[2] = {0, 0}, finish[2] = {0, 0};
    size_t inuse = 0;
    for (int round = 0; round < rounds; round++) {
        double t0 = secs();
        for (int i = 0; i < n; i++) {
            int64_t res[2] = {2 * (int64_t)i, 2 * (int64_t)((i + 1) % n) + 1};
            double cap[2] = {BW, BW};
            if ((rc = sim_flow_start(s, now, res, cap, 2, N_BYTES, NULL, &f[i])))
                goto out;
        }
        double t1 = secs();
        inuse = sim_flow_resources(s);
        now = sim_flow_end(f[0]);
        for (int i = 0; i < n; i++)
            sim_flow_finish(s, now, f[i]);
        double t2 = secs();
        start[round > 0] += t1 - t0;
        finish[round > 0] += t2 - t1;
    }
    const sim_flow_stats *st = sim_flow_stats_get(s);
    double warm = (double)n * (rounds - 1);
    fprintf(out,
            "disjoint %7d flows x %4d rounds: start %6.1f ns/flow, finish %6.1f ns/flow"
            " (first round %6.1f, %6.1f); %zu resources in use at peak, %" PRIu64
            " of %" PRIu64 " starts fast, %" PRIu64 " finishes fast, %" PRIu64 " solves\n",
            n, rounds, 1e9 * start[1] / warm, 1e9 * finish[1] / warm, 1e9 * start[0] / n,
            1e9 * finish[0] / n, inuse, st->fast_starts, st->starts, st->fast_finishes,
            st->solves);
    rc = 0;
out:
    sim_flow_destroy(s);
    free(f);
    return rc;
}

int sim_flow_bench(FILE *out)
{
    int rc;
    if ((rc = all_to_all(out, 64, false)) || (rc = all_to_all(out, 64, true)) ||
        (rc = all_to_all(out, 1024, true)) || (rc = disjoint(out, 1000000, 3)) ||
        (rc = disjoint(out, 1000, 1000)))
        return rc;
    return 0;
}
