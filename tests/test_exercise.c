/* test_exercise.c - the course's reference solutions and pitfall examples,
 * run in the simulator under the unit-test harness (and so under ASan and
 * UBSan): each passes its own data check, and the figures the chapters
 * and exercises state come out.  The files define `pattern`; each is
 * included here under a name of its own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commlab.h"
#include "core/tier.h"
#include "sim/engine.h"
#include "sim/net.h"
#include "tests/simcase.h"
#include "tests/testutil.h"

#define pattern sol_hello
#include "chapters/01-ranks-and-worlds/solutions/hello.c"
#undef pattern
#define pattern sol_ring_relay
#include "chapters/02-point-to-point/solutions/ring_relay.c"
#undef pattern
#define pattern sol_swap
#include "chapters/02-point-to-point/solutions/swap.c"
#undef pattern
#define pattern sol_pingpong_nb
#include "chapters/02-point-to-point/solutions/pingpong_nb.c"
#undef pattern
#define pattern sol_chunks
#include "chapters/02-point-to-point/solutions/chunks.c"
#undef pattern
#define pattern sol_fix_order
#include "chapters/05-deadlock/solutions/fix_order.c"
#undef pattern
#define pattern sol_fix_nonblocking
#include "chapters/05-deadlock/solutions/fix_nonblocking.c"
#undef pattern
#define pattern ex_first
#include "chapters/01-ranks-and-worlds/examples/first.c"
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

cl_pattern_fn pipeline, exchange, relay, pingpong;

#define MiB (1024ULL * 1024ULL)

/* The iteration time of a run that must succeed. */
static double time_of(cl_pattern_fn *fn, int n, uint64_t bytes)
{
    run r;
    run_pattern(&r, fn, n, bytes, NULL, NULL);
    if (r.res.status)
        fail_msg("status %s: %s", cl_errname(r.res.status), r.res.diag.msg);
    double t = r.res.iter_time[0];
    run_release(&r);
    return t;
}

static double hop(uint64_t bytes) /* one nvlink message: alpha + n / B */
{
    return 1e-6 + (double)bytes / 300e9;
}

/* Exercise 2.1: the value comes back as 10 (K - 1) after K hops in sequence,
 * K (alpha + n / B) (chapter 02, exercise 2.1's explanation). */
static void test_ring_relay(void **state)
{
    (void)state;
    for (int k = 2; k <= 6; k++) {
        run r;
        run_pattern(&r, sol_ring_relay, k, 1 * MiB, NULL, NULL);
        assert_int_equal(r.res.status, 0);
        char want[64];
        snprintf(want, sizeof want, "rank 0: after the full circle: %d\n", 10 * (k - 1));
        assert_non_null(strstr(r.out, want));
        assert_near(r.res.iter_time[0], k * hop(1 * MiB), 1e-12);
        assert_int_equal(r.res.messages, (uint64_t)k);
        run_release(&r);
    }
}

/* Exercises 2.2 and 5.2, chapter 05: posted together, both directions move
 * at once, alpha + n / B; 5.1's order takes 2 (alpha + n / B). */
static void test_exchanges(void **state)
{
    (void)state;
    assert_near(time_of(sol_swap, 4, 1 * MiB), hop(1 * MiB), 1e-12);
    assert_near(time_of(sol_swap, 5, 1 * MiB), time_of(exchange, 5, 1 * MiB), 1e-15);
    assert_near(time_of(sol_fix_nonblocking, 2, 64 * MiB), hop(64 * MiB), 1e-12);
    assert_near(time_of(sol_fix_order, 2, 64 * MiB), 2 * hop(64 * MiB), 1e-12);
}

/* Exercise 2.3: modeled, isend + wait costs what send costs: the round
 * trip is twice pingpong's one-way time (chapter 02: cl_send is cl_isend
 * followed by cl_wait). */
static void test_pingpong_nb(void **state)
{
    (void)state;
    uint64_t sizes[] = {0, 8, 1 * MiB};
    for (size_t i = 0; i < 3; i++)
        assert_near(time_of(sol_pingpong_nb, 2, sizes[i]), time_of(pingpong, 2, sizes[i]),
                    1e-15);
}

/* Exercise 2.5: 8 pieces posted together cost alpha + n / B; 64 MiB on
 * nvlink is 224.7 us (chapter 02's chunked run). */
static void test_chunks(void **state)
{
    (void)state;
    double t = time_of(sol_chunks, 2, 64 * MiB);
    assert_near(t, hop(64 * MiB), 1e-12);
    assert_near(t * 1e6, 224.7, 0.05);
    assert_int_equal(time_of(sol_chunks, 2, 5) > 0, 1); /* pieces of 1 byte and empty ones */
}

/* Exercise 2.4 and chapter 02: with 4 stages and 1 ms of compute, stage 0
 * reports a 42.88% bubble at 4 microbatches ((S - 1) / (M + S - 1) = 3/7
 * plus the messages), and 28 is the fewest microbatches with at most 10%. */
static void test_pipeline_bubble_line(void **state)
{
    (void)state;
    static const struct {
        int m;
        const char *line;
    } want[] = {
        {4, "rank 0: 4 stages, 4 microbatches, gpipe: busy 8 ms of 14.01 ms, bubble 42.88%\n"},
        {27, "rank 0: 4 stages, 27 microbatches, gpipe: busy 54 ms of 60.01 ms, bubble 10.01%\n"},
        {28, "rank 0: 4 stages, 28 microbatches, gpipe: busy 56 ms of 62.01 ms, bubble 9.69%\n"},
    };
    for (size_t i = 0; i < 3; i++) {
        run r;
        cl_args a = {.microbatches = want[i].m, .compute = 1e-3};
        run_pattern(&r, pipeline, 4, 1024, &a, NULL);
        assert_int_equal(r.res.status, 0);
        if (!strstr(r.out, want[i].line))
            fail_msg("printed '%s', want the line '%s'", r.out, want[i].line);
        run_release(&r);
    }
}

/* Chapters 01 and 02: the first program and the pitfalls, as the chapters
 * show them. */
static void test_examples(void **state)
{
    (void)state;
    run r;
    run_pattern(&r, ex_first, 3, 8, NULL, NULL);
    assert_int_equal(r.res.status, 0);
    assert_non_null(strstr(r.out, "rank 1: received 42 from rank 0\n"));
    assert_non_null(strstr(r.out, "rank 2: I am rank 2 of 3\n"));
    run_release(&r);

    run_pattern(&r, ex_mismatch, 2, 8, NULL, NULL);
    assert_int_equal(r.res.status, CL_EDEADLOCK);
    assert_non_null(strstr(r.report, "rank 1: blocked in recv(src=0, tag=0, 8 B)"));
    run_release(&r);

    run_pattern(&r, ex_reuse, 2, 1 * MiB, NULL, NULL); /* rendezvous: the new bytes leave */
    assert_int_equal(r.res.status, CL_ECHECK);
    assert_non_null(strstr(r.res.diag.msg, "the first message"));
    run_release(&r);
    run_pattern(&r, ex_reuse, 2, 1024, NULL, NULL); /* eager: copied at post, the bug hides */
    assert_int_equal(r.res.status, 0);
    run_release(&r);

    run_pattern(&r, ex_early_read, 2, 8, NULL, NULL);
    assert_int_equal(r.res.status, 0);
    assert_string_equal(r.out, "rank 1: read 0 before the wait, 42 after it\n");
    run_release(&r);

    run_pattern(&r, sol_hello, 3, 8, NULL, NULL);
    assert_non_null(strstr(r.out, "rank 2: hello from rank 2 of 3\n"));
    run_release(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring_relay),   cmocka_unit_test(test_exchanges),
        cmocka_unit_test(test_pingpong_nb),  cmocka_unit_test(test_chunks),
        cmocka_unit_test(test_pipeline_bubble_line), cmocka_unit_test(test_examples),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
