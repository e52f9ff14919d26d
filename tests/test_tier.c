/* test_tier.c - the tiers config, its errors, the price table and the
 * crossover sizes. */
#include <stdio.h>
#include <string.h>

#include "commlab.h"
#include "tests/testutil.h"
#include "core/tier.h"

#define MiB (1024ULL * 1024ULL)

/* Loads YAML text that must fail; checks the code and the whole message
 * prefix (file:line:column) and a fragment of the rest. */
static void bad(const char *yaml, int code, const char *where, const char *what)
{
    tier_set s;
    cl_diag d = {{0}};
    int err = tier_set_load_string(&s, "t.yaml", yaml, &d);
    if (err != code)
        fail_msg("expected %s, got %s (%s) for:\n%s", cl_errname(code), cl_errname(err), d.msg,
                 yaml);
    if (strncmp(d.msg, where, strlen(where)) != 0 || !strstr(d.msg, what))
        fail_msg("message '%s' should start with '%s' and contain '%s'", d.msg, where, what);
    assert_null(s.tiers);
}

static void test_config_errors(void **state)
{
    (void)state;
    bad("tiers: [\n", CL_EPARSE, "t.yaml:2:1: YAML syntax error", "");
    bad("tiers:\n  - name: a\n    alpha: 1us\n", CL_ECONFIG, "t.yaml:2:5: ",
        "missing key 'bandwidth'");
    bad("tiers:\n  - name: a\n    alpha: 1us\n    bandwidth: -3GB/s\n", CL_ECONFIG,
        "t.yaml:4:16: ", "'bandwidth' must be > 0, got '-3GB/s'");
    bad("tiers:\n  - name: a\n    alpha: 1us\n    bandwidth: 0GB/s\n", CL_ECONFIG,
        "t.yaml:4:16: ", "'bandwidth' must be > 0, got '0GB/s'");
    bad("tiers:\n  - name: a\n    alpha: 1parsec\n    bandwidth: 1GB/s\n", CL_ECONFIG,
        "t.yaml:3:12: ", "unknown time unit 'parsec'");
    bad("tiers:\n  - name: a\n    alpha: 1us\n    bandwidth: 1GB\n", CL_ECONFIG,
        "t.yaml:4:16: ", "unknown bandwidth unit 'GB'");
    bad("tiers:\n  - name: a\n    alpha: [1]\n    bandwidth: 1GB/s\n", CL_ECONFIG,
        "t.yaml:3:12: ", "'alpha' must be a scalar, got a list");
    bad("tiers: 3\n", CL_ECONFIG, "t.yaml:1:8: ", "'tiers' must be a list, got a scalar");
    bad("tears: []\n", CL_ECONFIG, "t.yaml:1:1: ",
        "unknown key 'tears' in a tiers file (known: tiers)");
    bad("{}\n", CL_ECONFIG, "t.yaml:1:1: ", "missing key 'tiers'");
    bad("- 1\n", CL_ECONFIG, "t.yaml:1:1: ", "top level must be a mapping");
    bad("", CL_ECONFIG, "t.yaml:1:1: ", "empty");
    bad("tiers:\n  - {name: a, alpha: 1us, bandwidth: 1GB/s}\n"
        "  - {name: a, alpha: 2us, bandwidth: 1GB/s}\n",
        CL_ECONFIG, "t.yaml:3:5: ", "tier 'a' is defined twice");
    bad("tiers:\n  - {name: a, alpha: -1us, bandwidth: 1GB/s}\n", CL_ECONFIG, "t.yaml:2:22: ",
        "'alpha' must be >= 0, got '-1us'");
}

/* reduce_bandwidth: the default (an A100's 2,039 GB/s of HBM2e over the
 * 3 bytes a reduced byte moves, 680 GB/s), a figure, inf (gamma 0), and
 * what is refused; configs/tiers.yaml gives every tier the default. */
static void test_reduce_bandwidth(void **state)
{
    (void)state;
    tier_set s;
    assert_int_equal(tier_set_load_string(&s, "t.yaml",
                                          "tiers:\n"
                                          "  - {name: a, alpha: 1us, bandwidth: 1GB/s}\n"
                                          "  - {name: b, alpha: 1us, bandwidth: 1GB/s,\n"
                                          "     reduce_bandwidth: 100GB/s}\n"
                                          "  - {name: c, alpha: 1us, bandwidth: 1GB/s,\n"
                                          "     reduce_bandwidth: inf}\n",
                                          NULL),
                     0);
    assert_true(s.tiers[0].reduce_bandwidth == 680e9);
    assert_near(tier_gamma(&s.tiers[0]), 1 / 680e9, 1e-25);
    assert_near(tier_gamma(&s.tiers[1]), 1e-11, 1e-25);
    assert_true(tier_gamma(&s.tiers[2]) == 0);
    tier_set_release(&s);
    bad("tiers:\n  - {name: a, alpha: 1us, bandwidth: 1GB/s, reduce_bandwidth: -1GB/s}\n",
        CL_ECONFIG, "t.yaml:2:63: ", "'reduce_bandwidth' must be > 0, got '-1GB/s'");
    bad("tiers:\n  - {name: a, alpha: 1us, bandwidth: 1GB/s, reduce_bandwidth: fast}\n",
        CL_ECONFIG, "t.yaml:2:63: ", "reduce_bandwidth");
    assert_int_equal(tier_set_load(&s, "configs/tiers.yaml", NULL), 0);
    for (size_t i = 0; i < s.n; i++)
        assert_true(s.tiers[i].reduce_bandwidth == 680e9);
    tier_set_release(&s);
}

static void test_missing_file(void **state)
{
    (void)state;
    tier_set s;
    cl_diag d = {{0}};
    assert_int_equal(tier_set_load(&s, "no/such/tiers.yaml", &d), CL_ENOENT);
    assert_non_null(strstr(d.msg, "'no/such/tiers.yaml'"));
}

static void test_select(void **state)
{
    (void)state;
    tier_set s;
    cl_diag d = {{0}};
    assert_int_equal(tier_set_load(&s, "configs/tiers.yaml", &d), 0);
    assert_int_equal(tier_set_select(&s, "ethernet,x", &d), CL_ENOENT);
    assert_string_equal(d.msg, "unknown tier 'x' (known: nvlink, pcie, infiniband, ethernet)");
    assert_int_equal(s.n, 4); /* unchanged on error */
    assert_int_equal(tier_set_select(&s, "ethernet,nvlink", &d), 0);
    assert_int_equal(s.n, 2);
    assert_string_equal(s.tiers[0].name, "ethernet");
    tier_set_release(&s);
}

/* The course's tier table: one 256 MiB message costs 0.90 ms on NVLink,
 * 10.74 ms on PCIe, 5.37 ms on InfiniBand NDR and 86.62 ms on 25G Ethernet,
 * 1.0x, 12.0x, 6.0x and 96.7x the fastest.  Source: the course's alpha-beta
 * chapter (issue "Foundation", its tier table with alpha 1/2/3/30 us and
 * bandwidth 300/25/50/3.1 GB/s). */
static void test_price_table_256MiB(void **state)
{
    (void)state;
    static const struct {
        const char *tier, *ms, *ratio;
    } want[] = {
        {"nvlink", "0.90", "1.0"},
        {"pcie", "10.74", "12.0"},
        {"infiniband", "5.37", "6.0"},
        {"ethernet", "86.62", "96.7"},
    };
    tier_set s;
    cl_diag d = {{0}};
    assert_int_equal(tier_set_load(&s, "configs/tiers.yaml", &d), 0);
    assert_int_equal(s.n, 4);
    double best = tier_time(tier_set_find(&s, "nvlink"), 256 * MiB);
    for (size_t i = 0; i < 4; i++) {
        const cl_tier *t = tier_set_find(&s, want[i].tier);
        assert_non_null(t);
        char ms[32], ratio[32];
        snprintf(ms, sizeof ms, "%.2f", tier_time(t, 256 * MiB) * 1e3);
        snprintf(ratio, sizeof ratio, "%.1f", tier_time(t, 256 * MiB) / best);
        assert_string_equal(ms, want[i].ms);
        assert_string_equal(ratio, want[i].ratio);
    }
    tier_set_release(&s);
}

/* Crossover n* = alpha x B: 300 KB NVLink, 50 KB PCIe, 150 KB InfiniBand,
 * 93 KB Ethernet (products of the same table's constants).  At n* the two
 * terms of T are equal, so T(n*) = 2 alpha. */
static void test_crossover(void **state)
{
    (void)state;
    static const struct {
        const char *tier;
        double bytes;
    } want[] = {{"nvlink", 300e3}, {"pcie", 50e3}, {"infiniband", 150e3}, {"ethernet", 93e3}};
    tier_set s;
    assert_int_equal(tier_set_load(&s, "configs/tiers.yaml", NULL), 0);
    for (size_t i = 0; i < 4; i++) {
        const cl_tier *t = tier_set_find(&s, want[i].tier);
        assert_near(tier_crossover(t), want[i].bytes, 1e-6);
        assert_near(tier_time(t, (uint64_t)want[i].bytes), 2 * t->alpha, 1e-15);
    }
    tier_set_release(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_errors), cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_select),        cmocka_unit_test(test_price_table_256MiB),
        cmocka_unit_test(test_crossover),     cmocka_unit_test(test_reduce_bandwidth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
