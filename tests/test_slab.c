/* test_slab.c - the simulator's pool memory (sim/slab.h): how slabs grow,
 * that a slab's memory is zeroed and writable end to end, and the pools
 * made of them. */
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

/* 2,000 objects of 100 bytes: more than a first slab's 256 and its
 * second's 512, each its own, lowest address first within a slab, every
 * slab's first on a cache line; one given back is the next one out. */
static void test_pool(void **state)
{
    (void)state;
    enum { MANY = 2000, SIZE = 100 };
    static unsigned char *got[MANY];
    sim_pool p;
    sim_pool_init(&p, SIZE);
    for (size_t i = 0; i < MANY; i++) {
        got[i] = sim_pool_take(&p);
        assert_non_null(got[i]);
        memset(got[i], (int)(i & 0xff), SIZE);
        if (i == 0 || got[i] != got[i - 1] + SIZE) /* a new slab */
            assert_int_equal((uintptr_t)got[i] % 64, 0);
    }
    assert_ptr_equal(got[255], got[0] + 255 * SIZE);  /* the first slab, in order */
    assert_ptr_not_equal(got[256], got[255] + SIZE); /* then a slab of its own */
    for (size_t i = 0; i < MANY; i++)
        for (size_t k = 0; k < SIZE; k++)
            if (got[i][k] != (unsigned char)(i & 0xff))
                fail_msg("object %zu byte %zu was overwritten", i, k);
    sim_pool_give(&p, got[7]);
    sim_pool_give(&p, got[1500]);
    assert_ptr_equal(sim_pool_take(&p), got[1500]);
    assert_ptr_equal(sim_pool_take(&p), got[7]);
    sim_pool_release(&p);
    assert_null(p.slabs);
    assert_null(p.free);
    /* Released, the pool starts again from a first slab. */
    unsigned char *again = sim_pool_take(&p);
    assert_non_null(again);
    assert_int_equal(p.last, SIM_SLAB_FIRST);
    sim_pool_release(&p);
    /* An object smaller than the free list's link holds it anyway. */
    sim_pool_init(&p, 1);
    assert_int_equal(p.size, sizeof(void *));
    void *a = sim_pool_take(&p), *b = sim_pool_take(&p);
    assert_int_equal((char *)b - (char *)a, (long)sizeof(void *));
    sim_pool_release(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_map),
        cmocka_unit_test(test_pool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
