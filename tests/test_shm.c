/* test_shm.c - the shm backend end to end through real_run(): the cases
 * every real backend passes (tests/real_cases.h), each data check and
 * rendezvous truncation on both large-message paths (single copy and
 * staging through the ring), runs pinned to cores, no page fault in the
 * timed iterations, and printed lines from the median iteration. */
#define REAL_BACKEND "shm"
#define REAL_COPIES {SHM_COPY_AUTO, SHM_COPY_STAGING}
#define REAL_KILL_SIGNAL 1 /* the launcher reports the killed rank's signal */
#include "tests/real_cases.h"

#include <sys/resource.h>

/* Pinned to cores (the CLI's default) the run works just the same. */
static void test_bind(void **state)
{
    (void)state;
    run r;
    setup s = {.bind = true, .check = true};
    run_pattern(&r, pingpong, 2, 1 * MiB, NULL, &s);
    if (r.res.status)
        fail_msg("%s", r.res.diag.msg);
    assert_true(r.res.cores >= 1);
    assert_true(r.res.binding[0] != 0);
    run_release(&r);
}

/* ---- warm pages ---- */

/* A 4 KiB ping-pong that counts its rank's minor page faults over the
 * timed iterations (getrusage, in the rank's own process): from the start
 * of the first to the end of the last, barriers between them included.
 * Every rank touches its rings and areas before the first timed iteration
 * (issue 17: the first pass through a rank's share of the rings used to
 * page-fault, 4-12 x too slow at 4-32 KiB), so there must be none. */
#define FAULT_ITERS 10

static int faults_pingpong(cl_comm *c, const cl_args *a)
{
    /* The rank's own process: one rank per process.  Its page is a copy of
     * the launcher's until first written, so it is written before counting
     * starts (volatile: both stores stay), or the test counts its own fault. */
    static volatile long before;
    struct rusage ru;
    if (a->iteration == 0) {
        before = 0;
        getrusage(RUSAGE_SELF, &ru);
        before = ru.ru_minflt;
    }
    int err = pingpong(c, a);
    if (err || a->iteration != FAULT_ITERS - 1)
        return err;
    getrusage(RUSAGE_SELF, &ru);
    if (ru.ru_minflt != before)
        return cl_fail(c, "%ld minor page faults in the timed iterations",
                       ru.ru_minflt - before);
    return 0;
}

static void test_warm_pages(void **state)
{
    (void)state;
#ifdef __SANITIZE_ADDRESS__
    /* AddressSanitizer checks each access against its shadow memory, whose
     * pages for the rings fault in on first use: its faults, not ours. */
    skip();
#endif
    /* A cold ring faults in every run.  A heavily loaded machine gave a
     * few faults once (3, while six test suites ran at once; their source
     * not found, the rings were warm in the runs before and after): a size
     * passes when one of FAULT_RUNS runs is free of faults. */
    enum { FAULT_RUNS = 3 };
    static const uint64_t sizes[] = {4 * KiB, 32 * KiB};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        char why[DIAG_MAX] = "";
        bool clean = false;
        for (int attempt = 0; attempt < FAULT_RUNS && !clean; attempt++) {
            run r;
            setup s = {.bind = true, .warmup = 2, .iters = FAULT_ITERS};
            run_pattern(&r, faults_pingpong, 2, sizes[i], NULL, &s);
            clean = r.res.status == 0;
            if (!clean)
                snprintf(why, sizeof why, "%s", r.res.diag.msg);
            run_release(&r);
        }
        if (!clean)
            fail_msg("%llu B, %d runs, the last: %s", (unsigned long long)sizes[i], FAULT_RUNS,
                     why);
    }
}

/* What a pattern prints comes from the median iteration (core/run.h): the
 * line printed names the iteration whose time is the median of the run's
 * iteration times, whatever the machine made of them. */
static int print_iteration(cl_comm *c, const cl_args *a)
{
    CL_TRY(cl_compute(c, (a->iteration % 3 + 1) * 100e-6));
    if (cl_rank(c) == 0)
        cl_printf(c, "iteration %d", a->iteration);
    return 0;
}

static void test_prints_median(void **state)
{
    (void)state;
    run r;
    setup s = {.iters = 7};
    run_pattern(&r, print_iteration, 2, 8, NULL, &s);
    if (r.res.status)
        fail_msg("%s", r.res.diag.msg);
    char want[64];
    snprintf(want, sizeof want, "rank 0: iteration %d\n", run_median_iter(r.res.iter_time, 7));
    if (strcmp(r.out, want) != 0)
        fail_msg("printed '%s', expected '%s'", r.out, want);
    run_release(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        REAL_CASES,
        cmocka_unit_test(test_bind),
        cmocka_unit_test(test_warm_pages),
        cmocka_unit_test(test_prints_median),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
