/* test_run.c - core/run: the definition of an iteration's time, the row a
 * run comes to, and the driver as the simulator runs it: ranks that leave
 * the barrier at different times are timed each on its own clock.  The
 * measured side of the same definition is real_cases.h's
 * test_iteration_definition, run on shm, tcp and rdma.  What a pattern
 * prints comes from the median iteration, and the time it spent printing
 * is counted apart. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commlab.h"
#include "core/comm.h"
#include "core/record.h"
#include "core/run.h"
#include "sim/engine.h"
#include "sim/net.h"
#include "tests/simcase.h"
#include "tests/testutil.h"

/* out[i] is the largest of the ranks' own times for iteration i. */
static void test_iter_times_max(void **state)
{
    (void)state;
    /* 3 ranks x 2 iterations, rank r's times at r * 2 + i */
    const double per_rank[] = {1.0, 5.0, /* rank 0 */
                               3.0, 2.0, /* rank 1 */
                               2.5, 4.0 /* rank 2 */};
    double out[2];
    run_iter_times(per_rank, 3, 2, out);
    assert_true(out[0] == 3.0);
    assert_true(out[1] == 5.0);
}

/* A row: times divided by the pattern's divisor (ping-pong: a round trip
 * is two one-way times), messages per iteration over warm-up and timed. */
static void test_row_fill(void **state)
{
    (void)state;
    run_result res = {0};
    assert_int_equal(run_result_init(&res, 3), 0);
    res.iter_time[0] = 4e-6;
    res.iter_time[1] = 2e-6;
    res.iter_time[2] = 6e-6;
    res.messages = 10;
    pattern_info p = {.name = "pp", .time_divisor = 2};
    run_row row;
    assert_int_equal(run_row_fill(&row, &res, &p, 1000, 5), 0);
    assert_near(row.t.median, 2e-6, 1e-18);
    assert_near(row.t.min, 1e-6, 1e-18);
    assert_near(row.t.max, 3e-6, 1e-18);
    assert_near(row.bandwidth, 1000 / 2e-6, 1e-3);
    assert_int_equal(row.messages, 2); /* 10 messages over 5 iterations */
    run_result_release(&res);
}

/* Every rank computes for 1 ms: nothing else. */
static int compute_1ms(cl_comm *c, const cl_args *a)
{
    (void)a;
    return cl_compute(c, 1e-3);
}

/* Ranks 0 and 1 share a switch (1 us a link); rank 2 is behind a second
 * switch, 10 us further away.  The dissemination barrier of 3 ranks (round
 * k: send to r + 2^k, receive from r - 2^k) then releases them apart:
 * round 0: 0->1 lands at 2 us, 1->2 and 2->0 at 12 us; round 1: rank 0
 * finds 1's message (sent at 2 us) waiting and leaves at 12 us, 0->2 and
 * 2->1 land at 24 us, so ranks 1 and 2 leave at 24 us.  Each rank's own
 * time for the iteration is 1 ms; latest end - earliest start would be
 * 1.024 - 0.012 = 1.012 ms, the barrier's skew counted in.  These are the
 * figures chapter 06 prints ("What one iteration's time is"). */
static const char skew_topology[] =
    "devices: 3\n"
    "switches: [s0, s1]\n"
    "links:\n"
    "  - {a: 0, b: s0, alpha: 1us, bandwidth: 100GB/s}\n"
    "  - {a: 1, b: s0, alpha: 1us, bandwidth: 100GB/s}\n"
    "  - {a: s0, b: s1, alpha: 10us, bandwidth: 100GB/s}\n"
    "  - {a: 2, b: s1, alpha: 1us, bandwidth: 100GB/s}\n";

static void test_sim_skewed_barrier(void **state)
{
    (void)state;
    sim_net *net;
    cl_diag d = {{0}};
    if (sim_net_load_string(&net, "skew.yaml", skew_topology, NULL, &d))
        fail_msg("%s", d.msg);
    rec_log log;
    rec_log_init(&log, 1u << 16);
    setup s = {.net = net, .records = &log, .iters = 2};
    run r;
    run_pattern(&r, compute_1ms, 3, 8, NULL, &s);
    assert_int_equal(r.res.status, 0);
    for (int i = 0; i < 2; i++) {
        double lo = INFINITY, hi = -INFINITY, longest = 0;
        int seen = 0;
        for (size_t k = 0; k < log.n; k++) {
            const cl_record *x = &log.v[k];
            if (x->op != REC_ITER || x->iter != i)
                continue;
            seen++;
            lo = fmin(lo, x->started);
            hi = fmax(hi, x->finished);
            longest = fmax(longest, x->finished - x->started);
        }
        assert_int_equal(seen, 3);
        /* The definition, exactly: the largest of the ranks' own times. */
        assert_true(r.res.iter_time[i] == longest);
        assert_near(r.res.iter_time[i], 1e-3, 1e-15);
        /* ... and not the span, which holds the barrier's 12 us skew. */
        assert_near(hi - lo, 1.012e-3, 1e-12);
    }
    run_release(&r);
    rec_log_release(&log);
    sim_net_destroy(net);
}

/* The median iteration: the lower of the middle two for an even count,
 * the earliest of equal times. */
static void test_median_iter(void **state)
{
    (void)state;
    const double odd[] = {5, 1, 3}, even[] = {4, 1, 3, 2}, same[] = {2, 2, 2};
    assert_int_equal(run_median_iter(odd, 3), 2);
    assert_int_equal(run_median_iter(even, 4), 3);
    assert_int_equal(run_median_iter(same, 3), 1);
    assert_int_equal(run_median_iter(odd, 1), 0);
}

/* The median iteration by its definition: rank (iters - 1) / 2 in time
 * order, ties broken by number. */
static bool is_median_iter(const double *t, int iters, int m)
{
    int below = 0;
    for (int k = 0; k < iters; k++)
        below += t[k] < t[m] || (t[k] == t[m] && k < m);
    return below == (iters - 1) / 2;
}

/* Many sizes and orders, with many ties (times drawn from a few values),
 * each checked against the definition; then a million iterations in
 * descending order, which the selection handles as fast as any (a run can
 * time that many round trips). */
static void test_median_iter_many(void **state)
{
    (void)state;
    uint32_t x = 12345;
    double t[257];
    for (int n = 1; n <= 257; n += 8) {
        for (int values = 1; values <= 64; values *= 4) {
            for (int i = 0; i < n; i++) {
                x = x * 1103515245u + 12345u;
                t[i] = (double)((x >> 16) % (uint32_t)values);
            }
            assert_true(is_median_iter(t, n, run_median_iter(t, n)));
        }
    }
    int big = 1000000;
    double *desc = malloc((size_t)big * sizeof *desc);
    assert_non_null(desc);
    for (int i = 0; i < big; i++)
        desc[i] = big - i;
    /* Time k is iteration big - k; the median, rank (big - 1) / 2, is time
     * big / 2, iteration big / 2. */
    assert_int_equal(run_median_iter(desc, big), big / 2);
    free(desc);
}

/* Iteration i computes 1, 3, 5, 2, 4 ms and prints what it took: the line
 * printed is the median iteration's (1, 3 ms), not the first's. */
static int varied(cl_comm *c, const cl_args *a)
{
    static const double ms[] = {1, 3, 5, 2, 4};
    double t0 = cl_now(c);
    CL_TRY(cl_compute(c, ms[a->iteration % 5] * 1e-3));
    if (cl_rank(c) == 0)
        cl_printf(c, "iteration %d: %.3f ms", a->iteration, (cl_now(c) - t0) * 1e3);
    return 0;
}

static void test_sim_prints_median(void **state)
{
    (void)state;
    setup s = {.iters = 5};
    run r;
    run_pattern(&r, varied, 2, 8, NULL, &s);
    assert_int_equal(r.res.status, 0);
    if (strcmp(r.out, "rank 0: iteration 1: 3.000 ms\n") != 0)
        fail_msg("printed '%s', expected iteration 1's line alone", r.out);
    run_release(&r);
}

/* Which iterations check their data: the warm-up and the first timed one,
 * every one with check (the simulator's: checks cost it no time), the
 * warm-up alone with check_warmup (the first timed one where there is no
 * warm-up). */
static void checks_of(int warmup, bool all, bool warmup_only, const char *want)
{
    run_job j = {.warmup = warmup, .iters = 3, .check_warmup = warmup_only};
    char got[8] = "";
    for (int it = -warmup; it < j.iters; it++)
        got[it + warmup] = run_checks(&j, all, it) ? 'c' : '-';
    if (strcmp(got, want) != 0)
        fail_msg("warm-up %d, check %d, check_warmup %d: checked '%s', want '%s'", warmup,
                 all, warmup_only, got, want);
}

static void test_checked_iterations(void **state)
{
    (void)state;
    checks_of(2, false, false, "ccc--"); /* warm-up and the first timed */
    checks_of(2, true, false, "ccccc");
    checks_of(0, false, false, "c--");
    checks_of(2, false, true, "cc---"); /* a step's: no timed one */
    checks_of(0, false, true, "c--");   /* but one is checked */
    checks_of(1, true, true, "cccc");
}

/* A clock that moves one second at every reading, and a printer that
 * keeps the last line. */
static double ticking_now(const cl_comm *c)
{
    (void)c;
    static double t;
    return t += 1.0;
}

static char printed_line[64];

static void keep_line(cl_comm *c, const char *line)
{
    (void)c;
    snprintf(printed_line, sizeof printed_line, "%s", line);
}

/* cl_printf adds the time between its two clock readings to the world's
 * printed seconds (core/run.c takes them off the rank's end), and only
 * where it prints at all. */
static void test_printf_time_counted(void **state)
{
    (void)state;
    comm_ops ops = {.now = ticking_now, .print = keep_line};
    cl_comm c = {.ops = &ops, .printing = true};
    c.world = &c;
    cl_printf(&c, "hop %d", 1);
    assert_string_equal(printed_line, "hop 1");
    assert_true(c.printed == 1.0);
    cl_printf(&c, "hop %d", 2);
    assert_true(c.printed == 2.0);
    c.printing = false;
    cl_printf(&c, "hop %d", 3);
    assert_string_equal(printed_line, "hop 2");
    assert_true(c.printed == 2.0);
}

/* ---- the driver's order of things between iterations ----
 * A one-rank world whose operations log what they are called for: the
 * barrier of one rank sends nothing, so the log is the driver's own. */
static char order[256];
static int order_n;

static void note(char what)
{
    if (order_n < (int)sizeof order - 1)
        order[order_n++] = what;
}

static double noting_now(const cl_comm *c)
{
    (void)c;
    note('n');
    return order_n * 1e-6;
}

static void noting_wait(cl_comm *c, double t)
{
    (void)c;
    (void)t;
    note('w');
}

static void noting_settle(cl_comm *c)
{
    (void)c;
    note('s');
}

static int noting_pattern(cl_comm *c, const cl_args *a)
{
    (void)c;
    (void)a;
    note('P');
    return 0;
}

/* order[] without its clock readings. */
static void without_readings(char *out, size_t cap)
{
    size_t k = 0;
    for (int i = 0; i < order_n && k + 1 < cap; i++)
        if (order[i] != 'n')
            out[k++] = order[i];
    out[k] = 0;
}

/* Each iteration, warm-up too: the barrier, the transport's settle, the
 * window's wait (the window way), then the start's reading right before
 * the pattern: nothing of the driver's sits between them. */
static void test_settle_then_start(void **state)
{
    (void)state;
    const run_sync ways[] = {RUN_SYNC_WINDOW, RUN_SYNC_BARRIER};
    const char *want[] = {"swPswPswP", "sPsPsP"};
    for (int w = 0; w < 2; w++) {
        comm_ops ops = {.now = noting_now, .wait_until = noting_wait, .settle = noting_settle};
        cl_comm c = {.ops = &ops, .size = 1};
        c.world = &c;
        run_job j = {.fn = noting_pattern, .nranks = 1, .warmup = 1, .iters = 2,
                     .sync = ways[w]};
        double times[2], skew[2];
        run_rank r = {.comm = &c, .job = &j, .iter_time = times, .iter_skew = skew,
                      .clock_shared = true};
        order_n = 0;
        const char *during = NULL;
        assert_int_equal(run_rank_iterations(&r, &during), 0);
        order[order_n] = 0;
        char got[256];
        without_readings(got, sizeof got);
        assert_string_equal(got, want[w]);
        for (int i = 0; i < order_n; i++)
            if (order[i] == 'P')
                assert_true(i > 0 && order[i - 1] == 'n'); /* the start, read last */
        run_lines_release(&r.held);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_iter_times_max),
        cmocka_unit_test(test_row_fill),
        cmocka_unit_test(test_sim_skewed_barrier),
        cmocka_unit_test(test_median_iter),
        cmocka_unit_test(test_median_iter_many),
        cmocka_unit_test(test_sim_prints_median),
        cmocka_unit_test(test_checked_iterations),
        cmocka_unit_test(test_printf_time_counted),
        cmocka_unit_test(test_settle_then_start),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
