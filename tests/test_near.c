/* test_near.c - "did you mean": the edit distance and which name is
 * offered for a misspelt command, pattern or option.
 *
 * cli/ is not part of libcommlab.a; near.c depends only on libc, so the
 * test compiles it in. */
#include <string.h>

#include "cli/near.c"
#include "tests/testutil.h"

static void test_distance(void **state)
{
    (void)state;
    assert_int_equal(cli_near_distance("run", "run"), 0);
    assert_int_equal(cli_near_distance("", "run"), 3);
    assert_int_equal(cli_near_distance("rn", "run"), 1);      /* a deletion */
    assert_int_equal(cli_near_distance("runn", "run"), 1);    /* an insertion */
    assert_int_equal(cli_near_distance("rin", "run"), 1);     /* a substitution */
    assert_int_equal(cli_near_distance("rnu", "run"), 1);     /* a swap is one edit */
    assert_int_equal(cli_near_distance("pingpog", "pingpong"), 1);
    assert_int_equal(cli_near_distance("kitten", "sitting"), 3);
    assert_int_equal(cli_near_distance("sweep", "price"), 5);
}

/* The nearest of names[] to word, or NULL. */
static const char *nearest(const char *word, const char *const *names, size_t n)
{
    cli_near near;
    cli_near_init(&near, word);
    for (size_t i = 0; i < n; i++)
        cli_near_add(&near, names[i]);
    return near.best;
}

static void test_offers_close_names_only(void **state)
{
    (void)state;
    static const char *const commands[] = {"price", "sweep", "run", "patterns", "plot",
                                           "calibrate", "compare", "bench", "exercise"};
    size_t n = sizeof commands / sizeof commands[0];
    assert_string_equal(nearest("rnu", commands, n), "run");
    assert_string_equal(nearest("prce", commands, n), "price");
    assert_string_equal(nearest("calibrat", commands, n), "calibrate");
    assert_string_equal(nearest("exersice", commands, n), "exercise");
    /* Too far for its length, or exactly a name: nothing offered. */
    assert_null(nearest("xyz", commands, n));
    assert_null(nearest("benchmark", commands, n));
    assert_null(nearest("run", commands, n));
}

static void test_ties_prefer_the_same_first_letter(void **state)
{
    (void)state;
    /* --tiers is one edit from both --iters (a swap) and --tier. */
    static const char *const opts[] = {"backend", "iters", "tier", "topology"};
    assert_string_equal(nearest("tiers", opts, 4), "tier");
    static const char *const first[] = {"iters", "sizes"};
    assert_string_equal(nearest("tiers", first, 2), "iters");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_distance),
        cmocka_unit_test(test_offers_close_names_only),
        cmocka_unit_test(test_ties_prefer_the_same_first_letter),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
