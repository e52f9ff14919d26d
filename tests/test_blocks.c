/* test_blocks.c - a simulated rank's cl_alloc blocks (sim/blocks.h): zeroed,
 * on a line, numbered in call order; a write past the end is found in the
 * canary, or faults at the guard page; above the guarded count the blocks
 * come from calloc with a canary of their own. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim/blocks.h"
#include "tests/testutil.h"

/* The writes past the end are meant: no sanitizer may report them first. */
#define RAW __attribute__((noinline, no_sanitize("address", "undefined")))

static RAW void poke(unsigned char *p, size_t at)
{
    p[at] ^= 0xff;
}

static void check_fresh(sim_blocks *b, sim_blocks_pool *p)
{
    static const size_t sizes[] = {0, 1, 63, 64, 1000, 4096, 1 << 20};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        unsigned char *d = sim_blocks_alloc(b, p, sizes[k]);
        assert_non_null(d);
        assert_int_equal((uintptr_t)d % 64, 0);
        for (size_t i = 0; i < sizes[k]; i++)
            if (d[i])
                fail_msg("byte %zu of a %zu-byte block is %d", i, sizes[k], d[i]);
        memset(d, 0x77, sizes[k]); /* the whole block is the pattern's */
    }
    assert_int_equal(b->count, 7);
    sim_blocks_fault f;
    assert_false(sim_blocks_check(b, &f));
}

static void test_guarded(void **state)
{
    (void)state;
    sim_blocks_pool p;
    sim_blocks_pool_init(&p);
    sim_blocks b = {0};
    check_fresh(&b, &p);
    assert_int_equal(p.guarded, 7);
    sim_blocks_release(&b, &p);
    assert_int_equal(p.guarded, 0);
    assert_int_equal(b.count, 0);
    assert_null(b.head);

    unsigned char *first = sim_blocks_alloc(&b, &p, 100), *d = sim_blocks_alloc(&b, &p, 1000);
    assert_non_null(first);
    assert_non_null(d);
    sim_blocks_fault f;
    /* Inside the block: nothing; one byte past it: the canary. */
    poke(d, 999);
    assert_false(sim_blocks_check(&b, &f));
    poke(d, 1000);
    poke(d, 1011);
    assert_true(sim_blocks_check(&b, &f));
    assert_int_equal(f.number, 2);
    assert_int_equal(f.bytes, 1000);
    assert_int_equal(f.first, 1000);
    assert_int_equal(f.last, 1011);
    /* The guard page starts at the next line: the address names the block. */
    assert_true(sim_blocks_find(&b, d + 1024, &f));
    assert_int_equal(f.number, 2);
    assert_int_equal(f.first, 1024);
    assert_false(sim_blocks_find(&b, d + 999, &f));
    assert_false(sim_blocks_find(&b, d - 1, &f));
    assert_true(sim_blocks_find(&b, first + 100, &f));
    assert_int_equal(f.number, 1);
    char words[256];
    sim_blocks_words(&f, 1, 1, "in its own code", words, sizeof words);
    assert_string_equal(words, "rank 1 wrote past the end of its block from cl_alloc #1 "
                               "(100 B) in its own code: a write to byte 100 of the "
                               "100-byte block (a SIGSEGV at the guard page after it)");
    sim_blocks_words(&f, 1, 0, "in cl_send", words, sizeof words);
    assert_non_null(strstr(words, "rank 0's block from cl_alloc #1 (100 B) was written past "
                                  "its end while rank 1 ran in cl_send"));
    sim_blocks_release(&b, &p);

    /* A write past the line faults at once, in the writing instruction. */
    d = sim_blocks_alloc(&b, &p, 1000);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGSEGV, SIG_DFL);
        poke(d, 1024);
        _exit(0);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGSEGV);
    sim_blocks_release(&b, &p);
}

static void test_unguarded(void **state)
{
    (void)state;
    sim_blocks_pool p;
    sim_blocks_pool_init(&p);
    p.guarded = SIM_BLOCKS_GUARDED_MAX; /* as if the run held that many */
    sim_blocks b = {0};
    check_fresh(&b, &p);
    assert_int_equal(p.guarded, SIM_BLOCKS_GUARDED_MAX);
    sim_blocks_release(&b, &p);
    unsigned char *d = sim_blocks_alloc(&b, &p, 1000);
    assert_non_null(d);
    sim_blocks_fault f;
    /* The line's 24 bytes and SIM_BLOCKS_CANARY more are watched. */
    poke(d, 1000 + 24 + SIM_BLOCKS_CANARY - 1);
    assert_true(sim_blocks_check(&b, &f));
    assert_int_equal(f.first, 1000 + 24 + SIM_BLOCKS_CANARY - 1);
    assert_int_equal(f.number, 1);
    sim_blocks_release(&b, &p);
    assert_int_equal(p.guarded, SIM_BLOCKS_GUARDED_MAX);
    char words[256];
    f = (sim_blocks_fault){.number = 3, .bytes = 8, .first = 9, .last = 9};
    sim_blocks_words(&f, 2, 2, NULL, words, sizeof words);
    assert_string_equal(words, "rank 2 wrote past the end of its block from cl_alloc #3 (8 B): "
                               "byte 9 of the 8-byte block was changed (found when its "
                               "iteration ended)");
}

/* An iteration's blocks are the next one's: the same memory, zeroed again,
 * numbered again from 1, its canary whole; a size that no longer fits gets
 * a block of its own. */
static void test_recycle(void **state)
{
    (void)state;
    sim_blocks_pool p;
    sim_blocks_pool_init(&p);
    sim_blocks b = {0};
    unsigned char *x = sim_blocks_alloc(&b, &p, 1000), *y = sim_blocks_alloc(&b, &p, 8);
    memset(x, 1, 1000);
    memset(y, 1, 8);
    poke(x, 1000);
    sim_blocks_recycle(&b, &p);
    assert_int_equal(b.count, 0);
    assert_int_equal(p.guarded, 2);
    unsigned char *x2 = sim_blocks_alloc(&b, &p, 1000);
    assert_ptr_equal(x2, x);
    assert_int_equal(x2[0], 0);
    assert_int_equal(x2[999], 0);
    sim_blocks_fault f;
    assert_false(sim_blocks_check(&b, &f));
    unsigned char *y2 = sim_blocks_alloc(&b, &p, 1 << 20); /* y's page is too small */
    assert_non_null(y2);
    assert_ptr_not_equal(y2, y);
    assert_int_equal(p.guarded, 2);
    assert_true(sim_blocks_find(&b, y2 + (1 << 20), &f));
    assert_int_equal(f.number, 2);
    unsigned char *z = sim_blocks_alloc(&b, &p, 5); /* no spare left */
    assert_non_null(z);
    assert_int_equal(p.guarded, 3);
    sim_blocks_recycle(&b, &p);
    sim_blocks_recycle(&b, &p); /* none used: the spares go */
    assert_int_equal(p.guarded, 0);
    sim_blocks_release(&b, &p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_guarded),
        cmocka_unit_test(test_unguarded),
        cmocka_unit_test(test_recycle),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
