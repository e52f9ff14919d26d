/* test_config.c - reading YAML configs strictly: what a file may be (regular,
 * bounded in size), what a document may be (one, shallow, no aliases, no key
 * twice, keys plain) and the strict scalar conversions.  The hostile inputs
 * are issue 23's reproducers (items 5 and 7). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commlab.h"
#include "tests/testutil.h"
#include "core/config.h"
#include "core/file.h"
#include "core/tier.h"

/* Loads text that must fail with code; the message must start with where
 * and contain what. */
static void bad(const char *text, int code, const char *where, const char *what)
{
    cfg_doc c;
    cl_diag d = {{0}};
    int err = cfg_doc_load_string(&c, "c.yaml", text, &d);
    if (err != code)
        fail_msg("expected %s, got %s (%s)", cl_errname(code), cl_errname(err), d.msg);
    if (strncmp(d.msg, where, strlen(where)) != 0 || !strstr(d.msg, what))
        fail_msg("message '%s' should start with '%s' and contain '%s'", d.msg, where, what);
}

static void test_strict_documents(void **state)
{
    (void)state;
    bad("a: 1\nb: 2\na: 3\n", CL_ECONFIG, "c.yaml:3:1: ", "key 'a' is given twice (first on line 1)");
    bad("x:\n  - {k: 1, k: 1}\n", CL_ECONFIG, "c.yaml:2:12: ", "key 'k' is given twice");
    bad("a: 1\n---\na: 2\n", CL_ECONFIG, "c.yaml:2:1: ", "a second YAML document");
    bad("a: &x [1]\nb: *x\n", CL_ECONFIG, "c.yaml:2:4: ", "aliases");
    bad("? [a]\n: 1\n", CL_ECONFIG, "c.yaml:1:3: ", "a key must be a plain name, got a list");
    bad("a: [\n", CL_EPARSE, "c.yaml:2:1: ", "YAML syntax error");
    /* Nesting: 32 levels load, 33 do not. */
    char deep[200] = "";
    for (int i = 0; i < CFG_MAX_DEPTH; i++)
        strcat(deep, "[");
    for (int i = 0; i < CFG_MAX_DEPTH; i++)
        strcat(deep, "]");
    cfg_doc c;
    cl_diag d = {{0}};
    assert_int_equal(cfg_doc_load_string(&c, "c.yaml", deep, &d), 0);
    cfg_doc_release(&c);
    memmove(deep + 1, deep, strlen(deep) + 1);
    deep[0] = '[';
    strcat(deep, "]");
    bad(deep, CL_ECONFIG, "c.yaml:1:33: ", "nest more than 32 deep");
}

/* Issue 23: 400 KB of '[' took over 60 s in libyaml.  The scan stops at
 * the first level too deep, so this returns at once (no timing asserted:
 * a hang would stop the suite's time limit). */
static void test_deep_flood(void **state)
{
    (void)state;
    size_t n = 400000;
    char *text = malloc(n + 1);
    assert_non_null(text);
    memset(text, '[', n);
    text[n] = 0;
    bad(text, CL_ECONFIG, "c.yaml:1:33: ", "nest more than 32 deep");
    free(text);
}

static void test_scalars(void **state)
{
    (void)state;
    cfg_doc c;
    cl_diag d = {{0}};
    yaml_node_t *root, *v;
    assert_int_equal(cfg_doc_load_string(&c, "c.yaml",
                                         "r: -0.5e1\nh: 0x10\nn: nan\ni: 0x10\nj: ' 7'\nk: -12\n",
                                         &d),
                     0);
    assert_int_equal(cfg_root(&c, &root, &d), 0);
    double x = 0;
    long l = 0;
    assert_int_equal(cfg_get(&c, root, "r", true, &v, &d), 0);
    assert_int_equal(cfg_number(&c, v, "r", &x, &d), 0);
    assert_near(x, -5.0, 0);
    const char *nums[] = {"h", "n"};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(cfg_get(&c, root, nums[i], true, &v, &d), 0);
        assert_int_equal(cfg_number(&c, v, nums[i], &x, &d), CL_ECONFIG);
        assert_non_null(strstr(d.msg, "must be a number"));
    }
    const char *ints[] = {"i", "j"};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(cfg_get(&c, root, ints[i], true, &v, &d), 0);
        assert_int_equal(cfg_int(&c, v, ints[i], 0, 100, &l, &d), CL_ECONFIG);
        assert_non_null(strstr(d.msg, "must be an integer"));
    }
    assert_int_equal(cfg_get(&c, root, "k", true, &v, &d), 0);
    assert_int_equal(cfg_int(&c, v, "k", -100, 100, &l, &d), 0);
    assert_int_equal(l, -12);
    static const char *const keys[] = {"r", "h", "n", "i", "j", NULL};
    assert_int_equal(cfg_known_keys(&c, root, keys, "a test file", &d), CL_ECONFIG);
    assert_string_equal(d.msg, "c.yaml:6:1: unknown key 'k' in a test file (known: r, h, n, i, j)");
    cfg_doc_release(&c);
}

/* Issue 23: --config on a FIFO blocked for ever; a folder or a device is
 * no config either. */
static void test_not_regular(void **state)
{
    (void)state;
    char dir[] = "/tmp/commlab-test-XXXXXX", fifo[64];
    assert_non_null(mkdtemp(dir));
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    cfg_doc c;
    cl_diag d = {{0}};
    assert_int_equal(cfg_doc_load(&c, fifo, &d), CL_EIO);
    assert_non_null(strstr(d.msg, "it is a FIFO"));
    assert_int_equal(cfg_doc_load(&c, dir, &d), CL_EIO);
    assert_non_null(strstr(d.msg, "it is a folder"));
    assert_int_equal(cfg_doc_load(&c, "/dev/zero", &d), CL_EIO);
    assert_non_null(strstr(d.msg, "it is a device"));
    assert_int_equal(cfg_doc_load(&c, "/no/such/c.yaml", &d), CL_ENOENT);
    assert_non_null(strstr(d.msg, "cannot read config '/no/such/c.yaml': No such file"));
    unlink(fifo);
    rmdir(dir);
}

/* A file over CFG_MAX_BYTES is refused before it is parsed; one with a
 * NUL byte is not text. */
static void test_file_limits(void **state)
{
    (void)state;
    char path[] = "/tmp/commlab-test-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    static char line[4096];
    memset(line, '#', sizeof line - 1);
    line[sizeof line - 2] = '\n';
    for (size_t n = 0; n <= CFG_MAX_BYTES; n += sizeof line - 1)
        fputs(line, f);
    fclose(f);
    cfg_doc c;
    cl_diag d = {{0}};
    assert_int_equal(cfg_doc_load(&c, path, &d), CL_ERANGE);
    assert_non_null(strstr(d.msg, "is larger than 16777216 bytes"));
    f = fopen(path, "w");
    assert_non_null(f);
    fwrite("a: 1\n\0b: 2\n", 1, 11, f);
    fclose(f);
    assert_int_equal(cfg_doc_load(&c, path, &d), CL_EPARSE);
    assert_non_null(strstr(d.msg, "holds a NUL byte"));
    char *text;
    size_t len;
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("a: 1\n", f);
    fclose(f);
    assert_int_equal(file_read_text(path, "config", 5, &text, &len, &d), 0);
    assert_int_equal(len, 5);
    assert_string_equal(text, "a: 1\n");
    free(text);
    assert_int_equal(file_read_text(path, "config", 4, &text, &len, &d), CL_ERANGE);
    unlink(path);
}

/* Issue 23, item 7 on the tiers file: a typo, an unknown scope and
 * item 5: a count that used to cost seconds of pairwise comparisons. */
static void tiers_bad(const char *text, const char *where, const char *what)
{
    tier_set s;
    cl_diag d = {{0}};
    assert_int_equal(tier_set_load_string(&s, "t.yaml", text, &d), CL_ECONFIG);
    if (strncmp(d.msg, where, strlen(where)) != 0 || !strstr(d.msg, what))
        fail_msg("message '%s' should start with '%s' and contain '%s'", d.msg, where, what);
    assert_null(s.tiers);
}

static void test_tiers_strict(void **state)
{
    (void)state;
    tiers_bad("tiers:\n  - name: a\n    alpha: 1us\n    bandwith: 1GB/s\n", "t.yaml:4:5: ",
              "unknown key 'bandwith' in a tier (known: name, alpha, bandwidth, reduce_bandwidth, scope)");
    tiers_bad("tiers:\n  - {name: a, alpha: 1us, bandwidth: 1GB/s, scope: galaxy}\n",
              "t.yaml:2:52: ", "'scope' must be 'intra-node' or 'inter-node', got 'galaxy'");
    tiers_bad("tiers:\n  - {name: a, alpha: 1us, bandwidth: 1GB/s}\nextra: 1\n", "t.yaml:3:1: ",
              "unknown key 'extra' in a tiers file");
    /* TIER_MAX distinct tiers load; with the last one named like the
     * first, the hash finds the twin; TIER_MAX + 1 are refused. */
    size_t cap = (TIER_MAX + 2) * 64;
    char *text = malloc(cap);
    assert_non_null(text);
    tier_set s;
    cl_diag d = {{0}};
    for (int variant = 0; variant < 3; variant++) {
        int total = variant == 2 ? TIER_MAX + 1 : TIER_MAX;
        size_t len = (size_t)snprintf(text, cap, "tiers:\n");
        for (int i = 0; i < total; i++)
            len += (size_t)snprintf(text + len, cap - len,
                                    "  - {name: t%d, alpha: 1us, bandwidth: 1GB/s}\n",
                                    variant == 1 && i == total - 1 ? 0 : i);
        if (variant == 0) {
            assert_int_equal(tier_set_load_string(&s, "t.yaml", text, &d), 0);
            assert_int_equal(s.n, TIER_MAX);
            tier_set_release(&s);
        } else if (variant == 1) {
            tiers_bad(text, "t.yaml:257:5: ", "tier 't0' is defined twice (first as tiers[0])");
        } else {
            tiers_bad(text, "t.yaml:2:3: ", "'tiers' must list 1 to 256 tiers, got 257");
        }
    }
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strict_documents), cmocka_unit_test(test_deep_flood),
        cmocka_unit_test(test_scalars),          cmocka_unit_test(test_not_regular),
        cmocka_unit_test(test_file_limits),      cmocka_unit_test(test_tiers_strict),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
