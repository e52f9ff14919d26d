/* test_regime.c - cli/regime: the gate that measures in one regime.  The
 * probes are a fake backend's scripted 8 B times and the command's clock a
 * counter that moves half a second a reading, so every decision is
 * checked exactly; only the gate's pauses sleep (0.25 s each, a few). */
#include <stdlib.h>

#include "cli/regime.c"
#include "tests/testutil.h"

/* ---- what regime.c calls outside itself, scripted ---- */

static double script[64]; /* one-way seconds the probes read, in order */
static int nscript, next_probe;
static int runs;       /* runs of the measured pattern (not probes) */
static double fake_now;

double cli_now(void)
{
    fake_now += 0.5;
    return fake_now;
}

int cli_error(const char *fmt, ...)
{
    (void)fmt;
    return CLI_EXIT_USAGE;
}

int cli_diag(const cl_diag *d, int code)
{
    (void)d;
    return code;
}

static int fake_run_size(const run_opts *o, run_env *env, uint64_t bytes, rec_log *log,
                         bool first, run_row *row)
{
    (void)env, (void)log, (void)first;
    assert_string_equal(o->pattern->name, "pingpong");
    assert_int_equal(o->ranks, 2);
    assert_int_equal(bytes, 8);
    assert_int_equal(o->iters, REGIME_PROBE_ITERS);
    assert_true(next_probe < nscript);
    *row = (run_row){.bytes = bytes, .t = {.median = script[next_probe++]}};
    return 0;
}

static const backend_info fake_backend = {.name = "fake", .run_size = fake_run_size};

static int fake_join(int ranks, uint64_t *eager_limit, int argc, char **argv)
{
    (void)ranks, (void)eager_limit, (void)argc, (void)argv;
    return -1;
}

static int pattern_run(void *arg)
{
    (void)arg;
    runs++;
    return 0;
}

static void start(const double *probes, int n)
{
    for (int i = 0; i < n; i++)
        script[i] = probes[i];
    nscript = n;
    next_probe = runs = 0;
    fake_now = 100;
}

/* Every probe of the script reads t. */
static void start_all(double t)
{
    double p[64];
    for (int i = 0; i < 64; i++)
        p[i] = t;
    start(p, 64);
}

/* A command's options: the gate's probes take its backend, not its ranks
 * or iterations. */
static const run_opts opts = {.be = &fake_backend, .backend = "fake", .ranks = 8, .iters = 7};

/* One regime_measure of the scripted pattern through g: whether the run
 * was kept from another regime. */
static bool measure(regime_gate *g)
{
    bool outside;
    assert_int_equal(regime_measure(g, NULL, pattern_run, NULL, &outside), 0);
    return outside;
}

/* ---- the tests ---- */

static void test_within(void **state)
{
    (void)state;
    regime_gate g = regime_gate_of(&opts, 100e-9, 20, 10);
    assert_true(regime_within(&g, 100e-9));
    assert_true(regime_within(&g, 119e-9));
    assert_false(regime_within(&g, 121e-9));
    assert_true(regime_within(&g, 81e-9));
    assert_false(regime_within(&g, 79e-9));
    assert_false(regime_within(&g, NAN));
    /* No gate without a reference, without a wait, or in an MPI job. */
    assert_true(regime_gate_of(&opts, 0, 20, 10).ref == 0);
    assert_true(regime_gate_of(&opts, 100e-9, 20, 0).ref == 0);
    backend_info joining = fake_backend;
    joining.join = fake_join;
    run_opts mpi = opts;
    mpi.be = &joining;
    assert_true(regime_gate_of(&mpi, 100e-9, 20, 10).ref == 0);
    /* The probe is a 2-rank ping-pong of its own, whatever the command's. */
    assert_string_equal(g.probe.pattern->name, "pingpong");
    assert_int_equal(g.probe.ranks, 2);
    assert_int_equal(g.probe.iters, REGIME_PROBE_ITERS);
}

static void test_no_reference_no_probe(void **state)
{
    (void)state;
    start(NULL, 0);
    regime_gate g = regime_gate_of(&opts, 0, 20, 10);
    bool outside = measure(&g);
    assert_int_equal(runs, 1);
    assert_int_equal(g.probes, 0);
    assert_false(outside);
}

static void test_in_regime_once(void **state)
{
    (void)state;
    const double p[] = {100e-9, 110e-9};
    start(p, 2);
    regime_gate g = regime_gate_of(&opts, 100e-9, 20, 10);
    bool outside = measure(&g);
    assert_int_equal(runs, 1);
    assert_int_equal(g.probes, 2); /* before and after */
    assert_int_equal(g.outside, 0);
    assert_false(outside);
    assert_true(g.waited == 0);
}

static void test_fresh_probe_stands_for_the_next_run(void **state)
{
    (void)state;
    const double p[] = {100e-9, 100e-9, 100e-9};
    start(p, 3);
    regime_gate g = regime_gate_of(&opts, 100e-9, 20, 10);
    bool outside = measure(&g);
    /* The probe after the first run, half a second old, is fresh. */
    outside = measure(&g);
    assert_int_equal(runs, 2);
    assert_int_equal(g.probes, 3);
    assert_false(outside);
}

static void test_other_regime_after_measures_again(void **state)
{
    (void)state;
    /* in, run, out (slow spell during the run), in, run, in */
    const double p[] = {100e-9, 300e-9, 100e-9, 100e-9};
    start(p, 4);
    regime_gate g = regime_gate_of(&opts, 100e-9, 20, 10);
    bool outside = measure(&g);
    assert_int_equal(runs, 2);
    assert_int_equal(g.remeasured, 1);
    assert_int_equal(g.outside, 1);
    assert_int_equal(g.kept_outside, 0);
    assert_false(outside);
}

static void test_waits_for_the_regime(void **state)
{
    (void)state;
    /* out, out (waited), in: run, in */
    const double p[] = {400e-9, 400e-9, 100e-9, 100e-9};
    start(p, 4);
    regime_gate g = regime_gate_of(&opts, 100e-9, 20, 10);
    bool outside = measure(&g);
    assert_int_equal(runs, 1);
    assert_int_equal(g.probes, 4);
    assert_int_equal(g.outside, 2);
    assert_true(g.waited == 1.0); /* two pauses, half a second each on the fake clock */
    assert_true(g.budget == 9.0);
    assert_false(outside);
}

static void test_budget_spent_keeps_and_marks(void **state)
{
    (void)state;
    start_all(400e-9);
    regime_gate g = regime_gate_of(&opts, 100e-9, 20, 1.0);
    bool outside = measure(&g);
    /* Waited out the budget (two pauses), ran, found the other regime
     * after, and with no budget left kept the run. */
    assert_true(g.budget <= 0);
    assert_int_equal(runs, 1);
    assert_true(outside);
    assert_int_equal(g.kept_outside, 1);
    assert_int_equal(g.remeasured, 0);
    /* The next run waits no more: one probe before, one after. */
    int probes = g.probes;
    outside = measure(&g);
    assert_int_equal(g.probes, probes + 2);
    assert_true(outside);
    assert_int_equal(g.kept_outside, 2);
}

/* Runs are counted, each once however often it is measured; more than a
 * tenth of them kept from another regime makes a mixed measurement
 * (calibrate warns, --strict refuses). */
static void test_mixed_regimes(void **state)
{
    (void)state;
    start_all(100e-9);
    regime_gate g = regime_gate_of(&opts, 100e-9, 20, 60);
    for (int k = 0; k < 3; k++)
        assert_false(measure(&g));
    assert_int_equal(g.runs, 3);
    assert_int_equal(runs, 3);
    g.runs = 10;
    g.kept_outside = 1;
    assert_false(regime_mixed(&g)); /* a tenth: not more */
    g.kept_outside = 2;
    assert_true(regime_mixed(&g));
    regime_gate none = regime_gate_of(&opts, 0, 20, 60);
    (void)measure(&none);
    assert_int_equal(none.runs, 0);
    assert_false(regime_mixed(&none));
}

static void test_tries_at_most(void **state)
{
    (void)state;
    /* Every probe before a run reads the regime, every one after does not. */
    const double p[] = {100e-9, 300e-9, 100e-9, 300e-9, 100e-9, 300e-9};
    start(p, 6);
    regime_gate g = regime_gate_of(&opts, 100e-9, 20, 1000);
    bool outside = measure(&g);
    assert_int_equal(runs, REGIME_TRIES);
    assert_int_equal(g.runs, 1); /* one run, however often measured */
    assert_int_equal(g.remeasured, REGIME_TRIES - 1);
    assert_true(outside);
}

/* A reference is confirmed by REGIME_CONFIRM probes after it: most of
 * them must read it.  The 2-core VM's case: a first probe at 398 ns, every
 * one after it at 112. */
static void test_confirm_reference(void **state)
{
    (void)state;
    assert_int_equal(REGIME_CONFIRM, 5); /* the scripts below are five probes */
    const double passing[] = {112e-9, 112e-9, 398e-9, 115e-9, 110e-9};
    start(passing, 5);
    regime_gate g = regime_gate_of(&opts, 398e-9, 20, 60);
    bool prevails = true;
    assert_int_equal(regime_confirm(&g, NULL, &prevails), 0);
    assert_false(prevails);
    assert_int_equal(g.probes, 5);
    assert_int_equal(g.outside, 4);
    assert_true(g.waited == 0); /* confirming waits for nothing */

    /* Three of five read it: it prevails. */
    const double most[] = {100e-9, 300e-9, 105e-9, 300e-9, 95e-9};
    start(most, 5);
    g = regime_gate_of(&opts, 100e-9, 20, 60);
    assert_int_equal(regime_confirm(&g, NULL, &prevails), 0);
    assert_true(prevails);
    assert_int_equal(g.outside, 2);

    /* Two of five do not. */
    const double few[] = {100e-9, 300e-9, 300e-9, 105e-9, 300e-9};
    start(few, 5);
    g = regime_gate_of(&opts, 100e-9, 20, 60);
    assert_int_equal(regime_confirm(&g, NULL, &prevails), 0);
    assert_false(prevails);

    /* No gate: nothing to confirm, no probe. */
    start(NULL, 0);
    g = regime_gate_of(&opts, 0, 20, 60);
    prevails = false;
    assert_int_equal(regime_confirm(&g, NULL, &prevails), 0);
    assert_true(prevails);
    assert_int_equal(g.probes, 0);
}

static void test_parse_wait(void **state)
{
    (void)state;
    double w = -1;
    assert_int_equal(regime_parse_wait("0", &w), 0);
    assert_true(w == 0);
    assert_int_equal(regime_parse_wait("30s", &w), 0);
    assert_true(w == 30);
    assert_int_equal(regime_parse_wait("500ms", &w), 0);
    assert_true(w == 0.5);
    assert_int_equal(regime_parse_wait("4000s", &w), CLI_EXIT_USAGE);
    assert_int_equal(regime_parse_wait("-1", &w), CLI_EXIT_USAGE);
    assert_int_equal(regime_parse_wait("soon", &w), CLI_EXIT_USAGE);
    unsetenv("COMMLAB_REGIME_WAIT");
    assert_int_equal(regime_default_wait(&w), 0);
    assert_true(w == REGIME_WAIT_DEFAULT);
    setenv("COMMLAB_REGIME_WAIT", "0", 1);
    assert_int_equal(regime_default_wait(&w), 0);
    assert_true(w == 0);
    setenv("COMMLAB_REGIME_WAIT", "2h", 1);
    assert_int_equal(regime_default_wait(&w), CLI_EXIT_USAGE);
    unsetenv("COMMLAB_REGIME_WAIT");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_within),
        cmocka_unit_test(test_no_reference_no_probe),
        cmocka_unit_test(test_in_regime_once),
        cmocka_unit_test(test_fresh_probe_stands_for_the_next_run),
        cmocka_unit_test(test_other_regime_after_measures_again),
        cmocka_unit_test(test_waits_for_the_regime),
        cmocka_unit_test(test_budget_spent_keeps_and_marks),
        cmocka_unit_test(test_tries_at_most),
        cmocka_unit_test(test_mixed_regimes),
        cmocka_unit_test(test_confirm_reference),
        cmocka_unit_test(test_parse_wait),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
