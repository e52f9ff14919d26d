/* test_debug.c - --debug (core/debug.h): the hash and the poison, and each
 * report, end to end in the simulator through sim_run() as `commlab run
 * --debug` calls it; legal uses of buffers pass, and without --debug every
 * run is what it was.  The patterns are the files of tests/data/debug/
 * and chapter 02's pitfall examples, each included under a name of its own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commlab.h"
#include "core/debug.h"
#include "core/tier.h"
#include "sim/engine.h"
#include "sim/net.h"
#include "tests/simcase.h"
#include "tests/testutil.h"

#define pattern dbg_send_modified
#include "tests/data/debug/send_modified.c"
#undef pattern
#define pattern dbg_recv_written
#include "tests/data/debug/recv_written.c"
#undef pattern
#define pattern dbg_send_pending_recv
#include "tests/data/debug/send_pending_recv.c"
#undef pattern
#define pattern dbg_early_use
#include "tests/data/debug/early_use.c"
#undef pattern
#define pattern dbg_legal
#include "tests/data/debug/legal.c"
#undef pattern
#define pattern ex_mismatch
#include "chapters/02-point-to-point/examples/mismatch.c"
#undef pattern
#define pattern ex_reuse
#include "chapters/02-point-to-point/examples/reuse.c"
#undef pattern
#define pattern ex_early_read
#include "chapters/02-point-to-point/examples/early_read.c"
#undef pattern

cl_pattern_fn relay, pingpong, ring, exchange, pipeline, chunked, allreduce_naive,
    allreduce_ring;

#define KiB 1024ULL
#define MiB (1024ULL * 1024ULL)

static const setup on = {.debug = true}, off = {.debug = false};

/* The run failed with status and its message starts with want. */
static void expect_failure(const run *r, int status, const char *want)
{
    if (r->res.status != status)
        fail_msg("status %s, want %s (%s)", cl_errname(r->res.status), cl_errname(status),
                 r->res.diag.msg);
    if (strncmp(r->res.diag.msg, want, strlen(want)) != 0)
        fail_msg("message\n  '%s'\nwant it to start with\n  '%s'", r->res.diag.msg, want);
}

static void expect_ok(const run *r)
{
    if (r->res.status != 0)
        fail_msg("%s: %s", cl_errname(r->res.status), r->res.diag.msg);
}

/* ---- the pieces ---- */

static void test_hash(void **state)
{
    (void)state;
    unsigned char buf[100];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (unsigned char)(i * 7);
    for (size_t n = 1; n <= sizeof buf; n++) {
        uint64_t h = debug_hash(buf, n);
        assert_true(debug_hash(buf, n) == h); /* a function of the bytes only */
        for (size_t k = 0; k < n; k++) {      /* any one byte changed shows */
            buf[k] ^= 0x40;
            assert_true(debug_hash(buf, n) != h);
            buf[k] ^= 0x40;
        }
    }
    /* Two words swapped, and the same bytes at another length, show too. */
    uint64_t w[2] = {1, 2}, v[2] = {2, 1};
    assert_true(debug_hash(w, sizeof w) != debug_hash(v, sizeof v));
    unsigned char zeros[16] = {0};
    assert_true(debug_hash(zeros, 8) != debug_hash(zeros, 16));
}

static void test_first_written(void **state)
{
    (void)state;
    unsigned char buf[40];
    memset(buf, DEBUG_POISON, sizeof buf);
    assert_int_equal(debug_first_written(buf, sizeof buf), sizeof buf);
    assert_int_equal(debug_first_written(buf, 0), 0);
    buf[17] = 0;
    assert_int_equal(debug_first_written(buf, sizeof buf), 17);
    assert_int_equal(debug_first_written(buf, 17), 17);
}

/* ---- the reports ---- */

/* A send buffer modified between isend and wait: reported at the wait
 * whether the bytes had left (eager, 1 KiB) or not (rendezvous, 1 MiB). */
static void test_send_modified(void **state)
{
    (void)state;
    run r;
    run_pattern(&r, dbg_send_modified, 2, 1 * MiB, NULL, &on);
    expect_failure(&r, CL_ECHECK,
                   "rank 0: misuse: the send buffer of isend #1 (dst=1, tag=0, 1 MiB at "
                   "cl_alloc #1) was modified before the send completed (posted at t = 1 us, "
                   "completed at t = ");
    run_release(&r);
    run_pattern(&r, dbg_send_modified, 2, 1 * KiB, NULL, &on);
    expect_failure(&r, CL_ECHECK, "rank 0: misuse: the send buffer of isend #1 (dst=1, tag=0, "
                                  "1 KiB at cl_alloc #1) was modified");
    run_release(&r);
    run_pattern(&r, dbg_send_modified, 2, 1 * MiB, NULL, &off);
    expect_ok(&r);
    run_release(&r);
}

/* A receive buffer written while its receive is pending. */
static void test_recv_written(void **state)
{
    (void)state;
    run r;
    run_pattern(&r, dbg_recv_written, 2, 4 * KiB, NULL, &on);
    expect_failure(&r, CL_ECHECK,
                   "rank 1: misuse: the receive buffer of irecv #1 (src=0, tag=0, 4 KiB at "
                   "cl_alloc #1) was written before the receive completed: byte 0 is 0x01, not "
                   "the poison 0xdb (posted at t = 1 us, completed at t = ");
    run_release(&r);
    run_pattern(&r, dbg_recv_written, 2, 4 * KiB, NULL, &off);
    expect_ok(&r);
    run_release(&r);
}

/* A buffer with a pending receive passed to a send: refused at the post. */
static void test_send_pending_recv(void **state)
{
    (void)state;
    run r;
    run_pattern(&r, dbg_send_pending_recv, 2, 1 * MiB, NULL, &on);
    expect_failure(&r, CL_ECHECK,
                   "rank 1: misuse: send #1 (dst=0, tag=0, 1 MiB at cl_alloc #1) would read the "
                   "buffer of irecv #1 (src=0, tag=0, 1 MiB at cl_alloc #1) before that receive "
                   "completed");
    run_release(&r);
    run_pattern(&r, dbg_send_pending_recv, 2, 1 * MiB, NULL, &off);
    expect_ok(&r);
    run_release(&r);
}

/* A receive into part of a buffer a pending isend still reads; rank 1
 * sends what the receive expects so the run would end without the check. */
static int recv_over_send(cl_comm *c, const cl_args *a)
{
    unsigned char *buf = cl_alloc(c, a->bytes);
    cl_request *r[2];
    if (cl_rank(c) == 0) {
        CL_TRY(cl_isend(c, buf, a->bytes, 1, 0, &r[0]));
        CL_TRY(cl_irecv(c, CL_AT(buf, 512), 256, 1, 5, &r[1]));
        CL_TRY(cl_waitall(c, 2, r, NULL));
    } else {
        CL_TRY(cl_recv(c, buf, a->bytes, 0, 0, NULL));
        CL_TRY(cl_send(c, buf, 256, 0, 5));
    }
    return 0;
}

/* Two pending receives into overlapping parts of one buffer, the second
 * from any rank with any tag. */
static int recv_over_recv(cl_comm *c, const cl_args *a)
{
    unsigned char *pad = cl_alloc(c, 64), *buf = cl_alloc(c, a->bytes);
    (void)pad;
    cl_request *r[2];
    if (cl_rank(c) == 0) {
        CL_TRY(cl_send(c, buf, 1024, 1, 0));
        CL_TRY(cl_send(c, buf, 1024, 1, 1));
    } else {
        CL_TRY(cl_irecv(c, buf, 1024, 0, 0, &r[0]));
        CL_TRY(cl_irecv(c, CL_AT(buf, 1000), 1024, CL_ANY_SOURCE, CL_ANY_TAG, &r[1]));
        CL_TRY(cl_waitall(c, 2, r, NULL));
    }
    return 0;
}

static void test_overlaps(void **state)
{
    (void)state;
    run r;
    run_pattern(&r, recv_over_send, 2, 4 * KiB, NULL, &on);
    expect_failure(&r, CL_ECHECK,
                   "rank 0: misuse: irecv #1 (src=1, tag=5, 256 B at cl_alloc #1 + 512) would "
                   "write the buffer of isend #1 (dst=1, tag=0, 4 KiB at cl_alloc #1) before "
                   "that send completed");
    run_release(&r);
    run_pattern(&r, recv_over_send, 2, 4 * KiB, NULL, &off);
    expect_ok(&r);
    run_release(&r);

    run_pattern(&r, recv_over_recv, 2, 4 * KiB, NULL, &on);
    expect_failure(&r, CL_ECHECK,
                   "rank 1: misuse: irecv #2 (src=any, tag=any, 1 KiB at cl_alloc #2 + 1000) "
                   "would write the buffer of irecv #1 (src=0, tag=0, 1 KiB at cl_alloc #2) "
                   "before that receive completed");
    run_release(&r);
}

/* A buffer that is not from cl_alloc is named by its address. */
static int stack_send_modified(cl_comm *c, const cl_args *a)
{
    (void)a;
    long long x = 1;
    cl_request *r;
    if (cl_rank(c) == 0) {
        CL_TRY(cl_isend(c, &x, sizeof x, 1, 3, &r));
        x = 2;
        CL_TRY(cl_wait(c, &r, NULL));
    } else {
        CL_TRY(cl_recv(c, &x, sizeof x, 0, 3, NULL));
    }
    return 0;
}

static void test_stack_buffer(void **state)
{
    (void)state;
    run r;
    run_pattern(&r, stack_send_modified, 2, 8, NULL, &on);
    expect_failure(&r, CL_ECHECK, "rank 0: misuse: the send buffer of isend #1 (dst=1, tag=3, "
                                  "8 B at 0x");
    run_release(&r);
}

/* Calls are numbered per iteration: a misuse in the second iteration
 * names the same call and block as it would in the first. */
static int modified_second_time(cl_comm *c, const cl_args *a)
{
    unsigned char *buf = cl_alloc(c, a->bytes), *other = cl_alloc(c, a->bytes);
    cl_request *r[2];
    if (cl_rank(c) == 0) {
        CL_TRY(cl_isend(c, other, a->bytes, 1, 0, &r[0]));
        CL_TRY(cl_isend(c, buf, a->bytes, 1, 1, &r[1]));
        if (a->iteration == 1)
            buf[0] ^= 1;
        CL_TRY(cl_waitall(c, 2, r, NULL));
    } else {
        CL_TRY(cl_recv(c, other, a->bytes, 0, 0, NULL));
        CL_TRY(cl_recv(c, buf, a->bytes, 0, 1, NULL));
    }
    return 0;
}

static void test_numbering(void **state)
{
    (void)state;
    run r;
    setup s = {.debug = true, .iters = 3};
    run_pattern(&r, modified_second_time, 2, 1 * KiB, NULL, &s);
    expect_failure(&r, CL_ECHECK, "rank 0: misuse: the send buffer of isend #2 (dst=1, tag=1, "
                                  "1 KiB at cl_alloc #1) was modified");
    run_release(&r);
}

/* Without --debug a read before the wait sees what the buffer held; with
 * it, the poison, and a data check of it says where the bytes came from. */
static void test_early_use(void **state)
{
    (void)state;
    run r;
    run_pattern(&r, dbg_early_use, 2, 64, NULL, &off);
    expect_failure(&r, CL_ECHECK, "rank 1: data check failed: the copy taken before the wait: "
                                  "byte 0 of 64 is 0x00, expected 0x");
    assert_null(strstr(r.res.diag.msg, "poison"));
    run_release(&r);
    run_pattern(&r, dbg_early_use, 2, 64, NULL, &on);
    expect_failure(&r, CL_ECHECK, "rank 1: data check failed: the copy taken before the wait: "
                                  "byte 0 of 64 is 0xdb, expected 0x");
    assert_non_null(strstr(r.res.diag.msg, " - 0xdb is the poison --debug leaves in a receive "
                                           "buffer until the receive completes, so these bytes "
                                           "were read from one before its wait"));
    run_release(&r);
}

/* Until the wait or test that completes it, the buffer holds the poison,
 * even once the message has arrived; then the message. */
static int poison_until_complete(cl_comm *c, const cl_args *a)
{
    unsigned char *buf = cl_alloc(c, a->bytes);
    if (cl_rank(c) == 0) {
        cl_fill(c, buf, a->bytes, 9);
        return cl_send(c, buf, a->bytes, 1, 0);
    }
    cl_request *r;
    bool done = false;
    int polls = 0;
    CL_TRY(cl_irecv(c, buf, a->bytes, 0, 0, &r));
    CL_TRY(cl_compute(c, 1e-3)); /* the message is here by now */
    if (debug_first_written(buf, a->bytes) != a->bytes)
        return cl_fail(c, "the buffer lost its poison before the test");
    while (!done) {
        CL_TRY(cl_test(c, &r, &done, NULL));
        polls++;
        if (!done && debug_first_written(buf, a->bytes) != a->bytes)
            return cl_fail(c, "the buffer lost its poison before completion");
    }
    cl_printf(c, "completed after %d test%s", polls, polls == 1 ? "" : "s");
    return cl_verify(c, buf, a->bytes, 9, "the message");
}

static void test_poison_until_complete(void **state)
{
    (void)state;
    run r;
    for (int big = 0; big < 2; big++) {
        run_pattern(&r, poison_until_complete, 2, big ? 1 * MiB : 100, NULL, &on);
        expect_ok(&r);
        assert_string_equal(r.out, "rank 1: completed after 1 test\n");
        run_release(&r);
    }
}

/* Chapter 02's three pitfalls, as the chapter shows them with --debug. */
static void test_chapter_examples(void **state)
{
    (void)state;
    run r, plain;
    run_pattern(&r, ex_mismatch, 2, 8, NULL, &on); /* the deadlock report, unchanged */
    run_pattern(&plain, ex_mismatch, 2, 8, NULL, &off);
    assert_int_equal(r.res.status, CL_EDEADLOCK);
    assert_string_equal(r.report, plain.report);
    assert_string_equal(r.res.diag.msg, plain.res.diag.msg);
    assert_non_null(strstr(r.report, "rank 1: blocked in recv(src=0, tag=0, 8 B)"));
    run_release(&r);
    run_release(&plain);

    run_pattern(&r, ex_reuse, 2, 1 * MiB, NULL, &on);
    expect_failure(&r, CL_ECHECK, "rank 0: misuse: the send buffer of isend #1 (dst=1, tag=0, "
                                  "1 MiB at cl_alloc #1) was modified before the send "
                                  "completed (posted at t = 1 us, completed at t = 1.01 ms)");
    run_release(&r);
    run_pattern(&r, ex_reuse, 2, 1 * KiB, NULL, &on); /* caught where the data happened to be right */
    expect_failure(&r, CL_ECHECK, "rank 0: misuse: the send buffer of isend #1 (dst=1, tag=0, "
                                  "1 KiB at cl_alloc #1) was modified");
    run_release(&r);

    run_pattern(&r, ex_early_read, 2, 8, NULL, &on);
    expect_ok(&r);
    assert_string_equal(r.out, "rank 1: read 0xdbdbdbdbdbdbdbdb before the wait, 42 after it\n");
    run_release(&r);
    run_pattern(&r, ex_early_read, 2, 8, NULL, &off);
    assert_string_equal(r.out, "rank 1: read 0 before the wait, 42 after it\n");
    run_release(&r);
}

/* ---- no false alarms, nothing changed ---- */

static void test_legal(void **state)
{
    (void)state;
    const uint64_t sizes[] = {8, 1 * KiB, 1 * MiB};
    for (int n = 3; n <= 4; n++)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            run r;
            run_pattern(&r, dbg_legal, n, sizes[i], NULL, &on);
            expect_ok(&r);
            run_release(&r);
        }
    run r;
    setup s = {.debug = true, .no_payload = true};
    run_pattern(&r, dbg_legal, 3, 1 * MiB, NULL, &s);
    expect_ok(&r);
    run_release(&r);
    run_pattern(&r, dbg_send_modified, 2, 1 * MiB, NULL, &s); /* no buffers: nothing to check */
    expect_ok(&r);
    run_release(&r);
}

/* Every built-in pattern of chapters 02 and 04 passes under --debug with
 * the same modeled times, messages and output: the checks cost no virtual
 * time. */
static void test_patterns_same(void **state)
{
    (void)state;
    struct {
        cl_pattern_fn *fn;
        int n;
    } cases[] = {{relay, 4},    {pingpong, 2},        {ring, 4},           {exchange, 4},
                 {pipeline, 4}, {chunked, 2},         {allreduce_naive, 4}, {allreduce_ring, 4}};
    const uint64_t sizes[] = {8, 64 * KiB, 1 * MiB};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            run a, b;
            run_pattern(&a, cases[k].fn, cases[k].n, sizes[i], NULL, &on);
            run_pattern(&b, cases[k].fn, cases[k].n, sizes[i], NULL, &off);
            expect_ok(&a);
            expect_ok(&b);
            assert_true(a.res.iter_time[0] == b.res.iter_time[0]);
            assert_int_equal(a.res.messages, b.res.messages);
            assert_int_equal(a.stats.events, b.stats.events);
            assert_string_equal(a.out, b.out);
            run_release(&a);
            run_release(&b);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hash),
        cmocka_unit_test(test_first_written),
        cmocka_unit_test(test_send_modified),
        cmocka_unit_test(test_recv_written),
        cmocka_unit_test(test_send_pending_recv),
        cmocka_unit_test(test_overlaps),
        cmocka_unit_test(test_stack_buffer),
        cmocka_unit_test(test_numbering),
        cmocka_unit_test(test_early_use),
        cmocka_unit_test(test_poison_until_complete),
        cmocka_unit_test(test_chapter_examples),
        cmocka_unit_test(test_legal),
        cmocka_unit_test(test_patterns_same),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
