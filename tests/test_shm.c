/* test_shm.c - the shm backend end to end through real_run(): the cases
 * every real backend passes (tests/real_cases.h), each data check and
 * rendezvous truncation on both large-message paths (single copy and
 * staging through the ring), and runs pinned to cores. */
#define REAL_BACKEND "shm"
#define REAL_COPIES {SHM_COPY_AUTO, SHM_COPY_STAGING}
#define REAL_KILL_SIGNAL 1 /* the launcher reports the killed rank's signal */
#include "tests/real_cases.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        REAL_CASES,
        cmocka_unit_test(test_bind),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
