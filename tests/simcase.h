/* simcase.h - a pattern run in the simulator the way `commlab run` runs it,
 * for the tests that check what a pattern does (test_sim, test_exercise,
 * test_debug): the tier, protocol and payload of the case, the output and
 * reports the run printed kept in memory.  Every step is asserted, so a
 * case that cannot run fails the test that asked for it. */
#ifndef CL_TESTS_SIMCASE_H
#define CL_TESTS_SIMCASE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commlab.h"
#include "core/record.h"
#include "core/tier.h"
#include "sim/engine.h"
#include "sim/net.h"
#include "tests/testutil.h"

typedef struct run {
    run_result res;
    sim_stats stats;    /* the engine's counters */
    char *out, *report; /* what the run printed: pattern output, reports */
    size_t out_len, report_len;
} run;

typedef struct setup {
    const char *tier;     /* default nvlink (alpha 1 us, 300 GB/s) */
    sim_net *net;         /* instead of the tier's mesh (borrowed) */
    bool no_sharing;      /* --sharing none (default: maxmin) */
    bool solver_only;     /* maxmin without lone flows (sim_opts.solver_only) */
    uint64_t eager_limit; /* default 64 KiB */
    bool no_payload;
    bool handshake;
    bool debug;           /* --debug's buffer checks (core/debug.h) */
    int iters;            /* default 1 */
    double timeout;       /* --timeout, seconds (default 0: no limit) */
    rec_log *records;
} setup;

static inline const cl_tier *course_tier(tier_set *ts, const char *name)
{
    if (ts->n == 0 && tier_set_load(ts, "configs/tiers.yaml", NULL))
        fail_msg("cannot load configs/tiers.yaml (run from the repository root)");
    const cl_tier *t = tier_set_find(ts, name);
    assert_non_null(t);
    return t;
}

/* Runs fn on n ranks with messages of bytes; extra gives the pattern's
 * other arguments (NULL: 4 microbatches), s the case (NULL: defaults). */
static inline void run_pattern(run *r, cl_pattern_fn *fn, int n, uint64_t bytes,
                               const cl_args *extra, const setup *s)
{
    static const setup none = {0};
    if (!s)
        s = &none;
    tier_set ts = {0};
    sim_net *net = s->net;
    if (!net)
        assert_int_equal(sim_net_create_tier(&net,
                                             course_tier(&ts, s->tier ? s->tier : "nvlink"), n,
                                             NULL),
                         0);
    memset(r, 0, sizeof *r);
    FILE *out = open_memstream(&r->out, &r->out_len);
    FILE *rep = open_memstream(&r->report, &r->report_len);
    sim_opts o = {
        .job = {.fn = fn, .args = extra ? *extra : (cl_args){.microbatches = 4}, .nranks = n,
                .eager_limit = s->eager_limit ? s->eager_limit : 65536,
                .payload = !s->no_payload, .iters = s->iters ? s->iters : 1,
                .records = s->records, .out = out, .report = rep, .debug = s->debug,
                .timeout = s->timeout},
        .net = net, .handshake = s->handshake,
        .sharing = s->no_sharing ? SIM_SHARE_NONE : SIM_SHARE_MAXMIN,
        .solver_only = s->solver_only,
    };
    o.job.args.bytes = (size_t)bytes;
    assert_int_equal(sim_run(&o, &r->res, &r->stats), 0);
    fclose(out);
    fclose(rep);
    if (net != s->net)
        sim_net_destroy(net);
    tier_set_release(&ts);
}

static inline void run_release(run *r)
{
    run_result_release(&r->res);
    free(r->out);
    free(r->report);
}

#endif
