/* test_grid.c - the grid of chapter 04 (chapters/04-collectives/grid.c):
 * P x D ranks in pipeline and data-parallel groups made with cl_group.
 * Its modeled time against the formula, that no message leaves its group,
 * and its own data check on several shapes. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "commlab.h"
#include "core/record.h"
#include "tests/simcase.h"
#include "tests/testutil.h"

cl_pattern_fn grid;

/* Above the eager limit every send returns when its data has arrived, so
 * the pipeline step ends on every rank at alpha + n/B, and then the D
 * ranks of each data-parallel group run the ring all-reduce at once:
 * 2 (D - 1)(alpha + n/(D B)) + (D - 1) n gamma / D.  NVLink (alpha 1 us,
 * B 300 GB/s, reduce_bandwidth 680 GB/s in configs/tiers.yaml), n = 1 MiB:
 * 2 x 2: 4.4953 + 2 (1 + 1.7476) + 0.7710 = 10.7615 us; 4 x 2 (--group 2,
 * 8 ranks) the same; 2 x 4 (--group 4, 8 ranks): 4.4953 + 6 (1 + 0.8738)
 * + 1.1565 = 16.8947 us.  (D divides n's doubles here: otherwise a ring
 * step takes its largest block, a few bytes over n/D.) */
static void test_time(void **state)
{
    (void)state;
    static const struct {
        int k, d;
    } shapes[] = {{4, 2}, {8, 2}, {8, 4}, {16, 8}};
    double alpha = 1e-6, bw = 300e9, n = 1048576, gamma = 1 / 680e9;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        int k = shapes[i].k, d = shapes[i].d;
        run r;
        cl_args a = {.group = d};
        setup s = {.no_payload = true};
        run_pattern(&r, grid, k, 1048576, &a, &s);
        if (r.res.status)
            fail_msg("%d ranks, --group %d: %s", k, d, r.res.diag.msg);
        double want = alpha + n / bw + 2 * (d - 1) * (alpha + n / (d * bw)) +
                      (d - 1) * n * gamma / d;
        if (fabs(r.res.iter_time[0] - want) > 1e-15)
            fail_msg("%d ranks, --group %d: %.9g s, want %.9g s", k, d, r.res.iter_time[0],
                     want);
        if (d == 2)
            assert_near(r.res.iter_time[0], 10.7615e-6, 1e-10);
        if (k == 8 && d == 4)
            assert_near(r.res.iter_time[0], 16.8947e-6, 1e-10);
        run_release(&r);
    }
}

/* Every message stays in a group: a pipeline message goes from rank r to
 * r + D (the same replica's next stage), an all-reduce message between
 * two ranks of one stage (the same r / D).  K - D pipeline messages and,
 * per group, the ring's 2 (D - 1) steps of D messages. */
static void test_messages_stay_in_groups(void **state)
{
    (void)state;
    static const struct {
        int k, d;
    } shapes[] = {{4, 2}, {8, 2}, {8, 4}, {6, 3}, {9, 3}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        int k = shapes[i].k, d = shapes[i].d;
        rec_log log;
        rec_log_init(&log, 1u << 20);
        run r;
        cl_args a = {.group = d};
        setup s = {.records = &log};
        run_pattern(&r, grid, k, 4096, &a, &s);
        if (r.res.status)
            fail_msg("%d ranks, --group %d: %s", k, d, r.res.diag.msg);
        long pipe = 0, dp = 0;
        for (size_t j = 0; j < log.n; j++) {
            const cl_record *e = &log.v[j];
            if (e->op != REC_SEND)
                continue;
            if (e->peer == e->rank + d)
                pipe++;
            else if (e->peer / d == e->rank / d)
                dp++;
            else
                fail_msg("%d ranks, --group %d: rank %d sent to rank %d, outside its groups", k,
                         d, e->rank, e->peer);
        }
        assert_int_equal(pipe, k - d);
        assert_int_equal(dp, (long)(k / d) * 2 * (d - 1) * d);
        run_release(&r);
        rec_log_release(&log);
    }
}

/* The grid's own data check (activations by cl_verify, the sums element
 * by element) passes on sizes below and above the eager limit, and on
 * one group of all ranks (D = K) and one rank a group (D = 1). */
static void test_data(void **state)
{
    (void)state;
    static const struct {
        int k, d;
    } shapes[] = {{4, 2}, {6, 2}, {6, 3}, {4, 4}, {3, 1}};
    static const uint64_t sizes[] = {0, 8, 1000, 200000};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (size_t b = 0; b < 4; b++) {
            run r;
            cl_args a = {.group = shapes[i].d};
            setup s = {.iters = 2};
            run_pattern(&r, grid, shapes[i].k, sizes[b], &a, &s);
            if (r.res.status)
                fail_msg("%d ranks, --group %d, %llu bytes: %s", shapes[i].k, shapes[i].d,
                         (unsigned long long)sizes[b], r.res.diag.msg);
            run_release(&r);
        }
}

/* A group size that does not divide the ranks is refused by the pattern
 * too (the CLI refuses it first, exit 2). */
static void test_bad_group(void **state)
{
    (void)state;
    run r;
    cl_args a = {.group = 4};
    run_pattern(&r, grid, 6, 8, &a, NULL);
    assert_int_equal(r.res.status, CL_EINVAL);
    assert_non_null(strstr(r.out, "6 ranks do not make data-parallel groups of 4"));
    run_release(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_time),
        cmocka_unit_test(test_messages_stay_in_groups),
        cmocka_unit_test(test_data),
        cmocka_unit_test(test_bad_group),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
