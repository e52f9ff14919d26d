/* test_slab.c - the simulator's pool memory (sim/slab.h): how slabs grow,
 * and that a slab's memory is zeroed and writable end to end. */
#include <stdint.h>
#include <string.h>

#include "sim/slab.h"
#include "testutil.h"

/* 256 objects first, then twice as many while the slab stays within a
 * MiB, then the same. */
static void test_sizes(void **state)
{
    (void)state;
    size_t n = sim_slab_next(0, 128, 64);
    assert_int_equal(n, SIM_SLAB_FIRST);
    size_t seen = 1;
    for (;;) {
        size_t next = sim_slab_next(n, 128, 64);
        if (next == n)
            break;
        assert_int_equal(next, 2 * n);
        n = next;
        seen++;
    }
    assert_true(64 + n * 128 <= SIM_SLAB_MOST);
    assert_true(64 + 2 * n * 128 > SIM_SLAB_MOST);
    /* 256 .. 4,096 objects of 128 bytes: 8,192 and the header pass a MiB */
    assert_int_equal(seen, 5);
    assert_int_equal(sim_slab_next(n, 128, 64), n);
    /* Objects too big to double even once stay at the first count. */
    assert_int_equal(sim_slab_next(SIM_SLAB_FIRST, SIM_SLAB_MOST, 0), SIM_SLAB_FIRST);
}

static void test_map(void **state)
{
    (void)state;
    size_t bytes = 3 * 4096 + 100;
    unsigned char *p = sim_slab_map(bytes);
    assert_non_null(p);
    for (size_t i = 0; i < bytes; i++)
        assert_int_equal(p[i], 0);
    memset(p, 0xab, bytes);
    assert_int_equal(p[bytes - 1], 0xab);
    sim_slab_unmap(p, bytes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_map),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
