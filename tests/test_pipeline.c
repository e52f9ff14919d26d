/* test_pipeline.c - the pipeline's two schedules (chapters/02-point-to-point/
 * pipeline.c): their modeled time and bubble against the formula, the
 * activations each stage keeps, and their data on any size, including
 * sizes above the eager limit where 1F1B's steady phase sends both ways. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commlab.h"
#include "core/tier.h"
#include "sim/net.h"
#include "tests/simcase.h"
#include "tests/testutil.h"

cl_pattern_fn pipeline;

static const char *const schedules[] = {"gpipe", "1f1b"};

/* Runs the pipeline on s stages with m microbatches of 1 ms and empty
 * messages over links that cost nothing (alpha 0): the time is compute
 * and idling alone. */
static void run_free(run *r, const char *schedule, int s, int m)
{
    const cl_tier free_link = {.name = "free", .alpha = 0, .bandwidth = 300e9};
    sim_net *net;
    assert_int_equal(sim_net_create_tier(&net, &free_link, s, NULL), 0);
    cl_args a = {.microbatches = m, .compute = 1e-3, .schedule = schedule};
    setup su = {.net = net};
    run_pattern(r, pipeline, s, 0, &a, &su);
    sim_net_destroy(net);
    if (r->res.status)
        fail_msg("%s, %d stages, %d microbatches: %s", schedule, s, m, r->res.diag.msg);
}

/* GPipe (Huang et al. 2019) and 1F1B (Narayanan et al. 2021) take the
 * same time when stages are equal and messages free: each direction is
 * M + S - 1 slots of compute c, M of them busy on any stage, so
 * T = 2 (M + S - 1) c and the bubble is 1 - 2 M c / T = (S - 1) / (M + S - 1).
 * S = 4, M = 8: T = 22 ms, bubble 3/11. */
static void test_same_bubble(void **state)
{
    (void)state;
    static const int stages[] = {2, 4, 5}, mbs[] = {1, 3, 8};
    for (size_t k = 0; k < 2; k++)
        for (size_t i = 0; i < 3; i++)
            for (size_t j = 0; j < 3; j++) {
                int s = stages[i], m = mbs[j];
                run r;
                run_free(&r, schedules[k], s, m);
                double t = r.res.iter_time[0], c = 1e-3;
                if (fabs(t - 2.0 * (m + s - 1) * c) > 1e-12)
                    fail_msg("%s, S %d, M %d: %.9g s, want 2 (M + S - 1) c = %.9g s",
                             schedules[k], s, m, t, 2.0 * (m + s - 1) * c);
                assert_near(1 - 2 * m * c / t, (double)(s - 1) / (m + s - 1), 1e-12);
                run_release(&r);
            }
}

/* What stage `stage` printed as the most activations it kept; -1 if it
 * printed none. */
static int peak_of(const run *r, int stage)
{
    char want[96];
    snprintf(want, sizeof want, "rank %d: stage %d kept the activations of at most ", stage,
             stage);
    const char *p = r->out ? strstr(r->out, want) : NULL;
    return p ? atoi(p + strlen(want)) : -1;
}

/* GPipe runs every forward before the first backward, so every stage
 * keeps all M microbatches' activations; 1F1B's stage s runs S - s - 1
 * forwards ahead of its first backward and then one of each, so it keeps
 * at most S - s (M when fewer): stage 0 of S = 4 keeps 4, stage 3 one. */
static void test_peak_activations(void **state)
{
    (void)state;
    static const int stages[] = {2, 4, 5}, mbs[] = {1, 3, 8};
    for (size_t k = 0; k < 2; k++)
        for (size_t i = 0; i < 3; i++)
            for (size_t j = 0; j < 3; j++) {
                int s = stages[i], m = mbs[j];
                run r;
                run_free(&r, schedules[k], s, m);
                for (int st = 0; st < s; st++) {
                    int want = k == 0 ? m : (s - st < m ? s - st : m);
                    if (peak_of(&r, st) != want)
                        fail_msg("%s, S %d, M %d: stage %d kept %d, want %d\n%s", schedules[k],
                                 s, m, st, peak_of(&r, st), want, r.out ? r.out : "");
                }
                run_release(&r);
            }
}

/* Above the eager limit a send waits for its receive: 1F1B's steady phase
 * then needs its send posted with the next receive, or neighbours wait on
 * each other head to head.  Every schedule moves the right bytes on 2, 4
 * and 7 stages, below and above the limit, over two iterations. */
static void test_data_any_size(void **state)
{
    (void)state;
    static const int stages[] = {2, 4, 7};
    static const uint64_t sizes[] = {0, 8, 1000, 200000};
    for (size_t k = 0; k < 2; k++)
        for (size_t i = 0; i < 3; i++)
            for (size_t b = 0; b < 4; b++)
                for (int m = 1; m <= 9; m += 4) {
                    cl_args a = {.microbatches = m, .schedule = schedules[k]};
                    run r;
                    setup su = {.iters = 2};
                    run_pattern(&r, pipeline, stages[i], sizes[b], &a, &su);
                    if (r.res.status)
                        fail_msg("%s on %d stages, M %d, %llu bytes: %s", schedules[k],
                                 stages[i], m, (unsigned long long)sizes[b], r.res.diag.msg);
                    /* 2 (S - 1) messages a microbatch, whatever the order, in
                     * each of the two iterations */
                    assert_int_equal(r.res.messages, 2 * 2 * (stages[i] - 1) * m);
                    run_release(&r);
                }
}

/* No schedule given is GPipe, the behaviour the chapter's 2.4 measures. */
static void test_default_is_gpipe(void **state)
{
    (void)state;
    run r;
    run_free(&r, NULL, 4, 3);
    assert_int_equal(peak_of(&r, 3), 3);
    assert_non_null(strstr(r.out, "3 microbatches, gpipe: "));
    run_release(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_bubble),
        cmocka_unit_test(test_peak_activations),
        cmocka_unit_test(test_data_any_size),
        cmocka_unit_test(test_default_is_gpipe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
