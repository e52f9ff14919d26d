/* test_bench_parse.c - the figures `bench shm|tcp|mpi` read back from the
 * reference ping-pong and from `run --csv` (cli/bench_parse.c): a good line
 * gives its figures in commlab's units, and anything else is refused with
 * nothing changed, never read as a zero.
 *
 * cli/ is not part of libcommlab.a; the test compiles bench_parse.c in. */
#include <stdio.h>

#include "cli/bench_parse.c"
#include "tests/testutil.h"

/* As real/mpi/mpi_pingpong.c prints it (%.6g). */
#define GOOD_REF "size=65536 lat_us_median=5.5 lat_us_min=5.25 lat_us_max=7 " \
                 "bw_Bps_median=8.1e+09 bw_Bps_min=7.9e+09 bw_Bps_max=8.25e+09\n"
/* As `run --csv` prints it. */
#define GOOD_CSV "8,20,1.3325e-06,1.1925e-06,1.463e-06,6003752.32068,2,1.99e-08,2.99e-08\n"

static void test_reference_line(void **state)
{
    (void)state;
    uint64_t bytes = 0;
    bench_point pt = {0};
    assert_int_equal(bench_pingpong_parse(GOOD_REF, &bytes, &pt), 0);
    assert_true(bytes == 65536 && pt.ok);
    assert_near(pt.lat.median, 5.5e-6, 1e-15);
    assert_near(pt.lat.min, 5.25e-6, 1e-15);
    assert_near(pt.lat.max, 7e-6, 1e-15);
    assert_near(pt.bw.median, 8.1e9, 1);
    assert_near(pt.bw.min, 7.9e9, 1);
    assert_near(pt.bw.max, 8.25e9, 1);
    /* Its newline is optional (the last line of a pipe may have none). */
    char bare[sizeof GOOD_REF];
    snprintf(bare, sizeof bare, "%.*s", (int)strlen(GOOD_REF) - 1, GOOD_REF);
    assert_int_equal(bench_pingpong_parse(bare, &bytes, &pt), 0);
}

static void test_reference_garbage(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "\n",
        "mpirun: a warning of its own\n",
        /* a field missing, renamed or moved */
        "size=8 lat_us_median=1 lat_us_min=1 lat_us_max=1 bw_Bps_median=1 bw_Bps_min=1\n",
        "size=8 lat_us_mean=1 lat_us_min=1 lat_us_max=1 bw_Bps_median=1 bw_Bps_min=1 "
        "bw_Bps_max=1\n",
        "lat_us_median=1 size=8 lat_us_min=1 lat_us_max=1 bw_Bps_median=1 bw_Bps_min=1 "
        "bw_Bps_max=1\n",
        /* a figure that is no measurement */
        "size=8 lat_us_median=abc lat_us_min=1 lat_us_max=1 bw_Bps_median=1 bw_Bps_min=1 "
        "bw_Bps_max=1\n",
        "size=8 lat_us_median=nan lat_us_min=1 lat_us_max=1 bw_Bps_median=1 bw_Bps_min=1 "
        "bw_Bps_max=1\n",
        "size=8 lat_us_median=inf lat_us_min=1 lat_us_max=1 bw_Bps_median=1 bw_Bps_min=1 "
        "bw_Bps_max=1\n",
        "size=8 lat_us_median=1e999 lat_us_min=1 lat_us_max=1e999 bw_Bps_median=1 "
        "bw_Bps_min=1 bw_Bps_max=1\n",
        "size=8 lat_us_median=0 lat_us_min=0 lat_us_max=0 bw_Bps_median=1 bw_Bps_min=1 "
        "bw_Bps_max=1\n",
        "size=8 lat_us_median=-1 lat_us_min=-2 lat_us_max=1 bw_Bps_median=1 bw_Bps_min=1 "
        "bw_Bps_max=1\n",
        "size=8 lat_us_median= 1 lat_us_min=1 lat_us_max=1 bw_Bps_median=1 bw_Bps_min=1 "
        "bw_Bps_max=1\n",
        /* a size that is none */
        "size=0 lat_us_median=1 lat_us_min=1 lat_us_max=1 bw_Bps_median=1 bw_Bps_min=1 "
        "bw_Bps_max=1\n",
        "size=8x lat_us_median=1 lat_us_min=1 lat_us_max=1 bw_Bps_median=1 bw_Bps_min=1 "
        "bw_Bps_max=1\n",
        "size=99999999999999999999999 lat_us_median=1 lat_us_min=1 lat_us_max=1 "
        "bw_Bps_median=1 bw_Bps_min=1 bw_Bps_max=1\n",
        /* a median outside [min, max] */
        "size=8 lat_us_median=3 lat_us_min=1 lat_us_max=2 bw_Bps_median=1 bw_Bps_min=1 "
        "bw_Bps_max=1\n",
        "size=8 lat_us_median=1 lat_us_min=1 lat_us_max=1 bw_Bps_median=1 bw_Bps_min=2 "
        "bw_Bps_max=3\n",
        /* text after it, two lines run together, a line cut short */
        "size=8 lat_us_median=1 lat_us_min=1 lat_us_max=1 bw_Bps_median=1 bw_Bps_min=1 "
        "bw_Bps_max=1 extra\n",
        "size=8 lat_us_median=1 lat_us_min=1 lat_us_max=1 bw_Bps_median=1 bw_Bps_min=1 "
        "bw_Bps_max=1size=16\n",
        "size=8 lat_us_median=1 lat_us_min=1 lat_us_max=1 bw_Bps_median=1 bw_Bps_min=1 "
        "bw_Bps_max=\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t bytes = 42;
        bench_point pt = {.lat = {.median = 42}};
        if (bench_pingpong_parse(bad[i], &bytes, &pt) != CL_EPARSE)
            fail_msg("accepted '%s'", bad[i]);
        assert_true(bytes == 42 && pt.lat.median == 42 && !pt.ok);
    }
}

static void test_csv_row(void **state)
{
    (void)state;
    uint64_t bytes = 0;
    cl_stats t = {0};
    assert_int_equal(bench_csv_parse(GOOD_CSV, &bytes, &t), 0);
    assert_true(bytes == 8 && t.n == 20);
    assert_near(t.median, 1.3325e-6, 1e-18);
    assert_near(t.min, 1.1925e-6, 1e-18);
    assert_near(t.max, 1.463e-6, 1e-18);
    /* Its first five columns are all it reads. */
    assert_int_equal(bench_csv_parse("64,2,3e-6,2e-6,4e-6", &bytes, &t), 0);
    assert_true(bytes == 64 && t.n == 2);
}

static void test_csv_garbage(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        BENCH_CSV_HEAD "bandwidth_Bps\n", /* the header is no row */
        "8,20,1e-6,1e-6\n",
        "8,20,1e-6,1e-6,\n",
        "8,20,,1e-6,1e-6\n",
        "8,20,nan,1e-6,1e-6\n",
        "8,20,0,0,0\n",
        "8,0,1e-6,1e-6,1e-6\n",
        "8,20,2e-6,1e-6,1.5e-6\n",
        "8 ,20,1e-6,1e-6,1e-6\n",
        "8,20,1e-6,1e-6,1e-6 x\n",
        "-8,20,1e-6,1e-6,1e-6\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t bytes = 42;
        cl_stats t = {.median = 42};
        if (bench_csv_parse(bad[i], &bytes, &t) != CL_EPARSE)
            fail_msg("accepted '%s'", bad[i]);
        assert_true(bytes == 42 && t.median == 42);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_line),
        cmocka_unit_test(test_reference_garbage),
        cmocka_unit_test(test_csv_row),
        cmocka_unit_test(test_csv_garbage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
