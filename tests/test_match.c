/* test_match.c - MPI matching rules: order, wildcards, ctx, cancel. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/match.h"

#define ANY_SRC MATCH_ANY_SOURCE
#define ANY_TAG MATCH_ANY_TAG

/* A caller's object with an embedded link, as sim/ and real/ will have. */
typedef struct item {
    int id;
    match_link link;
} item;

static item *item_of(match_link *l)
{
    return l ? (item *)(void *)((char *)l - offsetof(item, link)) : NULL;
}

static void mk(item *it, int id, int src, int tag, uint32_t ctx)
{
    it->id = id;
    match_link_init(&it->link, src, tag, ctx);
}

/* Returned id, or -1 when the call queued its argument. */
static int post(match_queues *m, item *recv)
{
    item *got = item_of(match_post_recv(m, &recv->link));
    assert_true(match_check(m));
    return got ? got->id : -1;
}

static int arrive(match_queues *m, item *msg)
{
    item *got = item_of(match_arrive(m, &msg->link));
    assert_true(match_check(m));
    return got ? got->id : -1;
}

static void test_empty(void **state)
{
    (void)state;
    match_queues m;
    match_queues_init(&m);
    assert_true(match_check(&m));
    assert_int_equal(match_posted_len(&m), 0);
    assert_int_equal(match_unexpected_len(&m), 0);
    /* Per rank: two lists and the index pointer. */
    assert_true(sizeof m <= 7 * sizeof(void *));
    match_queues_release(&m);
}

static void test_recv_then_msg(void **state)
{
    (void)state;
    match_queues m;
    item r, s;
    match_queues_init(&m);
    mk(&r, 1, 3, 7, 0);
    mk(&s, 2, 3, 7, 0);
    assert_int_equal(post(&m, &r), -1);
    assert_int_equal(match_posted_len(&m), 1);
    assert_int_equal(r.link.queue, MATCH_POSTED);
    assert_int_equal(arrive(&m, &s), 1);
    assert_int_equal(r.link.queue, MATCH_NONE);
    assert_int_equal(s.link.queue, MATCH_NONE);
    assert_int_equal(match_posted_len(&m), 0);
    assert_int_equal(match_unexpected_len(&m), 0);
}

/* Same sender, tag and ctx: the receives get the messages in arrival order. */
static void test_non_overtaking(void **state)
{
    (void)state;
    match_queues m;
    item msg[5], rcv[5];
    match_queues_init(&m);
    for (int i = 0; i < 5; i++) {
        mk(&msg[i], 100 + i, 2, 0, 0);
        assert_int_equal(arrive(&m, &msg[i]), -1);
    }
    assert_int_equal(match_unexpected_len(&m), 5);
    for (int i = 0; i < 5; i++) {
        mk(&rcv[i], i, 2, 0, 0);
        assert_int_equal(post(&m, &rcv[i]), 100 + i);
    }
    assert_int_equal(match_unexpected_len(&m), 0);

    /* and posted receives are matched in post order */
    for (int i = 0; i < 5; i++) {
        mk(&rcv[i], i, 2, 0, 0);
        assert_int_equal(post(&m, &rcv[i]), -1);
    }
    for (int i = 0; i < 5; i++) {
        mk(&msg[i], 100 + i, 2, 0, 0);
        assert_int_equal(arrive(&m, &msg[i]), i);
    }
    assert_int_equal(match_posted_len(&m), 0);
}

static void test_specific_skips_others(void **state)
{
    (void)state;
    match_queues m;
    item a, b, c, r;
    match_queues_init(&m);
    mk(&a, 1, 0, 5, 0); /* other source */
    mk(&b, 2, 1, 6, 0); /* other tag */
    mk(&c, 3, 1, 5, 0); /* the one */
    arrive(&m, &a);
    arrive(&m, &b);
    arrive(&m, &c);
    mk(&r, 9, 1, 5, 0);
    assert_int_equal(post(&m, &r), 3);
    assert_int_equal(match_unexpected_len(&m), 2);
    assert_ptr_equal(m.unexpected.head, &a.link);
    assert_ptr_equal(m.unexpected.tail, &b.link);
}

static void test_any_source(void **state)
{
    (void)state;
    match_queues m;
    item a, b, c, r;
    match_queues_init(&m);
    mk(&a, 1, 4, 1, 0);
    mk(&b, 2, 2, 0, 0);
    mk(&c, 3, 1, 0, 0);
    arrive(&m, &a);
    arrive(&m, &b);
    arrive(&m, &c);
    /* earliest-arrived among tag 0: b, although c's source is lower */
    mk(&r, 9, ANY_SRC, 0, 0);
    assert_int_equal(post(&m, &r), 2);
    mk(&r, 9, ANY_SRC, 0, 0);
    assert_int_equal(post(&m, &r), 3);
    mk(&r, 9, ANY_SRC, 0, 0);
    assert_int_equal(post(&m, &r), -1); /* a has tag 1 */
    assert_int_equal(match_posted_len(&m), 1);
    assert_int_equal(match_unexpected_len(&m), 1);
}

static void test_any_tag(void **state)
{
    (void)state;
    match_queues m;
    item a, b, r;
    match_queues_init(&m);
    mk(&a, 1, 0, 9, 0);
    mk(&b, 2, 1, 3, 0);
    arrive(&m, &a);
    arrive(&m, &b);
    mk(&r, 9, 1, ANY_TAG, 0);
    assert_int_equal(post(&m, &r), 2);
    mk(&r, 9, 1, ANY_TAG, 0);
    assert_int_equal(post(&m, &r), -1);
}

static void test_any_both(void **state)
{
    (void)state;
    match_queues m;
    item a, b, r;
    match_queues_init(&m);
    mk(&a, 1, 5, 9, 0);
    mk(&b, 2, 1, 3, 0);
    arrive(&m, &a);
    arrive(&m, &b);
    mk(&r, 9, ANY_SRC, ANY_TAG, 0);
    assert_int_equal(post(&m, &r), 1);
    mk(&r, 9, ANY_SRC, ANY_TAG, 0);
    assert_int_equal(post(&m, &r), 2);
}

/* A message takes the oldest posted receive it matches, wildcard or not. */
static void test_oldest_posted_wins(void **state)
{
    (void)state;
    match_queues m;
    item r1, r2, r3, r4, s;
    match_queues_init(&m);
    mk(&r1, 1, 2, 8, 0);             /* wrong tag */
    mk(&r2, 2, 1, ANY_TAG, 0);       /* matches, oldest */
    mk(&r3, 3, ANY_SRC, ANY_TAG, 0); /* matches */
    mk(&r4, 4, 1, 0, 0);             /* matches, exact but newest */
    post(&m, &r1);
    post(&m, &r2);
    post(&m, &r3);
    post(&m, &r4);
    mk(&s, 9, 1, 0, 0);
    assert_int_equal(arrive(&m, &s), 2);
    mk(&s, 9, 1, 0, 0);
    assert_int_equal(arrive(&m, &s), 3);
    mk(&s, 9, 1, 0, 0);
    assert_int_equal(arrive(&m, &s), 4);
    mk(&s, 9, 1, 0, 0);
    assert_int_equal(arrive(&m, &s), -1);
    assert_int_equal(match_posted_len(&m), 1);
    assert_int_equal(match_unexpected_len(&m), 1);
}

static void test_ctx_isolation(void **state)
{
    (void)state;
    match_queues m;
    item s0, s1, r;
    match_queues_init(&m);
    mk(&s0, 1, 0, 0, 7);
    mk(&s1, 2, 0, 0, 8);
    arrive(&m, &s0);
    arrive(&m, &s1);
    mk(&r, 9, ANY_SRC, ANY_TAG, 8); /* wildcards never cross a ctx */
    assert_int_equal(post(&m, &r), 2);
    mk(&r, 9, ANY_SRC, ANY_TAG, 9);
    assert_int_equal(post(&m, &r), -1);
    assert_int_equal(match_unexpected_len(&m), 1);
    assert_int_equal(match_posted_len(&m), 1);
    item s2;
    mk(&s2, 3, 0, 0, 9);
    assert_int_equal(arrive(&m, &s2), 9);
}

static void test_remove(void **state)
{
    (void)state;
    match_queues m;
    item r[3], s[3];
    match_queues_init(&m);
    for (int i = 0; i < 3; i++) {
        mk(&r[i], i, 1, i, 0);
        post(&m, &r[i]);
        mk(&s[i], 10 + i, 2, i, 0);
        arrive(&m, &s[i]);
    }
    /* middle, head, tail */
    assert_true(match_remove(&m, &r[1].link));
    assert_true(match_check(&m));
    assert_true(match_remove(&m, &s[0].link));
    assert_true(match_check(&m));
    assert_true(match_remove(&m, &s[2].link));
    assert_true(match_check(&m));
    assert_int_equal(match_posted_len(&m), 2);
    assert_int_equal(match_unexpected_len(&m), 1);
    /* not queued any more: false, nothing changes */
    assert_false(match_remove(&m, &r[1].link));
    assert_int_equal(match_posted_len(&m), 2);
    /* a removed receive does not match: x is queued as unexpected */
    item x, y, z;
    mk(&x, 20, 1, 1, 0);
    assert_int_equal(arrive(&m, &x), -1);
    mk(&y, 22, 1, 2, 0);
    assert_int_equal(arrive(&m, &y), 2);
    /* a never-queued link */
    mk(&z, 23, 1, 2, 0);
    assert_false(match_remove(&m, &z.link));
    /* empty the lists */
    assert_true(match_remove(&m, &r[0].link));
    assert_true(match_remove(&m, &s[1].link));
    assert_true(match_remove(&m, &x.link));
    assert_true(match_check(&m));
    assert_int_equal(match_posted_len(&m), 0);
    assert_int_equal(match_unexpected_len(&m), 0);
    assert_null(m.posted.head);
    assert_null(m.unexpected.tail);
}

static void test_check_detects_corruption(void **state)
{
    (void)state;
    match_queues m;
    item a, b;
    match_queues_init(&m);
    mk(&a, 1, 0, 0, 0);
    mk(&b, 2, 0, 0, 0);
    arrive(&m, &a);
    arrive(&m, &b);
    m.unexpected.len = 3;
    assert_false(match_check(&m));
    m.unexpected.len = 2;
    b.link.prev = NULL;
    assert_false(match_check(&m));
    b.link.prev = &a.link;
    b.link.next = &a.link; /* a cycle: the walk must still end */
    assert_false(match_check(&m));
    b.link.next = NULL;
    a.link.queue = MATCH_POSTED;
    assert_false(match_check(&m));
    a.link.queue = MATCH_UNEXPECTED;
    assert_true(match_check(&m));
}

/* Many entries, interleaved: counts and FIFO order hold throughout. */
static void test_many(void **state)
{
    (void)state;
    enum { N = 1000 };
    static item msg[N], rcv[N];
    match_queues m;
    match_queues_init(&m);
    for (int i = 0; i < N; i++) {
        mk(&msg[i], i, i % 7, i % 3, 0);
        assert_int_equal(arrive(&m, &msg[i]), -1);
    }
    /* receive tag 1 from any source: arrival order among i % 3 == 1 */
    int want = 1;
    for (int i = 0; i < N; i++) {
        mk(&rcv[i], -2, ANY_SRC, 1, 0);
        int got = item_of(match_post_recv(&m, &rcv[i].link)) ? 0 : -1;
        if (want < N) {
            assert_int_equal(got, 0);
            want += 3;
        } else {
            assert_int_equal(got, -1);
        }
    }
    assert_true(match_check(&m));
    assert_int_equal(match_unexpected_len(&m), N - N / 3);
    assert_int_equal(match_posted_len(&m), N - N / 3);
    match_queues_release(&m);
}

/* The answers by linear scan, for test_index: the oldest receive a message
 * matches among the posted ones (post order), or the oldest message a
 * receive matches. */
typedef struct model {
    item *q[4096];
    int n;
} model;

static bool model_matches(const item *recv, const item *msg)
{
    const match_link *r = &recv->link, *g = &msg->link;
    return r->ctx == g->ctx && (r->src == ANY_SRC || r->src == g->src) &&
           (r->tag == ANY_TAG || r->tag == g->tag);
}

/* Takes the oldest entry of m that matches it (as a receive when recv),
 * or appends it to queue; returns the id taken or -1. */
static int model_op(model *m, item *it, bool recv, model *queue)
{
    for (int i = 0; i < m->n; i++)
        if (recv ? model_matches(it, m->q[i]) : model_matches(m->q[i], it)) {
            int id = m->q[i]->id;
            for (int j = i; j + 1 < m->n; j++)
                m->q[j] = m->q[j + 1];
            m->n--;
            return id;
        }
    queue->q[queue->n++] = it;
    return -1;
}

static void model_drop(model *m, const item *it)
{
    for (int i = 0; i < m->n; i++)
        if (m->q[i] == it) {
            for (int j = i; j + 1 < m->n; j++)
                m->q[j] = m->q[j + 1];
            m->n--;
            return;
        }
}

/* Long queues are indexed (match.h, Cost): random receives (a tenth with a
 * wildcard), messages and cancels over few keys and contexts, each op
 * after a match_prefetch of every step of its key, the queues
 * growing past MATCH_INDEX_FROM, shrinking to empty (the index goes) and
 * growing again, give the scans' answers, op for op, every invariant
 * checked (the index's too) after each. */
static void test_index(void **state)
{
    (void)state;
    enum { N = 4000 };
    static item it[N];
    model posted = {0}, unexpected = {0};
    match_queues m;
    match_queues_init(&m);
    unsigned x = 12345;
    int indexed = 0;
    for (int i = 0; i < N; i++) {
        x = x * 1103515245u + 12345u;
        unsigned r = x >> 8;
        /* Phases of 500: mostly receives, mostly messages, then drain. */
        bool recv = (i / 500) % 2 == 0 ? r % 10 < 8 : r % 10 < 2;
        int src = (int)(r / 10 % 40), tag = (int)(r / 400 % 3);
        uint32_t ctx = r / 1200 % 2;
        if (recv && r / 2400 % 10 == 0)
            src = ANY_SRC;
        if (recv && r / 24000 % 10 == 0)
            tag = ANY_TAG;
        mk(&it[i], i, src, tag, ctx);
        /* Fetching ahead, for this key and the other list's, changes
         * nothing (and reads only live memory: the sanitized build). */
        for (int step = 0; step < 4; step++) {
            match_prefetch(&m, !recv, src, tag, ctx, step);
            match_prefetch(&m, recv, src, tag, ctx, step);
        }
        int want = recv ? model_op(&unexpected, &it[i], true, &posted)
                        : model_op(&posted, &it[i], false, &unexpected);
        int got = recv ? post(&m, &it[i]) : arrive(&m, &it[i]);
        assert_int_equal(got, want);
        if (got < 0 && r % 97 == 0) { /* cancel it */
            assert_true(match_remove(&m, &it[i].link));
            model_drop(recv ? &posted : &unexpected, &it[i]);
            assert_true(match_check(&m));
        }
        indexed += m.ix != NULL;
        assert_int_equal(match_posted_len(&m), (size_t)posted.n);
        assert_int_equal(match_unexpected_len(&m), (size_t)unexpected.n);
    }
    assert_true(indexed > N / 4); /* the index did most of the work */
    match_queues_release(&m);
    assert_null(m.ix);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_recv_then_msg),
        cmocka_unit_test(test_non_overtaking),
        cmocka_unit_test(test_specific_skips_others),
        cmocka_unit_test(test_any_source),
        cmocka_unit_test(test_any_tag),
        cmocka_unit_test(test_any_both),
        cmocka_unit_test(test_oldest_posted_wins),
        cmocka_unit_test(test_ctx_isolation),
        cmocka_unit_test(test_remove),
        cmocka_unit_test(test_check_detects_corruption),
        cmocka_unit_test(test_many),
        cmocka_unit_test(test_index),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
