/* test_bench_line.c - the line floor of `bench shm` (cli/row_real_line.c):
 * it measures, returns ordered statistics, refuses a bad sample count and
 * leaves no process behind.  Never a speed: only that figures are figures.
 *
 * cli/ is not part of libcommlab.a; the test compiles row_real_line.c in. */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "cli/row_real_line.c"
#include "tests/testutil.h"

/* cli/util.c's, whose other functions would bring in most of the command
 * line. */
double cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Children of this process still present (zombies included). */
static int children(void)
{
    int n = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    char path[300], buf[512];
    while (d && (e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (fgets(buf, sizeof buf, f)) {
            const char *p = strrchr(buf, ')');
            int ppid;
            char st;
            if (p && sscanf(p + 1, " %c %d", &st, &ppid) == 2 && ppid == getpid())
                n++;
        }
        fclose(f);
    }
    if (d)
        closedir(d);
    return n;
}

static void test_floor_measures(void **state)
{
    (void)state;
    for (int pause = 0; pause <= 1; pause++) {
        cl_stats s = {0};
        assert_int_equal(bench_line_floor(3, pause, &s), 0);
        assert_true(isfinite(s.median) && s.min > 0);
        assert_true(s.min <= s.median && s.median <= s.max);
        assert_int_equal(children(), 0);
    }
}

static void test_floor_refuses_bad_counts(void **state)
{
    (void)state;
    cl_stats s = {0};
    assert_int_equal(bench_line_floor(0, false, &s), CL_EINVAL);
    assert_int_equal(bench_line_floor(LINE_SAMPLES_MAX + 1, false, &s), CL_EINVAL);
    assert_int_equal(children(), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_floor_measures),
        cmocka_unit_test(test_floor_refuses_bad_counts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
