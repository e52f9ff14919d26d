/* test_waitfor.c - wait-for analysis and the deadlock report text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "commlab.h"
#include "core/waitfor.h"

#define ANY WF_ANY_SOURCE
#define KiB 1024u
#define MiB (1024u * 1024u)

static wf_pending snd(int dst, int tag, uint64_t bytes)
{
    return (wf_pending){.op = WF_SEND, .peer = dst, .tag = tag, .bytes = bytes};
}

static wf_pending rcv(int src, int tag, uint64_t bytes)
{
    return (wf_pending){.op = WF_RECV, .peer = src, .tag = tag, .bytes = bytes};
}

static wf_rank blocked(wf_op call, const wf_pending *p, size_t np)
{
    return (wf_rank){.state = WF_BLOCKED, .call = call, .pending = p, .npending = np};
}

static const wf_rank done = {.state = WF_DONE};
static const wf_rank running = {.state = WF_RUNNING};

/* Analyze and report into a malloc'd string (free it). */
static char *report(const wf_rank *r, size_t n, double time, wf_result *res)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(waitfor_analyze(r, n, res), 0);
    wf_report_opts o = {.eager_limit = 64 * KiB, .time = time};
    assert_int_equal(waitfor_report(f, r, n, &o, res), 0);
    assert_int_equal(fclose(f), 0);
    return buf;
}

/* waitfor_explain, the one report every backend prints, into a malloc'd
 * string (free it); *deadlock what it returned. */
static char *explain(const wf_rank *r, size_t n, bool only_deadlock, bool *deadlock)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    wf_report_opts o = {.eager_limit = 64 * KiB, .time = 0.001234};
    *deadlock = waitfor_explain(f, r, n, &o, only_deadlock);
    assert_int_equal(fclose(f), 0);
    return buf;
}

/* explain prints what analyze + report print; a run with no deadlock
 * prints its waits unless only a deadlock is wanted; refused ranks print
 * nothing and are no deadlock. */
static void test_explain(void **state)
{
    (void)state;
    wf_pending p0 = snd(1, 0, MiB), p1 = snd(0, 0, MiB);
    wf_rank cyc[] = {blocked(WF_SEND, &p0, 1), blocked(WF_SEND, &p1, 1)};
    wf_result res;
    char *want = report(cyc, 2, 0.001234, &res);
    waitfor_result_release(&res);
    bool dl = false;
    char *got = explain(cyc, 2, true, &dl);
    assert_true(dl);
    assert_string_equal(got, want);
    free(got);
    free(want);

    wf_pending q = rcv(1, 0, 8);
    wf_rank waits[] = {blocked(WF_RECV, &q, 1), running};
    got = explain(waits, 2, true, &dl);
    assert_false(dl);
    assert_string_equal(got, "");
    free(got);
    got = explain(waits, 2, false, &dl);
    assert_false(dl);
    assert_non_null(strstr(got, "rank 0: blocked in recv(src=1, tag=0, 8 B)"));
    free(got);

    wf_pending bad = rcv(7, 0, 8); /* a peer outside the run */
    wf_rank refused[] = {blocked(WF_RECV, &bad, 1), running};
    got = explain(refused, 2, false, &dl);
    assert_false(dl);
    assert_string_equal(got, "");
    free(got);
}

/* The course's example: both ranks send 1 MiB first, above the eager limit. */
static void test_head_to_head_sends(void **state)
{
    (void)state;
    wf_pending p0 = snd(1, 0, MiB), p1 = snd(0, 0, MiB);
    wf_rank r[] = {blocked(WF_SEND, &p0, 1), blocked(WF_SEND, &p1, 1)};
    wf_result res;
    char *txt = report(r, 2, 0.001234, &res);
    assert_true(res.deadlock);
    assert_int_equal(res.cycle_len, 2);
    assert_int_equal(res.cycle[0].rank, 0);
    assert_int_equal(res.cycle[0].peer, 1);
    assert_int_equal(res.cycle[1].rank, 1);
    assert_int_equal(res.nblocked, 2);
    assert_string_equal(txt,
        "deadlock: no rank can make progress at t = 1.234 ms\n"
        "rank 0: blocked in send(dst=1, tag=0, 1 MiB)\n"
        "rank 1: blocked in send(dst=0, tag=0, 1 MiB)\n"
        "cycle: rank 0 -> rank 1 -> rank 0\n"
        "why: every rank in the cycle sends before it receives, and a message above "
        "the eager limit (64 KiB) waits for a matching receive\n");
    free(txt);
    waitfor_result_release(&res);
}

static void test_receive_cycle(void **state)
{
    (void)state;
    wf_pending p[] = {rcv(2, 0, 8), rcv(0, 0, 8), rcv(1, 0, 8)};
    wf_rank r[] = {blocked(WF_RECV, &p[0], 1), blocked(WF_RECV, &p[1], 1),
                   blocked(WF_RECV, &p[2], 1)};
    wf_result res;
    char *txt = report(r, 3, -1, &res);
    assert_string_equal(txt,
        "deadlock: no rank can make progress\n"
        "rank 0: blocked in recv(src=2, tag=0, 8 B)\n"
        "rank 1: blocked in recv(src=0, tag=0, 8 B)\n"
        "rank 2: blocked in recv(src=1, tag=0, 8 B)\n"
        "cycle: rank 0 -> rank 2 -> rank 1 -> rank 0\n"
        "why: every rank in the cycle receives before it sends\n");
    assert_int_equal(res.nunsent, 3); /* all on the cycle: not printed */
    free(txt);
    waitfor_result_release(&res);
}

/* The cycle is printed from its lowest rank even when found from another. */
static void test_cycle_rotated(void **state)
{
    (void)state;
    wf_pending p[] = {rcv(3, 0, 8), rcv(2, 0, 8), rcv(1, 0, 8), rcv(2, 0, 8)};
    wf_rank r[] = {blocked(WF_RECV, &p[0], 1), blocked(WF_RECV, &p[1], 1),
                   blocked(WF_RECV, &p[2], 1), blocked(WF_RECV, &p[3], 1)};
    wf_result res;
    assert_int_equal(waitfor_analyze(r, 4, &res), 0);
    assert_int_equal(res.cycle_len, 2);
    assert_int_equal(res.cycle[0].rank, 1);
    assert_int_equal(res.cycle[1].rank, 2);
    waitfor_result_release(&res);
}

/* Ranks deadlocked while others still run (a run past its time limit):
 * the header says the blocked ranks, not every rank, can make no
 * progress. */
static void test_cycle_beside_running(void **state)
{
    (void)state;
    wf_pending p[] = {rcv(3, 0, 8), rcv(2, 0, 8)};
    wf_rank r[] = {running, running, blocked(WF_RECV, &p[0], 1), blocked(WF_RECV, &p[1], 1)};
    wf_result res;
    char *txt = report(r, 4, 2.5, &res);
    assert_true(res.deadlock);
    assert_non_null(strstr(txt, "deadlock: the blocked ranks can make no progress at t = "
                                "2.500 s\n"));
    assert_non_null(strstr(txt, "cycle: rank 2 -> rank 3 -> rank 2\n"));
    free(txt);
    waitfor_result_release(&res);
}

static void test_waits_on_done(void **state)
{
    (void)state;
    wf_pending p[] = {rcv(1, 0, 8), rcv(2, 0, 8), rcv(3, 0, 4 * KiB)};
    wf_rank r[] = {blocked(WF_RECV, &p[0], 1), blocked(WF_RECV, &p[1], 1),
                   blocked(WF_RECV, &p[2], 1), done};
    wf_result res;
    char *txt = report(r, 4, 0, &res);
    assert_true(res.deadlock);
    assert_int_equal(res.cycle_len, 0);
    assert_null(res.cycle);
    assert_int_equal(res.non_done, 1);
    assert_int_equal(res.ndone, 1);
    assert_string_equal(txt,
        "deadlock: no rank can make progress at t = 0 s\n"
        "rank 0: blocked in recv(src=1, tag=0, 8 B)\n"
        "rank 1: blocked in recv(src=2, tag=0, 8 B)\n"
        "rank 2: blocked in recv(src=3, tag=0, 4 KiB)\n"
        "rank 2 waits on rank 3, which already returned\n"
        "rank 0 waits for a message from rank 1 that rank 1 does not send\n"
        "rank 1 waits for a message from rank 2 that rank 2 does not send\n"
        "why: a rank that returned no longer sends or receives, so an operation that "
        "needs it never completes\n");
    free(txt);
    waitfor_result_release(&res);
}

/* Rank 0 receives tag 5, rank 1 sends tag 7: a cycle whose cause is a tag. */
static void test_recv_nobody_sends(void **state)
{
    (void)state;
    wf_pending p0 = rcv(1, 5, 8), p1 = snd(0, 7, MiB);
    wf_rank r[] = {blocked(WF_RECV, &p0, 1), blocked(WF_SEND, &p1, 1)};
    wf_result res;
    char *txt = report(r, 2, -1, &res);
    assert_int_equal(res.nunsent, 1);
    assert_int_equal(res.unsent[0].rank, 0);
    assert_int_equal(res.unsent[0].peer, 1);
    assert_int_equal(res.unsent[0].other_tag, 7);
    assert_string_equal(txt,
        "deadlock: no rank can make progress\n"
        "rank 0: blocked in recv(src=1, tag=5, 8 B)\n"
        "rank 1: blocked in send(dst=0, tag=7, 1 MiB)\n"
        "cycle: rank 0 -> rank 1 -> rank 0\n"
        "rank 0 waits for a message from rank 1 that rank 1 does not send "
        "(it receives tag 5; tag 7 is sent)\n"
        "why: rank 1 sends to rank 0 with tag 7, but rank 0 receives tag 5\n");
    free(txt);
    waitfor_result_release(&res);
}

/* Rank 0 waits on rank 1, which sits in a cycle with rank 2 and sends rank 0
 * nothing: the off-cycle receive is reported. */
static void test_recv_nobody_sends_off_cycle(void **state)
{
    (void)state;
    wf_pending p[] = {rcv(1, 0, 8), rcv(2, 0, 8), rcv(1, 0, 8)};
    wf_rank r[] = {blocked(WF_RECV, &p[0], 1), blocked(WF_RECV, &p[1], 1),
                   blocked(WF_RECV, &p[2], 1)};
    wf_result res;
    char *txt = report(r, 3, -1, &res);
    assert_non_null(strstr(txt, "cycle: rank 1 -> rank 2 -> rank 1\n"
                                "rank 0 waits for a message from rank 1 that rank 1 "
                                "does not send\n"));
    free(txt);
    waitfor_result_release(&res);
}

static void test_waitall_two_ops(void **state)
{
    (void)state;
    wf_pending p0[] = {snd(1, 3, 1536 * KiB), rcv(1, 4, 2 * MiB)};
    wf_pending p1 = snd(0, 9, 96 * KiB);
    wf_rank r[] = {blocked(WF_WAITALL, p0, 2), blocked(WF_SEND, &p1, 1)};
    wf_result res;
    char *txt = report(r, 2, 2.5, &res);
    assert_string_equal(txt,
        "deadlock: no rank can make progress at t = 2.500 s\n"
        "rank 0: blocked in waitall(send(dst=1, tag=3, 1.5 MiB), "
        "recv(src=1, tag=4, 2 MiB))\n"
        "rank 1: blocked in send(dst=0, tag=9, 96 KiB)\n"
        "cycle: rank 0 -> rank 1 -> rank 0\n"
        "rank 0 waits for a message from rank 1 that rank 1 does not send "
        "(it receives tag 4; tag 9 is sent)\n"
        "why: every rank in the cycle sends before it receives, and a message above "
        "the eager limit (64 KiB) waits for a matching receive\n");
    assert_int_equal(res.cycle[0].op, 0); /* rank 0's edge is its send */
    free(txt);
    waitfor_result_release(&res);
}

static void test_any_source(void **state)
{
    (void)state;
    wf_pending p0 = rcv(ANY, WF_ANY_TAG, 8), p2 = rcv(ANY, 1, 8);
    /* every other rank returned: nobody is left to send */
    wf_rank r[] = {blocked(WF_RECV, &p0, 1), done, done};
    wf_result res;
    char *txt = report(r, 3, -1, &res);
    assert_true(res.deadlock);
    assert_int_equal(res.non_done, 1);
    assert_int_equal(res.on_done[0].peer, ANY);
    assert_non_null(strstr(txt, "rank 0: blocked in recv(src=any, tag=any, 8 B)\n"
                                "rank 0 waits for a message from any rank, but every "
                                "other rank already returned\n"));
    free(txt);
    waitfor_result_release(&res);

    /* two wildcard receivers wait on each other; rank 1 returned */
    wf_rank q[] = {blocked(WF_RECV, &p0, 1), done, blocked(WF_RECV, &p2, 1)};
    txt = report(q, 3, -1, &res);
    assert_int_equal(res.cycle_len, 2);
    assert_int_equal(res.cycle[0].rank, 0);
    assert_int_equal(res.cycle[1].rank, 2);
    assert_non_null(strstr(txt, "cycle: rank 0 -> rank 2 -> rank 0\n"));
    free(txt);
    waitfor_result_release(&res);

    /* a running rank may still send: no cycle through it */
    wf_rank s[] = {blocked(WF_RECV, &p0, 1), running};
    txt = report(s, 2, -1, &res);
    assert_false(res.deadlock);
    assert_string_equal(txt,
        "no deadlock found\n"
        "rank 0: blocked in recv(src=any, tag=any, 8 B)\n"
        "rank 1: running\n"
        "why: no cycle and no rank waits on one that returned; the blocked ranks may "
        "wait on a running rank\n");
    free(txt);
    waitfor_result_release(&res);
}

static void test_barrier(void **state)
{
    (void)state;
    wf_pending b = {.op = WF_BARRIER}, p1 = rcv(0, 0, 8);
    wf_rank r[] = {blocked(WF_BARRIER, &b, 1), blocked(WF_RECV, &p1, 1),
                   blocked(WF_BARRIER, &b, 1)};
    wf_result res;
    char *txt = report(r, 3, -1, &res);
    assert_non_null(strstr(txt, "rank 0: blocked in barrier()\n"));
    assert_non_null(strstr(txt, "cycle: rank 0 -> rank 1 -> rank 0\n"
                                "why: rank 0 waits in a barrier for rank 1, which has "
                                "not entered it\n"));
    free(txt);
    waitfor_result_release(&res);
}

static void test_self_send(void **state)
{
    (void)state;
    wf_pending p = snd(0, 0, MiB);
    wf_rank r[] = {blocked(WF_SEND, &p, 1)};
    wf_result res;
    char *txt = report(r, 1, -1, &res);
    assert_non_null(strstr(txt, "cycle: rank 0 -> rank 0\n"));
    free(txt);
    waitfor_result_release(&res);
}

static void test_invalid(void **state)
{
    (void)state;
    wf_result res;
    wf_pending bad_peer = snd(5, 0, 8), any_send = snd(ANY, 0, 8), bad_tag = rcv(0, -2, 8);
    wf_rank r[] = {blocked(WF_SEND, &bad_peer, 1), running};
    assert_int_equal(waitfor_analyze(r, 2, &res), CL_EINVAL);
    assert_null(res.cycle);
    r[0] = blocked(WF_SEND, &any_send, 1);
    assert_int_equal(waitfor_analyze(r, 2, &res), CL_EINVAL);
    r[0] = blocked(WF_RECV, &bad_tag, 1);
    assert_int_equal(waitfor_analyze(r, 2, &res), CL_EINVAL);
    r[0] = blocked(WF_RECV, NULL, 1);
    assert_int_equal(waitfor_analyze(r, 2, &res), CL_EINVAL);
    assert_int_equal(waitfor_analyze(NULL, 0, &res), 0);
    assert_false(res.deadlock);
    waitfor_result_release(&res);
}

static void test_sizes(void **state)
{
    (void)state;
    static const struct {
        uint64_t bytes;
        const char *text;
    } c[] = {
        {0, "0 B"}, {1023, "1023 B"}, {1024, "1 KiB"}, {1536, "1.5 KiB"},
        {1025, "1.0 KiB"}, {1048575, "1.0 MiB"}, {3u << 30, "3 GiB"},
        {UINT64_MAX, "16.0 EiB"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        wf_pending p = snd(0, 0, c[i].bytes);
        wf_rank r[] = {blocked(WF_SEND, &p, 1)};
        wf_result res;
        char *txt = report(r, 1, -1, &res), want[96];
        snprintf(want, sizeof want, "send(dst=0, tag=0, %s)\n", c[i].text);
        if (!strstr(txt, want))
            fail_msg("%llu bytes: want \"%s\" in:\n%s", (unsigned long long)c[i].bytes,
                     c[i].text, txt);
        free(txt);
        waitfor_result_release(&res);
    }
}

/* A ring of n ranks where each sends 1 MiB to the next, or (any = true) each
 * receives from any source. */
static wf_rank *ring(size_t n, bool any, wf_pending **ops)
{
    wf_rank *r = calloc(n, sizeof *r);
    *ops = calloc(n, sizeof **ops);
    assert_true(r && *ops);
    for (size_t i = 0; i < n; i++) {
        (*ops)[i] = any ? rcv(ANY, 0, 8) : snd((int)((i + 1) % n), 0, MiB);
        r[i] = blocked(any ? WF_RECV : WF_SEND, &(*ops)[i], 1);
    }
    return r;
}

static void test_deterministic(void **state)
{
    (void)state;
    wf_pending *ops;
    wf_rank *r = ring(1000, true, &ops);
    wf_result res;
    char *a = report(r, 1000, 0.5, &res);
    waitfor_result_release(&res);
    char *b = report(r, 1000, 0.5, &res);
    waitfor_result_release(&res);
    assert_string_equal(a, b);
    free(a);
    free(b);
    free(r);
    free(ops);
}

static void test_ring_100k(void **state)
{
    (void)state;
    enum { N = 100000 };
    wf_pending *ops;
    wf_rank *r = ring(N, false, &ops);
    wf_result res;
    char *txt = report(r, N, 12, &res);
    assert_int_equal(res.cycle_len, N);
    for (size_t i = 0; i < N; i++)
        assert_int_equal(res.cycle[i].rank, (int)i);
    assert_non_null(strstr(txt, "rank 9: blocked in send(dst=10, tag=0, 1 MiB)\n"
                                "... 99,980 more blocked ranks ...\n"
                                "rank 99990: blocked in"));
    assert_non_null(strstr(txt, "cycle of 100,000 ranks: rank 0 -> rank 1 -> "));
    assert_non_null(strstr(txt, "rank 9 -> ... 99,980 more ... -> rank 99990 -> "));
    assert_non_null(strstr(txt, "rank 99999 -> rank 0\nwhy: every rank"));
    assert_true(strlen(txt) < 4096);
    free(txt);
    waitfor_result_release(&res);

    /* every rank receives from any source: edges are never built */
    free(r);
    free(ops);
    r = ring(N, true, &ops);
    txt = report(r, N, 12, &res);
    assert_int_equal(res.cycle_len, 2);
    assert_non_null(strstr(txt, "... 99,978 more like this ...\n"));
    free(txt);
    waitfor_result_release(&res);
    free(r);
    free(ops);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_head_to_head_sends),
        cmocka_unit_test(test_receive_cycle),
        cmocka_unit_test(test_cycle_rotated),
        cmocka_unit_test(test_cycle_beside_running),
        cmocka_unit_test(test_waits_on_done),
        cmocka_unit_test(test_recv_nobody_sends),
        cmocka_unit_test(test_recv_nobody_sends_off_cycle),
        cmocka_unit_test(test_waitall_two_ops),
        cmocka_unit_test(test_any_source),
        cmocka_unit_test(test_barrier),
        cmocka_unit_test(test_self_send),
        cmocka_unit_test(test_invalid),
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_ring_100k),
        cmocka_unit_test(test_explain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
