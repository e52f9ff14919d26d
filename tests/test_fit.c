/* test_fit.c - the alpha-beta fit: known alpha and beta come back from
 * synthetic times with noise, segments appear where one line does not fit,
 * the eager limit always cuts, and bad points are refused. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "commlab.h"
#include "core/config.h"
#include "core/fit.h"
#include "tests/testutil.h"

/* Deterministic noise: a 64-bit LCG (Knuth's MMIX constants) per test, so
 * every run and every machine sees the same points. */
typedef struct lcg {
    uint64_t s;
} lcg;

/* Uniform in [-1, 1). */
static double lcg_next(lcg *g)
{
    g->s = g->s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(g->s >> 11) / (double)(1ULL << 52) - 1.0;
}

/* Sizes 1 B .. 64 MiB, four per power of two. */
static size_t sizes(double *x)
{
    size_t n = 0;
    for (int e = 0; e <= 26; e++)
        for (int q = 0; q < 4 && (e < 26 || q == 0); q++)
            x[n++] = (double)(1ULL << e) * (1.0 + q / 4.0);
    return n;
}

static void assert_rel(double got, double want, double tol, const char *what)
{
    if (!(fabs(got - want) <= tol * fabs(want)))
        fail_msg("%s = %.9g, want %.9g within %g %%", what, got, want, tol * 100);
}

static void test_line_exact(void **state)
{
    (void)state;
    double x[] = {8, 1024, 65536, 1 << 20}, y[4];
    for (int i = 0; i < 4; i++)
        y[i] = 2e-6 + x[i] / 10e9;
    fit_segment s;
    assert_int_equal(fit_line(x, y, 4, &s, NULL), 0);
    assert_rel(s.alpha, 2e-6, 1e-9, "alpha");
    assert_rel(s.beta, 1 / 10e9, 1e-9, "beta");
    assert_near(s.r2, 1.0, 1e-12);
    assert_true(s.max_residual < 1e-12);
    assert_int_equal(s.n, 4);
}

/* The requirement: alpha and beta within 1 % from noisy data.
 * 3 % uniform multiplicative noise on 105 sizes, two machines' worth of
 * parameters (a shared-memory-like and a TCP-like one). */
static void test_line_recovers_alpha_beta_with_noise(void **state)
{
    (void)state;
    static const struct {
        double alpha, bandwidth;
    } truth[] = {{300e-9, 12e9}, {5e-6, 4e9}, {1e-6, 50e9}};
    double x[128], y[128];
    size_t n = sizes(x);
    for (size_t t = 0; t < sizeof truth / sizeof truth[0]; t++) {
        lcg g = {42 + t};
        for (size_t i = 0; i < n; i++)
            y[i] = (truth[t].alpha + x[i] / truth[t].bandwidth) * (1 + 0.03 * lcg_next(&g));
        fit_segment s;
        assert_int_equal(fit_line(x, y, n, &s, NULL), 0);
        assert_rel(s.alpha, truth[t].alpha, 0.01, "alpha");
        assert_rel(1 / s.beta, truth[t].bandwidth, 0.01, "bandwidth");
        assert_true(s.r2 > 0.99);
        assert_true(s.max_residual < 0.07);
    }
}

/* Eager below 64 KiB, rendezvous above with a larger alpha and a higher
 * bandwidth; both pairs come back within 1 % and the cut is at 64 KiB. */
static void test_piecewise_protocol_switch(void **state)
{
    (void)state;
    double x[128], y[128];
    size_t n = sizes(x);
    lcg g = {7};
    for (size_t i = 0; i < n; i++) {
        double t = x[i] <= 65536 ? 400e-9 + x[i] / 6e9 : 5e-6 + x[i] / 14e9;
        y[i] = t * (1 + 0.02 * lcg_next(&g));
    }
    double brk = 65536;
    fit_opts o = FIT_OPTS_DEFAULT;
    fit_result r;
    assert_int_equal(fit_piecewise(x, y, n, &brk, 1, &o, &r, NULL), 0);
    assert_int_equal(r.n, 2);
    assert_true(x[r.seg[0].first + r.seg[0].n - 1] == 65536);
    assert_rel(r.seg[0].alpha, 400e-9, 0.01, "eager alpha");
    assert_rel(1 / r.seg[0].beta, 6e9, 0.01, "eager bandwidth");
    /* Above 128 KiB alpha is at most a third of a point's time (0.1 % at
     * 64 MiB), so the data pins it less tightly than the bandwidth. */
    assert_rel(r.seg[1].alpha, 5e-6, 0.05, "rendezvous alpha");
    assert_rel(1 / r.seg[1].beta, 14e9, 0.01, "rendezvous bandwidth");
    assert_ptr_equal(fit_segment_of(&r, 0), &r.seg[0]);
    assert_ptr_equal(fit_segment_of(&r, n - 1), &r.seg[1]);
}

/* Above the eager limit the bandwidth drops once messages leave the cache
 * (here at 8 MiB): one line leaves large residuals, so the segment splits
 * there, and the two lines come back. */
static void test_piecewise_splits_where_one_line_misses(void **state)
{
    (void)state;
    double x[128], y[128];
    size_t n = sizes(x);
    lcg g = {11};
    const double mib8 = 8.0 * 1024 * 1024;
    for (size_t i = 0; i < n; i++) {
        double t = x[i] <= 65536 ? 400e-9 + x[i] / 6e9
                   : x[i] <= mib8 ? 5e-6 + x[i] / 14e9
                                  : 100e-6 + x[i] / 7e9;
        y[i] = t * (1 + 0.01 * lcg_next(&g));
    }
    double brk = 65536;
    fit_opts o = FIT_OPTS_DEFAULT;
    fit_result r;
    assert_int_equal(fit_piecewise(x, y, n, &brk, 1, &o, &r, NULL), 0);
    assert_int_equal(r.n, 3);
    assert_true(x[r.seg[1].first + r.seg[1].n - 1] == mib8);
    assert_rel(1 / r.seg[1].beta, 14e9, 0.01, "in-cache bandwidth");
    assert_rel(1 / r.seg[2].beta, 7e9, 0.01, "out-of-cache bandwidth");
    assert_rel(r.seg[2].alpha, 100e-6, 0.10, "out-of-cache alpha"); /* <= 6 % of a point */
    for (size_t i = 0; i < r.n; i++)
        assert_true(r.seg[i].max_residual < 0.05);
    /* Without splits the same data leaves a large residual. */
    o.max_segments = 2;
    assert_int_equal(fit_piecewise(x, y, n, &brk, 1, &o, &r, NULL), 0);
    assert_int_equal(r.n, 2);
    assert_true(r.seg[1].max_residual > 0.2);
}

/* Pure noise on one line never pays for a split: one segment per forced
 * piece. */
static void test_piecewise_noise_alone_does_not_split(void **state)
{
    (void)state;
    double x[128], y[128];
    size_t n = sizes(x);
    lcg g = {3};
    for (size_t i = 0; i < n; i++)
        y[i] = (1e-6 + x[i] / 10e9) * (1 + 0.04 * lcg_next(&g));
    fit_opts o = FIT_OPTS_DEFAULT;
    fit_result r;
    assert_int_equal(fit_piecewise(x, y, n, NULL, 0, &o, &r, NULL), 0);
    assert_int_equal(r.n, 1);
    /* The same input gives the same bytes out. */
    fit_result again;
    assert_int_equal(fit_piecewise(x, y, n, NULL, 0, &o, &again, NULL), 0);
    assert_memory_equal(&r, &again, sizeof r);
}

/* Constraints: times that shrink give a constant (beta 0); a line that
 * would cross below zero at 0 bytes goes through the origin (alpha 0). */
static void test_line_constraints(void **state)
{
    (void)state;
    double x[] = {1, 2, 4, 8}, y[] = {4e-7, 3.9e-7, 3.8e-7, 3.7e-7};
    fit_segment s;
    assert_int_equal(fit_line(x, y, 4, &s, NULL), 0);
    assert_true(s.beta == 0);
    assert_true(s.alpha > 3.7e-7 && s.alpha < 4e-7);
    double x2[] = {1000, 2000, 4000}, y2[] = {0.5e-6, 1.5e-6, 3.5e-6};
    assert_int_equal(fit_line(x2, y2, 3, &s, NULL), 0);
    assert_true(s.alpha == 0);
    assert_true(s.beta > 0);
}

/* A forced piece of one point joins its neighbour. */
static void test_piecewise_short_piece_joins(void **state)
{
    (void)state;
    double x[] = {1, 2, 4, 8, 16}, y[] = {1e-6, 1.1e-6, 1.2e-6, 1.4e-6, 1.8e-6};
    double brk = 1;
    fit_opts o = FIT_OPTS_DEFAULT;
    fit_result r;
    assert_int_equal(fit_piecewise(x, y, 5, &brk, 1, &o, &r, NULL), 0);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.seg[0].n, 5);
    brk = 8; /* the last piece would be 16 alone */
    assert_int_equal(fit_piecewise(x, y, 5, &brk, 1, &o, &r, NULL), 0);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.seg[0].n, 5);
}

static void test_bad_points(void **state)
{
    (void)state;
    cl_diag d = {{0}};
    fit_segment s;
    fit_result r;
    fit_opts o = FIT_OPTS_DEFAULT;
    double x[] = {1, 2, 2}, y[] = {1e-6, 0, 1e-6};
    assert_int_equal(fit_line(x, y, 1, &s, &d), CL_EINVAL);
    assert_non_null(strstr(d.msg, "at least 2 points, got 1"));
    assert_int_equal(fit_line(x, y, 2, &s, &d), CL_EINVAL);
    assert_non_null(strstr(d.msg, "point 1: time must be finite and > 0, got 0"));
    double y2[] = {1e-6, 2e-6, 3e-6};
    assert_int_equal(fit_piecewise(x, y2, 3, NULL, 0, &o, &r, &d), CL_EINVAL);
    assert_non_null(strstr(d.msg, "point 2: sizes must increase, got 2 after 2"));
}

/* fit_gap recovers g and G from gaps that are exactly g + n G; gaps at or
 * below zero (noise: the longer window ran no slower) and ones that are
 * not finite are left out. */
static void test_gap_line(void **state)
{
    (void)state;
    double x[] = {8, 64, 512, 4096, 32768}, gaps[5];
    const double g = 150e-9, G = 1 / 16e9;
    for (size_t i = 0; i < 5; i++)
        gaps[i] = g + x[i] * G;
    fit_segment s;
    assert_int_equal(fit_gap(x, gaps, 5, &s), 5);
    assert_near(s.alpha, g, 1e-15);
    assert_near(s.beta, G, 1e-20);
    /* Noise and a missing window: left out, the line the same. */
    gaps[1] = -1e-9;
    gaps[4] = NAN;
    assert_int_equal(fit_gap(x, gaps, 5, &s), 3);
    assert_near(s.alpha, g, 1e-15);
    assert_near(s.beta, G, 1e-20);
    /* One usable point: a constant gap. */
    assert_int_equal(fit_gap(x, gaps, 1, &s), 1);
    assert_near(s.alpha, g + 8 * G, 1e-15);
    assert_near(s.beta, 0, 0);
    /* None: out is unchanged. */
    s.alpha = 42;
    double none[] = {0, -1e-9, NAN, INFINITY, 0};
    assert_int_equal(fit_gap(x, none, 5, &s), 0);
    assert_near(s.alpha, 42, 0);
}

/* What calibrate writes and what it measures again: a flat segment of tiny
 * messages (R^2 near 0, every point within 2 % of its line) is a fit; a
 * segment bent by a slow spell over two of its sizes (the times of 4 and
 * 8 KiB tripled) is not; a bandwidth of 0 never is. */
static void test_segment_usable(void **state)
{
    (void)state;
    const double flat_x[] = {1, 2, 4, 8, 16}, flat_y[] = {340e-9, 345e-9, 338e-9, 342e-9, 350e-9};
    fit_segment f;
    cl_diag d = {{0}};
    assert_int_equal(fit_line(flat_x, flat_y, 5, &f, &d), 0);
    assert_true(f.r2 < FIT_MIN_R2);
    assert_true(fit_segment_usable(&f));

    double x[6], y[6];
    for (int i = 0; i < 6; i++) {
        x[i] = 1024.0 * (1 << i);
        y[i] = 500e-9 + x[i] / 10e9;
    }
    assert_int_equal(fit_line(x, y, 6, &f, &d), 0);
    assert_true(fit_segment_usable(&f));
    y[2] *= 3;
    y[3] *= 3;
    assert_int_equal(fit_line(x, y, 6, &f, &d), 0);
    if (fit_segment_usable(&f))
        fail_msg("a bent segment passed: R^2 %g, worst residual %g", f.r2, f.max_residual);

    fit_segment zero = {.alpha = 1e-6, .beta = INFINITY, .r2 = 1, .max_residual = 0};
    assert_false(fit_segment_usable(&zero));
}

/* A slope's bandwidth: 1 / beta where a machine file can hold it; inf for
 * a flat slope and for one so close to flat that the bandwidth is beyond
 * CFG_BANDWIDTH_MAX, which loading the file would refuse. */
static void test_bandwidth_of_slope(void **state)
{
    (void)state;
    assert_near(fit_bandwidth(1e-9), 1e9, 1e-3);
    assert_near(fit_bandwidth(1.0 / CFG_BANDWIDTH_MAX * 1.01), CFG_BANDWIDTH_MAX / 1.01, 1);
    assert_true(isinf(fit_bandwidth(0)));
    assert_true(isinf(fit_bandwidth(-1e-12)));
    assert_true(isinf(fit_bandwidth(1e-30)));
    assert_true(isinf(fit_bandwidth(1.0 / CFG_BANDWIDTH_MAX)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_line_exact),
        cmocka_unit_test(test_line_recovers_alpha_beta_with_noise),
        cmocka_unit_test(test_piecewise_protocol_switch),
        cmocka_unit_test(test_piecewise_splits_where_one_line_misses),
        cmocka_unit_test(test_piecewise_noise_alone_does_not_split),
        cmocka_unit_test(test_line_constraints),
        cmocka_unit_test(test_piecewise_short_piece_joins),
        cmocka_unit_test(test_bad_points),
        cmocka_unit_test(test_gap_line),
        cmocka_unit_test(test_segment_usable),
        cmocka_unit_test(test_bandwidth_of_slope),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
