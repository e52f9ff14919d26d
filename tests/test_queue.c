/* test_queue.c - the event queue: (time, seq) order, ties, errors, invariants. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "commlab.h"
#include "sim/queue.h"

/* Deterministic generator local to each test (no shared random stream). */
static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static sim_event mk(double time, uint32_t type, uint64_t arg)
{
    sim_event e = {.time = time, .type = type, .arg = arg, .seq = 12345};
    return e;
}

static void push_ok(sim_queue *q, double time, uint32_t type, uint64_t arg)
{
    sim_event e = mk(time, type, arg);
    assert_int_equal(sim_queue_push(q, &e), 0);
    assert_int_equal(e.seq, 12345); /* the caller's copy is not modified */
}

static void test_empty(void **state)
{
    (void)state;
    sim_queue *q = NULL;
    assert_int_equal(sim_queue_create(&q), 0);
    sim_event out = mk(7.0, 7, 7);
    assert_false(sim_queue_pop(q, &out));
    assert_true(out.time == 7.0 && out.arg == 7); /* untouched */
    assert_null(sim_queue_peek(q));
    assert_int_equal(sim_queue_len(q), 0);
    assert_true(sim_queue_check(q));
    sim_queue_destroy(q);
    sim_queue_destroy(NULL);
}

static void test_time_order(void **state)
{
    (void)state;
    sim_queue *q = NULL;
    assert_int_equal(sim_queue_create(&q), 0);
    const double t[] = {5.0, 1.0, 3.0, 0.0, 4.0, 2.0, 1.5, 0.5};
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        push_ok(q, t[i], 0, i);
    assert_true(sim_queue_check(q));
    double last = -1.0;
    sim_event e;
    size_t n = 0;
    while (sim_queue_pop(q, &e)) {
        assert_true(e.time >= last);
        assert_true(e.time == t[e.arg]); /* payload travels with its time */
        last = e.time;
        n++;
    }
    assert_int_equal(n, sizeof(t) / sizeof(t[0]));
    sim_queue_destroy(q);
}

/* Equal times pop in push order, whichever internal path they took. */
static void test_ties_fifo(void **state)
{
    (void)state;
    sim_queue *q = NULL;
    assert_int_equal(sim_queue_create(&q), 0);
    /* Interleave more times than the queue has sorted runs, so that
     * pushes go to the heap as well as to the runs: 6,5,4,3,2,1,6,5,... */
    for (uint64_t i = 0; i < 1200; i++)
        push_ok(q, 6.0 - (double)(i % 6), 0, i);
    assert_true(sim_queue_check(q));
    sim_event e;
    uint64_t prev_seq = 0;
    for (uint64_t k = 0; k < 1200; k++) {
        assert_true(sim_queue_pop(q, &e));
        /* time 1 + k / 200: the pushes i with i % 6 == 5 - k / 200 */
        uint64_t want = (k % 200) * 6 + 5 - k / 200;
        assert_int_equal(e.arg, want);
        assert_int_equal(e.seq, want); /* seq is the push index */
        if (k % 200 != 0)
            assert_true(e.seq > prev_seq);
        prev_seq = e.seq;
    }
    assert_false(sim_queue_pop(q, &e));
    sim_queue_destroy(q);
}

static void test_peek_len(void **state)
{
    (void)state;
    sim_queue *q = NULL;
    assert_int_equal(sim_queue_create(&q), 0);
    push_ok(q, 3.0, 3, 0);
    push_ok(q, 1.0, 1, 1);
    push_ok(q, 2.0, 2, 2);
    assert_int_equal(sim_queue_len(q), 3);
    const sim_event *p = sim_queue_peek(q);
    assert_non_null(p);
    assert_true(p->time == 1.0 && p->type == 1 && p->seq == 1);
    assert_int_equal(sim_queue_len(q), 3); /* peek removes nothing */
    sim_event e;
    assert_true(sim_queue_pop(q, &e));
    assert_true(e.time == 1.0 && e.type == 1);
    assert_int_equal(sim_queue_len(q), 2);
    assert_true(sim_queue_peek(q)->time == 2.0);
    sim_queue_destroy(q);
}

/* sim_queue_soon sees the first sorted run only: in lockstep the k-th event
 * after the next one, NULL past the run's end, and an early push that goes
 * elsewhere is not among them (a hint, not the order). */
static void test_soon(void **state)
{
    (void)state;
    sim_queue *q = NULL;
    assert_int_equal(sim_queue_create(&q), 0);
    assert_null(sim_queue_soon(q, 0));
    for (uint32_t i = 0; i < 5; i++)
        push_ok(q, 1.0 + i, i, i);
    for (size_t k = 0; k < 5; k++) {
        const sim_event *p = sim_queue_soon(q, k);
        assert_non_null(p);
        assert_int_equal(p->arg, k);
    }
    assert_null(sim_queue_soon(q, 5));
    push_ok(q, 0.5, 9, 9); /* earlier than the run's last: another run */
    assert_int_equal(sim_queue_peek(q)->arg, 9);
    assert_int_equal(sim_queue_soon(q, 0)->arg, 0);
    sim_event e;
    assert_true(sim_queue_pop(q, &e) && e.arg == 9);
    assert_true(sim_queue_pop(q, &e) && e.arg == 0);
    assert_int_equal(sim_queue_soon(q, 0)->arg, 1);
    assert_int_equal(sim_queue_soon(q, 3)->arg, 4);
    assert_null(sim_queue_soon(q, 4));
    sim_queue_destroy(q);
}

static void test_bad_time(void **state)
{
    (void)state;
    sim_queue *q = NULL;
    assert_int_equal(sim_queue_create(&q), 0);
    push_ok(q, 1.0, 0, 0);
    sim_event bad = mk(NAN, 0, 0);
    assert_int_equal(sim_queue_push(q, &bad), CL_EINVAL);
    bad.time = -1e-9;
    assert_int_equal(sim_queue_push(q, &bad), CL_EINVAL);
    bad.time = -INFINITY;
    assert_int_equal(sim_queue_push(q, &bad), CL_EINVAL);
    assert_int_equal(sim_queue_len(q), 1);
    assert_true(sim_queue_check(q));
    push_ok(q, INFINITY, 0, 1); /* "never" is a valid time */
    push_ok(q, 0.5, 0, 3);
    push_ok(q, -0.0, 0, 4); /* stored as +0.0, so it comes first */
    push_ok(q, 0.0, 0, 2);
    sim_event e;
    assert_true(sim_queue_pop(q, &e));
    assert_true(e.time == 0.0 && !signbit(e.time));
    assert_int_equal(e.arg, 4);
    assert_int_equal(e.seq, 3); /* failed pushes did not use up a seq */
    assert_true(sim_queue_pop(q, &e));
    assert_true(e.time == 0.0 && e.arg == 2);
    assert_true(sim_queue_pop(q, &e));
    assert_true(e.time == 0.5);
    assert_true(sim_queue_pop(q, &e));
    assert_true(e.time == 1.0);
    assert_true(sim_queue_pop(q, &e));
    assert_true(isinf(e.time));
    sim_queue_destroy(q);
}

/* Reference: the earliest pending event by (time, seq), by linear scan. */
static size_t ref_min(const sim_event *v, size_t n)
{
    size_t m = 0;
    for (size_t i = 1; i < n; i++)
        if (v[i].time < v[m].time ||
            (v[i].time == v[m].time && v[i].seq < v[m].seq))
            m = i;
    return m;
}

/* Random pushes and pops against the reference.  mode 0: times from a small
 * set (many ties); 1: continuous; 2: mostly increasing (one sorted run) with
 * occasional earlier events; 3: one of a few delays each (several runs, and
 * the heap when they are more than the runs). */
static void run_random(int mode, uint64_t seed, size_t ops)
{
    sim_queue *q = NULL;
    assert_int_equal(sim_queue_create(&q), 0);
    sim_event *ref = malloc(ops * sizeof(*ref));
    assert_non_null(ref);
    size_t n = 0;
    uint64_t seq = 0;
    double now = 0.0;
    for (size_t op = 0; op < ops; op++) {
        uint64_t r = rng_next(&seed);
        bool push = n == 0 || (r % 100) < 55;
        if (push) {
            double t;
            if (mode == 0)
                t = now + (double)(rng_next(&seed) % 4);
            else if (mode == 1)
                t = now + (double)(rng_next(&seed) % 1000000) * 1e-6;
            else if (mode == 2)
                t = (rng_next(&seed) % 10) ? now + 1.0 + (double)(op % 3)
                                           : now + 0.5;
            else
                t = now + 0.125 * (double)(1 + rng_next(&seed) % 6);
            sim_event e = mk(t, (uint32_t)(op & 7), op);
            assert_int_equal(sim_queue_push(q, &e), 0);
            e.seq = seq++;
            ref[n++] = e;
        } else {
            size_t m = ref_min(ref, n);
            const sim_event *p = sim_queue_peek(q);
            assert_non_null(p);
            assert_int_equal(p->seq, ref[m].seq);
            sim_event e;
            assert_true(sim_queue_pop(q, &e));
            if (e.seq != ref[m].seq || e.time != ref[m].time)
                fail_msg("op %zu: popped (%g, %llu), expected (%g, %llu)",
                         op, e.time, (unsigned long long)e.seq, ref[m].time,
                         (unsigned long long)ref[m].seq);
            assert_int_equal(e.arg, ref[m].arg);
            assert_int_equal(e.type, ref[m].type);
            now = e.time;
            ref[m] = ref[--n];
        }
        assert_int_equal(sim_queue_len(q), n);
        if (op % 97 == 0)
            assert_true(sim_queue_check(q));
    }
    /* Drain: the remainder comes out fully sorted. */
    while (n > 0) {
        size_t m = ref_min(ref, n);
        sim_event e;
        assert_true(sim_queue_pop(q, &e));
        assert_int_equal(e.seq, ref[m].seq);
        ref[m] = ref[--n];
    }
    assert_false(sim_queue_pop(q, &(sim_event){0}));
    assert_true(sim_queue_check(q));
    free(ref);
    sim_queue_destroy(q);
}

static void test_random_ties(void **state)
{
    (void)state;
    run_random(0, 0x9E3779B97F4A7C15ull, 20000);
}

static void test_random_continuous(void **state)
{
    (void)state;
    run_random(1, 0xD1B54A32D192ED03ull, 20000);
}

static void test_random_lockstep(void **state)
{
    (void)state;
    run_random(2, 0x2545F4914F6CDD1Dull, 20000);
}

static void test_random_delays(void **state)
{
    (void)state;
    run_random(3, 0x94D049BB133111EBull, 20000);
}

/* Many events, then a full drain: every pop is >= the previous one. */
static void test_large_sorted_drain(void **state)
{
    (void)state;
    sim_queue *q = NULL;
    assert_int_equal(sim_queue_create(&q), 0);
    uint64_t seed = 42;
    for (uint64_t i = 0; i < 100000; i++)
        push_ok(q, (double)(rng_next(&seed) % 5000) * 0.25, 0, i);
    assert_true(sim_queue_check(q));
    sim_event prev, e;
    assert_true(sim_queue_pop(q, &prev));
    size_t n = 1;
    while (sim_queue_pop(q, &e)) {
        if (e.time < prev.time || (e.time == prev.time && e.seq < prev.seq))
            fail_msg("(%g, %llu) after (%g, %llu)", e.time,
                     (unsigned long long)e.seq, prev.time,
                     (unsigned long long)prev.seq);
        prev = e;
        n++;
    }
    assert_int_equal(n, 100000);
    sim_queue_destroy(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_time_order),
        cmocka_unit_test(test_ties_fifo),
        cmocka_unit_test(test_peek_len),
        cmocka_unit_test(test_soon),
        cmocka_unit_test(test_bad_time),
        cmocka_unit_test(test_random_ties),
        cmocka_unit_test(test_random_continuous),
        cmocka_unit_test(test_random_lockstep),
        cmocka_unit_test(test_random_delays),
        cmocka_unit_test(test_large_sorted_drain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
