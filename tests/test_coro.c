/* test_coro.c - coroutine ranks: switching, depth, scale, overflow, release. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* mincore */
#endif
#include <fenv.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "commlab.h"
#include "sim/coro.h"

/* What a test coroutine sees: its scheduler, itself, and some state. */
typedef struct ctx {
    sim_sched *s;
    sim_coro co;
    int id;
    int *log;       /* shared trace of who ran, in order */
    size_t *log_len;
    uint64_t acc;   /* result */
    int iters;      /* how many times to yield */
    void *stack_at; /* address of a local, to find the stack */
    int bad;        /* set by a check that failed on the coroutine's stack */
} ctx;

static void trace(ctx *c, int v)
{
    c->log[(*c->log_len)++] = v;
}

/* ---- ping: the scheduler and two coroutines take turns ---- */

static void ping_fn(void *arg)
{
    ctx *c = arg;
    for (int i = 0; i < 3; i++) {
        trace(c, c->id * 10 + i);
        sim_coro_yield(c->s, &c->co);
    }
    trace(c, c->id * 10 + 9);
}

static void test_ping(void **state)
{
    (void)state;
    sim_stacks *st = NULL;
    assert_int_equal(sim_stacks_create(&st, 2, 0), 0);
    assert_int_equal(sim_stacks_stack_bytes(st), SIM_CORO_STACK_DEFAULT);
    sim_sched s;
    sim_sched_init(&s);
    int log[64];
    size_t n = 0;
    ctx a = {.s = &s, .id = 1, .log = log, .log_len = &n};
    ctx b = {.s = &s, .id = 2, .log = log, .log_len = &n};
    assert_int_equal(sim_coro_init(&a.co, st, 0, ping_fn, &a), 0);
    assert_int_equal(sim_coro_init(&b.co, st, 1, ping_fn, &b), 0);
    assert_null(sim_sched_current(&s));
    while (!sim_coro_done(&a.co) || !sim_coro_done(&b.co)) {
        if (!sim_coro_done(&a.co))
            assert_int_equal(sim_coro_resume(&s, &a.co), 0);
        log[n++] = 0; /* the scheduler's turn */
        if (!sim_coro_done(&b.co))
            assert_int_equal(sim_coro_resume(&s, &b.co), 0);
        log[n++] = 0;
    }
    const int want[] = {10, 0, 20, 0, 11, 0, 21, 0, 12, 0, 22, 0, 19, 0, 29, 0};
    assert_int_equal(n, sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < n; i++)
        if (log[i] != want[i])
            fail_msg("log[%zu] = %d, expected %d", i, log[i], want[i]);
    sim_stacks_destroy(st);
}

/* ---- yield from deep recursion ---- */

static __attribute__((noinline)) uint64_t deep(ctx *c, int depth)
{
    volatile uint64_t pad[8]; /* keep real frames, not a loop */
    for (int i = 0; i < 8; i++)
        pad[i] = (uint64_t)depth * 8 + (uint64_t)i;
    if (depth == 0) {
        sim_coro_yield(c->s, &c->co);
        sim_coro_yield(c->s, &c->co);
        return 1;
    }
    uint64_t r = deep(c, depth - 1);
    return r + pad[depth % 8] - (uint64_t)depth * 8;
}

static void deep_fn(void *arg)
{
    ctx *c = arg;
    c->acc = deep(c, 300);
}

static void test_deep_yield(void **state)
{
    (void)state;
    sim_stacks *st = NULL;
    assert_int_equal(sim_stacks_create(&st, 1, 256 * 1024), 0);
    sim_sched s;
    sim_sched_init(&s);
    ctx c = {.s = &s};
    assert_int_equal(sim_coro_init(&c.co, st, 0, deep_fn, &c), 0);
    int resumes = 0;
    while (!sim_coro_done(&c.co)) {
        assert_int_equal(sim_coro_resume(&s, &c.co), 0);
        resumes++;
    }
    assert_int_equal(resumes, 3);
    /* 1 + sum over depth 1..300 of (depth % 8) */
    uint64_t want = 1;
    for (int d = 1; d <= 300; d++)
        want += (uint64_t)(d % 8);
    assert_int_equal(c.acc, want);
    sim_stacks_destroy(st);
}

/* ---- many coroutines, round robin ---- */

static void many_fn(void *arg)
{
    ctx *c = arg;
    uint64_t x = (uint64_t)c->id;
    for (int i = 0; i < c->iters; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        c->acc += x >> 33;
        sim_coro_yield(c->s, &c->co);
    }
}

static void test_many(void **state)
{
    (void)state;
    const int n = 10000;
    sim_stacks *st = NULL;
    assert_int_equal(sim_stacks_create(&st, (size_t)n, 16 * 1024), 0);
    sim_sched s;
    sim_sched_init(&s);
    ctx *cs = calloc((size_t)n, sizeof(*cs));
    assert_non_null(cs);
    for (int i = 0; i < n; i++) {
        cs[i].s = &s;
        cs[i].id = i;
        cs[i].iters = 1 + i % 7;
        assert_int_equal(sim_coro_init(&cs[i].co, st, (size_t)i, many_fn,
                                       &cs[i]), 0);
    }
    int live = n, rounds = 0;
    while (live > 0) {
        for (int i = 0; i < n; i++) {
            if (sim_coro_done(&cs[i].co))
                continue;
            sim_stacks_prefetch(st, (size_t)(i + 1) % (size_t)n); /* a hint only */
            assert_int_equal(sim_coro_resume(&s, &cs[i].co), 0);
            if (sim_coro_done(&cs[i].co)) {
                sim_coro_release(&cs[i].co);
                live--;
            }
        }
        rounds++;
    }
    assert_int_equal(rounds, 8); /* 7 yields + the final return */
    for (int i = 0; i < n; i++) {
        uint64_t x = (uint64_t)i, want = 0;
        for (int k = 0; k < cs[i].iters; k++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            want += x >> 33;
        }
        if (cs[i].acc != want)
            fail_msg("coroutine %d: acc %llu, expected %llu", i,
                     (unsigned long long)cs[i].acc, (unsigned long long)want);
    }
    free(cs);
    sim_stacks_destroy(st);
}

/* ---- stack overflow is CL_ESTACK ---- */

/* Functions that measure or touch their own stack are built without ASan
 * instrumentation: with detect_stack_use_after_return, ASan would move their
 * arrays to its heap-allocated fake stack and the test would prove nothing. */
#define REAL_STACK __attribute__((noinline, no_sanitize_address))

/* Recurse with 512-byte frames written with non-zero bytes until `limit`
 * bytes below `top` are in use (measured, so that it holds whatever the
 * compiler makes of the frame size). */
static REAL_STACK uint64_t smash(uintptr_t top, size_t limit, int depth)
{
    volatile uint8_t buf[512];
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (uint8_t)(depth + (int)i) | 1;
    if (top - (uintptr_t)&buf[0] >= limit || depth > 100000)
        return buf[7];
    return smash(top, limit, depth + 1) + buf[depth % 512];
}

static REAL_STACK void smash_fn(void *arg)
{
    ctx *c = arg;
    /* c->iters KiB: more than the stack overflows into the stack below. */
    uintptr_t top = (uintptr_t)__builtin_frame_address(0);
    c->acc = smash(top, (size_t)c->iters * 1024, 0);
}

/* The canary is what finds an overflow when there are too many stacks for
 * a guard page each; with guard pages, sim/fault.h catches the fault
 * (tests/test_fault.c). */
static void test_overflow(void **state)
{
    (void)state;
    sim_stacks *st = NULL;
    assert_int_equal(sim_stacks_create(&st, SIM_CORO_GUARDED_MAX + 1, 16 * 1024), 0);
    sim_sched s;
    sim_sched_init(&s);
    ctx c = {.s = &s, .iters = 24}; /* 24 KiB in a 16 KiB stack */
    assert_int_equal(sim_coro_init(&c.co, st, 1, smash_fn, &c), 0);
    assert_int_equal(sim_coro_resume(&s, &c.co), CL_ESTACK);
    assert_true(sim_coro_done(&c.co));
    sim_coro_release(&c.co);
    /* The slot can be used again after release (canary reads zero). */
    ctx d = {.s = &s, .iters = 8};
    assert_int_equal(sim_coro_init(&d.co, st, 1, smash_fn, &d), 0);
    assert_int_equal(sim_coro_resume(&s, &d.co), 0);
    assert_true(sim_coro_done(&d.co));
    sim_stacks_destroy(st);
}

/* ---- release gives pages back ---- */

static REAL_STACK void touch_fn(void *arg)
{
    ctx *c = arg;
    volatile uint8_t big[40 * 1024];
    for (size_t i = 0; i < sizeof(big); i += 512)
        big[i] = 1;
    c->stack_at = (void *)&big[0];
    sim_coro_yield(c->s, &c->co);
    c->acc = big[512];
}

static size_t resident_pages(void *at, size_t bytes)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = (uintptr_t)at & ~(uintptr_t)(page - 1);
    size_t n = bytes / page;
    unsigned char vec[64];
    assert_true(n <= sizeof(vec));
    assert_int_equal(mincore((void *)lo, n * page, vec), 0);
    size_t r = 0;
    for (size_t i = 0; i < n; i++)
        r += vec[i] & 1;
    return r;
}

static void test_release(void **state)
{
    (void)state;
    sim_stacks *st = NULL;
    assert_int_equal(sim_stacks_create(&st, 1, 64 * 1024), 0);
    sim_sched s;
    sim_sched_init(&s);
    ctx c = {.s = &s};
    assert_int_equal(sim_coro_init(&c.co, st, 0, touch_fn, &c), 0);
    assert_int_equal(sim_coro_resume(&s, &c.co), 0);
    assert_false(sim_coro_done(&c.co));
    assert_int_equal(sim_coro_resume(&s, &c.co), 0);
    assert_true(sim_coro_done(&c.co));
    assert_int_equal(c.acc, 1);
    assert_true(resident_pages(c.stack_at, 32 * 1024) >= 8);
    sim_coro_release(&c.co);
    assert_int_equal(resident_pages(c.stack_at, 32 * 1024), 0);
    /* The same stack runs a new coroutine. */
    ctx d = {.s = &s};
    assert_int_equal(sim_coro_init(&d.co, st, 0, touch_fn, &d), 0);
    assert_int_equal(sim_coro_resume(&s, &d.co), 0);
    assert_int_equal(sim_coro_resume(&s, &d.co), 0);
    assert_true(sim_coro_done(&d.co));
    assert_int_equal(d.acc, 1);
    sim_stacks_destroy(st);
}

/* ---- two schedulers, interleaved and nested ---- */

static void count_fn(void *arg)
{
    ctx *c = arg;
    for (int i = 0; i < c->iters; i++) {
        /* cmocka's assert would longjmp off this stack: record instead */
        if (sim_sched_current(c->s) != &c->co)
            c->bad = 1;
        c->acc += (uint64_t)c->id;
        sim_coro_yield(c->s, &c->co);
    }
}

/* A coroutine of one scheduler that is itself the scheduler of another. */
typedef struct nest {
    ctx outer;
    sim_sched inner_s;
    ctx inner;
} nest;

static void nest_fn(void *arg)
{
    nest *n = arg;
    sim_sched_init(&n->inner_s);
    while (!sim_coro_done(&n->inner.co)) {
        if (sim_coro_resume(&n->inner_s, &n->inner.co) != 0)
            n->outer.bad = 1;
        n->outer.acc++;
        sim_coro_yield(n->outer.s, &n->outer.co);
    }
}

static void test_two_scheds(void **state)
{
    (void)state;
    sim_stacks *st1 = NULL, *st2 = NULL;
    assert_int_equal(sim_stacks_create(&st1, 4, 0), 0);
    assert_int_equal(sim_stacks_create(&st2, 4, 0), 0);
    sim_sched s1, s2;
    sim_sched_init(&s1);
    sim_sched_init(&s2);
    ctx a = {.s = &s1, .id = 1, .iters = 5};
    ctx b = {.s = &s2, .id = 100, .iters = 3};
    assert_int_equal(sim_coro_init(&a.co, st1, 0, count_fn, &a), 0);
    assert_int_equal(sim_coro_init(&b.co, st2, 0, count_fn, &b), 0);
    while (!sim_coro_done(&a.co) || !sim_coro_done(&b.co)) {
        if (!sim_coro_done(&a.co))
            assert_int_equal(sim_coro_resume(&s1, &a.co), 0);
        if (!sim_coro_done(&b.co))
            assert_int_equal(sim_coro_resume(&s2, &b.co), 0);
        assert_null(sim_sched_current(&s1));
        assert_null(sim_sched_current(&s2));
    }
    assert_int_equal(a.acc, 5);
    assert_int_equal(b.acc, 300);
    assert_false(a.bad || b.bad);

    nest n = {.outer = {.s = &s1}, .inner = {.id = 7, .iters = 4}};
    n.inner.s = &n.inner_s;
    assert_int_equal(sim_coro_init(&n.outer.co, st1, 1, nest_fn, &n), 0);
    assert_int_equal(sim_coro_init(&n.inner.co, st2, 1, count_fn, &n.inner),
                     0);
    int resumes = 0;
    while (!sim_coro_done(&n.outer.co)) {
        assert_int_equal(sim_coro_resume(&s1, &n.outer.co), 0);
        resumes++;
    }
    assert_int_equal(n.inner.acc, 28);
    assert_int_equal(n.outer.acc, 5); /* 4 yields + the return */
    assert_int_equal(resumes, 6);
    assert_false(n.outer.bad || n.inner.bad);
    sim_stacks_destroy(st1);
    sim_stacks_destroy(st2);
}

/* ---- each coroutine keeps its own FP control state ---- */

static void round_fn(void *arg)
{
    ctx *c = arg;
    fesetround(FE_UPWARD);
    sim_coro_yield(c->s, &c->co);
    c->acc = fegetround() == FE_UPWARD;
}

static void test_fp_env(void **state)
{
    (void)state;
    sim_stacks *st = NULL;
    assert_int_equal(sim_stacks_create(&st, 1, 0), 0);
    sim_sched s;
    sim_sched_init(&s);
    ctx c = {.s = &s};
    assert_int_equal(sim_coro_init(&c.co, st, 0, round_fn, &c), 0);
    int before = fegetround();
    assert_int_equal(sim_coro_resume(&s, &c.co), 0);
    assert_int_equal(fegetround(), before);
    assert_int_equal(sim_coro_resume(&s, &c.co), 0);
    assert_int_equal(fegetround(), before);
    assert_int_equal(c.acc, 1);
    sim_stacks_destroy(st);
}

/* ---- stopping: abandon, stop, and what an overflow looks like ---- */

static void abandon_fn(void *arg)
{
    ctx *c = arg;
    c->acc++;
    sim_sched_abandon(c->s, CL_EPEER);
}

static void test_abandon(void **state)
{
    (void)state;
    sim_stacks *st = NULL;
    assert_int_equal(sim_stacks_create(&st, 2, 0), 0);
    sim_sched s;
    sim_sched_init(&s);
    ctx a = {.s = &s}, b = {.s = &s, .id = 1, .iters = 2};
    assert_int_equal(sim_coro_init(&a.co, st, 0, abandon_fn, &a), 0);
    assert_int_equal(sim_coro_init(&b.co, st, 1, count_fn, &b), 0);
    /* A stop asked for is the next resume's answer, once. */
    sim_sched_stop(&s, CL_ETIMEOUT);
    assert_int_equal(sim_coro_resume(&s, &a.co), CL_ETIMEOUT);
    assert_int_equal(a.acc, 0);
    assert_false(sim_coro_done(&a.co));
    assert_int_equal(sim_coro_resume(&s, &a.co), CL_EPEER);
    assert_int_equal(a.acc, 1);
    assert_true(sim_coro_done(&a.co));
    assert_null(sim_sched_current(&s));
    /* The scheduler goes on with the others. */
    while (!sim_coro_done(&b.co))
        assert_int_equal(sim_coro_resume(&s, &b.co), 0);
    assert_int_equal(b.acc, 2);
    assert_int_equal(b.bad, 0);
    sim_coro_release(&a.co);
    sim_stacks_destroy(st);
}

/* ---- passing the CPU straight on ---- */

/* A relay of three coroutines in a ring: each traces, then hands the CPU
 * to the next (ctx.next) instead of yielding, c->iters times; the last
 * pass of coroutine 2 is a yield, and coroutine 0's last step abandons
 * when c->bad asks it to. */
typedef struct relay {
    ctx c;
    struct relay *next;
    double x; /* a float kept across the switches */
} relay;

static void relay_fn(void *arg)
{
    relay *r = arg;
    ctx *c = &r->c;
    for (int i = 0; i < c->iters; i++) {
        trace(c, c->id * 10 + i);
        if (sim_sched_current(c->s) != &c->co || !sim_coro_may_pass(&c->co))
            c->bad = 1;
        r->x = r->x * 2 + 1;
        if (c->id == 2 && i == c->iters - 1)
            sim_coro_yield(c->s, &c->co);
        else
            sim_coro_pass(c->s, &c->co, &r->next->c.co);
    }
    trace(c, c->id * 10 + 9);
    if (c->id == 0 && c->acc)
        sim_sched_abandon(c->s, CL_EPEER);
}

/* One resume runs the chain until a coroutine switches back, and
 * sim_sched_last names it; a coroutine that starts from a pass starts
 * like one resumed; a resume runs on from where the pass left it; an
 * abandon after passes is the abandoned one's; a stop runs nothing. */
static void test_pass(void **state)
{
    (void)state;
    sim_stacks *st = NULL;
    assert_int_equal(sim_stacks_create(&st, 3, 0), 0);
    sim_sched s;
    sim_sched_init(&s);
    int log[64];
    size_t n = 0;
    relay r[3];
    for (int i = 0; i < 3; i++) {
        r[i] = (relay){.c = {.s = &s, .id = i, .log = log, .log_len = &n, .iters = 2},
                       .next = &r[(i + 1) % 3], .x = i};
        assert_int_equal(sim_coro_init(&r[i].c.co, st, (size_t)i, relay_fn, &r[i]), 0);
    }
    /* 0 -> 1 -> 2 -> 0 -> 1 -> 2, which yields. */
    assert_int_equal(sim_coro_resume(&s, &r[0].c.co), 0);
    assert_ptr_equal(sim_sched_last(&s), &r[2].c.co);
    assert_null(sim_sched_current(&s));
    /* 2 goes on, ends: its end is the switch back. */
    assert_int_equal(sim_coro_resume(&s, &r[2].c.co), 0);
    assert_ptr_equal(sim_sched_last(&s), &r[2].c.co);
    assert_true(sim_coro_done(&r[2].c.co));
    /* 0 and 1 wait where they passed; 0 ends, abandoning. */
    r[0].c.acc = 1;
    assert_int_equal(sim_coro_resume(&s, &r[1].c.co), 0);
    assert_ptr_equal(sim_sched_last(&s), &r[1].c.co);
    assert_int_equal(sim_coro_resume(&s, &r[0].c.co), CL_EPEER);
    assert_ptr_equal(sim_sched_last(&s), &r[0].c.co);
    const int want[] = {0, 10, 20, 1, 11, 21, 29, 19, 9};
    assert_int_equal(n, sizeof want / sizeof want[0]);
    for (size_t i = 0; i < n; i++)
        if (log[i] != want[i])
            fail_msg("log[%zu] = %d, expected %d", i, log[i], want[i]);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(r[i].c.bad, 0);
        assert_true(r[i].x == 4 * i + 3); /* x -> 2x + 1, twice */
    }
    /* A stop is the next resume's answer: nothing ran, nothing came back. */
    ctx c = {.s = &s, .id = 1, .iters = 1};
    sim_coro_release(&r[1].c.co);
    assert_int_equal(sim_coro_init(&c.co, st, 1, count_fn, &c), 0);
    sim_sched_stop(&s, CL_ETIMEOUT);
    assert_int_equal(sim_coro_resume(&s, &c.co), CL_ETIMEOUT);
    assert_null(sim_sched_last(&s));
    while (!sim_coro_done(&c.co))
        assert_int_equal(sim_coro_resume(&s, &c.co), 0);
    sim_stacks_destroy(st);
}

static void where_fn(void *arg)
{
    ctx *c = arg;
    c->stack_at = __builtin_frame_address(0);
}

static void test_overflowed(void **state)
{
    (void)state;
    sim_stacks *st = NULL;
    assert_int_equal(sim_stacks_create(&st, 3, 0), 0);
    sim_sched s;
    sim_sched_init(&s);
    ctx c = {.s = &s};
    assert_int_equal(sim_coro_init(&c.co, st, 1, where_fn, &c), 0);
    assert_int_equal(sim_coro_resume(&s, &c.co), 0);
    char *top_frame = c.stack_at; /* in the stack's top page */
    size_t bytes = sim_stacks_stack_bytes(st);
    /* The page below the stack is its guard. */
    assert_true(sim_coro_overflowed(&c.co, top_frame - bytes, top_frame));
    /* A stack pointer below the stack: whatever faulted, it ran off. */
    assert_true(sim_coro_overflowed(&c.co, NULL, top_frame - bytes - 64));
    /* A wild pointer with the stack pointer at home is no overflow. */
    assert_false(sim_coro_overflowed(&c.co, NULL, top_frame));
    assert_false(sim_coro_overflowed(&c.co, (void *)(uintptr_t)16, top_frame));
    sim_stacks_destroy(st);
}

/* ---- argument checks ---- */

static void test_bad_args(void **state)
{
    (void)state;
    sim_stacks *st = NULL;
    assert_int_equal(sim_stacks_create(&st, 0, 0), CL_EINVAL);
    assert_null(st);
    assert_int_equal(sim_stacks_create(&st, 2, SIZE_MAX / 2), CL_EINVAL);
    assert_int_equal(sim_stacks_create(&st, 3, 1), 0);
    assert_int_equal(sim_stacks_stack_bytes(st), SIM_CORO_STACK_MIN);
    sim_stacks_destroy(st);
    assert_int_equal(sim_stacks_create(&st, 3, 70000), 0);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    assert_int_equal(sim_stacks_stack_bytes(st) % page, 0);
    assert_true(sim_stacks_stack_bytes(st) >= 70000);
    sim_coro co;
    memset(&co, 0xAB, sizeof(co));
    assert_int_equal(sim_coro_init(&co, st, 3, count_fn, NULL), CL_EINVAL);
    assert_int_equal(sim_coro_init(&co, st, 0, NULL, NULL), CL_EINVAL);
    assert_int_equal(co.state, 0xABABABABu); /* untouched on error */
    sim_stacks_destroy(st);
    sim_stacks_destroy(NULL);
    assert_true(sizeof(sim_coro) < 32);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ping),
        cmocka_unit_test(test_deep_yield),
        cmocka_unit_test(test_many),
        cmocka_unit_test(test_overflow),
        cmocka_unit_test(test_release),
        cmocka_unit_test(test_two_scheds),
        cmocka_unit_test(test_fp_env),
        cmocka_unit_test(test_abandon),
        cmocka_unit_test(test_pass),
        cmocka_unit_test(test_overflowed),
        cmocka_unit_test(test_bad_args),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
