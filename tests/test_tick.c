/* test_tick.c - real/tick: the counter's mapping to seconds, and when the
 * launcher's ranks read it (real/launch.c: one launcher forking every
 * rank, COMMLAB_CLOCK not "monotonic", the kernel's clock on the
 * counter).  The rate is checked against CLOCK_MONOTONIC only to within a
 * factor of two: a mapping wrong in kind (ticks read as seconds, a rate
 * inverted) is off by far more, and a loaded machine cannot move two
 * clocks read over the same 200 ms that far apart. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "real/job.h"
#include "real/tick.h"
#include "tests/testutil.h"

static bool kernel_clock_is_counter(void)
{
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    char name[32] = "";
    if (f) {
        if (!fgets(name, sizeof name, f))
            name[0] = '\0';
        fclose(f);
    }
    name[strcspn(name, "\n")] = '\0';
    return TICK_HAVE_COUNTER && strcmp(name, TICK_COUNTER) == 0;
}

static void test_off_unless_asked(void **state)
{
    (void)state;
    tick_clock k;
    double before = job_now();
    double base = tick_begin(&k, false);
    tick_end(&k);
    assert_true(base >= before && base <= job_now());
    assert_true(k.base_s == base);
    assert_true(k.per_tick == 0);
    assert_false(k.calibrating);
    assert_string_equal(tick_name(&k), "monotonic");
}

static void test_end_without_begin_reading(void **state)
{
    (void)state;
    tick_clock k = {0};
    tick_end(&k); /* nothing was read: stays off, returns at once */
    assert_true(k.per_tick == 0);
}

static void test_mapping(void **state)
{
    (void)state;
    /* A quarter of a second a tick: every figure below is exact. */
    tick_clock k = {.base = 1000, .base_s = 5, .per_tick = 0.25};
    assert_true(tick_seconds(&k, 1000) == 0);
    assert_true(tick_seconds(&k, 1008) == 2);
    assert_true(tick_seconds(&k, 996) == -1); /* a reading before the base */
    assert_true(tick_at(&k, 2) == 1008);
    assert_true(tick_at(&k, 2.1) == 1008); /* the reading at or before */
    assert_true(tick_at(&k, 0) == 1000);
    assert_true(tick_at(&k, -1) == 1000);
    /* A counter near its wrap still counts forward. */
    k.base = UINT64_MAX - 1;
    assert_true(tick_seconds(&k, 2) == 1);
}

static void test_calibrated_where_the_kernel_reads_it(void **state)
{
    (void)state;
    tick_clock k;
    double base = tick_begin(&k, true);
    tick_end(&k);
    if (!kernel_clock_is_counter()) {
        assert_true(k.per_tick == 0);
        assert_string_equal(tick_name(&k), "monotonic");
        return;
    }
    assert_true(k.per_tick > 0);
    assert_string_equal(tick_name(&k), TICK_COUNTER);
    assert_true(job_now() - base >= TICK_CALIBRATION);
    /* The rate is the process's: a second run's clock takes it without
     * waiting out another calibration. */
    tick_clock again;
    double base2 = tick_begin(&again, true);
    tick_end(&again);
    assert_true(again.per_tick == k.per_tick);
    assert_true(again.base_s == base2 && base2 >= base);
    /* 200 ms on both clocks: a factor of two apart would take a
     * preemption of 100 ms between two adjacent readings. */
    double m0 = job_now(), c0 = tick_seconds(&k, tick_read());
    struct timespec ts = {.tv_nsec = 200000000};
    nanosleep(&ts, NULL);
    double m1 = job_now(), c1 = tick_seconds(&k, tick_read());
    double on_mono = m1 - m0, on_counter = c1 - c0;
    assert_true(on_mono >= 0.2);
    assert_true(on_counter > on_mono / 2 && on_counter < on_mono * 2);
    /* Seconds since the base on the counter, not ticks or absolute. */
    assert_true(c1 > 0 && c1 < m1 - base + 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_off_unless_asked),
        cmocka_unit_test(test_end_without_begin_reading),
        cmocka_unit_test(test_mapping),
        cmocka_unit_test(test_calibrated_where_the_kernel_reads_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
