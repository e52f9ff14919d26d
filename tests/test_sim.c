/* test_sim.c - the sim backend end to end: the course's figures, the
 * protocols, deadlock reports, determinism and every pattern's data check. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commlab.h"
#include "core/record.h"
#include "core/tier.h"
#include "core/trace.h"
#include "sim/engine.h"
#include "sim/net.h"
#include "tests/simcase.h"
#include "tests/testutil.h"

cl_pattern_fn relay, pingpong, ring, exchange, deadlock, pipeline, chunked, allreduce_naive,
    allreduce_ring;

#define MiB (1024ULL * 1024ULL)

/* One iteration's time, seconds. */
static double time_of(cl_pattern_fn *fn, int n, uint64_t bytes, const char *tier)
{
    run r;
    setup s = {.tier = tier, .no_payload = true};
    run_pattern(&r, fn, n, bytes, NULL, &s);
    assert_int_equal(r.res.status, 0);
    double t = r.res.iter_time[0];
    run_release(&r);
    return t;
}

/* The course's tier table as ping-pong one-way times for 256 MiB: 0.90 ms
 * NVLink, 10.74 ms PCIe, 5.37 ms InfiniBand, 86.62 ms Ethernet (source: the
 * course's alpha-beta chapter; alpha 1/2/3/30 us, 300/25/50/3.1 GB/s).
 * Ping-pong's iteration is a round trip; one way is half of it. */
static void test_pingpong_tiers(void **state)
{
    (void)state;
    static const struct {
        const char *tier, *ms;
        double exact;
    } want[] = {
        {"nvlink", "0.90", 1e-6 + 268435456 / 300e9},
        {"pcie", "10.74", 2e-6 + 268435456 / 25e9},
        {"infiniband", "5.37", 3e-6 + 268435456 / 50e9},
        {"ethernet", "86.62", 30e-6 + 268435456 / 3.1e9},
    };
    for (size_t i = 0; i < 4; i++) {
        double one_way = time_of(pingpong, 2, 256 * MiB, want[i].tier) / 2;
        char ms[32];
        snprintf(ms, sizeof ms, "%.2f", one_way * 1e3);
        assert_string_equal(ms, want[i].ms);
        assert_near(one_way, want[i].exact, 1e-12);
    }
}

/* Relay over K = 4 ranks: the last rank prints 30 (0 + 3 x 10) after
 * K - 1 = 3 sequential hops of alpha + n / B. */
static void test_relay(void **state)
{
    (void)state;
    run r;
    run_pattern(&r, relay, 4, 1 * MiB, NULL, NULL);
    assert_int_equal(r.res.status, 0);
    assert_string_equal(r.out, "rank 3: the value after 3 hops is 30\n");
    assert_near(r.res.iter_time[0], 3 * (1e-6 + 1048576 / 300e9), 1e-15);
    assert_int_equal(r.res.messages, 3);
    run_release(&r);
}

/* All-reduce of 256 MiB over K = 16 ranks on InfiniBand (course chapter on
 * collectives; the tier reduces at 680 GB/s, an A100's 2,039 GB/s of
 * memory over 3): naive 2(K-1)(alpha + n/B) + (K-1) n gamma = 161.151 +
 * 5.921 = 167.073 ms, ring 2(K-1)(alpha + n/(K B)) + (K-1) n gamma / K =
 * 10.156 + 0.370 = 10.526 ms, to the nanosecond; the naive one sends
 * 2(K-1) messages in all, the ring 2(K-1) per rank. */
static void test_allreduce_k16(void **state)
{
    (void)state;
    const double a = 3e-6, b = 50e9, n = 268435456.0, k = 16, g = 1 / 680e9;
    run r;
    setup s = {.tier = "infiniband", .no_payload = true};
    run_pattern(&r, allreduce_naive, 16, 256 * MiB, NULL, &s);
    assert_int_equal(r.res.status, 0);
    assert_near(r.res.iter_time[0], 2 * (k - 1) * (a + n / b) + (k - 1) * n * g, 1e-9);
    assert_near(r.res.iter_time[0], 167.073e-3, 1e-6);
    assert_int_equal(r.res.messages, 30);
    run_release(&r);
    run_pattern(&r, allreduce_ring, 16, 256 * MiB, NULL, &s);
    assert_int_equal(r.res.status, 0);
    assert_near(r.res.iter_time[0], 2 * (k - 1) * (a + n / (k * b)) + (k - 1) * n * g / k,
                1e-9);
    assert_near(r.res.iter_time[0], 10.526e-3, 1e-6);
    assert_int_equal(r.res.messages, 2 * 15 * 16);
    run_release(&r);
}

static void test_deadlock_by_size(void **state)
{
    (void)state;
    run r;
    run_pattern(&r, deadlock, 2, 1 * MiB, NULL, NULL);
    assert_int_equal(r.res.status, CL_EDEADLOCK);
    assert_non_null(strstr(r.report, "rank 0: blocked in send(dst=1, tag=0, 1 MiB)\n"));
    assert_non_null(strstr(r.report, "rank 1: blocked in send(dst=0, tag=0, 1 MiB)\n"));
    assert_non_null(strstr(r.report, "cycle: rank 0 -> rank 1 -> rank 0\n"));
    assert_non_null(strstr(r.report, "above the eager limit (64 KiB)"));
    run_release(&r);

    run_pattern(&r, deadlock, 2, 1024, NULL, NULL);
    assert_int_equal(r.res.status, 0);
    assert_int_equal(r.report_len, 0);
    run_release(&r);

    /* The limit decides: 1 MiB is eager under a 2 MiB limit. */
    setup s = {.eager_limit = 2 * MiB};
    run_pattern(&r, deadlock, 2, 1 * MiB, NULL, &s);
    assert_int_equal(r.res.status, 0);
    run_release(&r);
}

static void test_deadlock_fixes(void **state)
{
    (void)state;
    static const char *fixes[] = {"order", "nonblocking"};
    for (size_t i = 0; i < 2; i++)
        for (uint64_t bytes = 1; bytes <= 16 * MiB; bytes *= 64) {
            cl_args a = {.fix = fixes[i]};
            run r;
            run_pattern(&r, deadlock, 2, bytes, &a, NULL);
            if (r.res.status)
                fail_msg("--fix %s at %llu bytes: %s", fixes[i], (unsigned long long)bytes,
                         r.res.diag.msg);
            run_release(&r);
        }
}

/* Rank 0 waits for a message rank 1 never sends; rank 1 returns. */
static int orphan_recv(cl_comm *c, const cl_args *a)
{
    (void)a;
    if (cl_rank(c) == 0)
        return cl_recv(c, NULL, 0, 1, 5, NULL);
    return 0;
}

static void test_recv_nobody_sends(void **state)
{
    (void)state;
    run r;
    setup s = {.no_payload = true};
    run_pattern(&r, orphan_recv, 2, 0, NULL, &s);
    assert_int_equal(r.res.status, CL_EDEADLOCK);
    assert_non_null(strstr(r.report, "rank 0: blocked in recv(src=1, tag=5, 0 B)\n"));
    assert_non_null(strstr(r.report, "rank 0 waits on rank 1, which already returned"));
    run_release(&r);
}

/* A receive buffer smaller than the message names both ranks and sizes. */
static int too_small(cl_comm *c, const cl_args *a)
{
    char *buf = cl_alloc(c, a->bytes);
    if (cl_rank(c) == 0)
        return cl_send(c, buf, a->bytes, 1, 0);
    return cl_recv(c, buf, a->bytes / 2, 0, 0, NULL);
}

static void test_truncation(void **state)
{
    (void)state;
    run r;
    run_pattern(&r, too_small, 2, 2048, NULL, NULL);
    assert_int_equal(r.res.status, CL_ETRUNC);
    assert_string_equal(r.res.diag.msg,
                        "rank 1's receive buffer (1 KiB, 1024 bytes) is smaller than the "
                        "message rank 0 sent it (2 KiB, 2048 bytes, tag 0)");
    run_release(&r);
}

/* GPipe with S = 4 stages, M = 8 microbatches, 1 ms per stage and pass:
 * each phase lasts (M + S - 1) compute slots plus the S - 1 hops of its
 * first microbatch (empty messages, alpha = 1 us on NVLink), so
 * 2 (11 ms + 3 us) in all; with the hops taken out the idle share is the
 * bubble (S - 1) / (M + S - 1) = 3/11 (GPipe, Huang et al. 2019). */
static void test_pipeline_bubble(void **state)
{
    (void)state;
    cl_args a = {.microbatches = 8, .compute = 1e-3};
    run r;
    setup s = {.eager_limit = 1 << 20};
    run_pattern(&r, pipeline, 4, 0, &a, &s);
    assert_int_equal(r.res.status, 0);
    double hops = 2 * 3 * 1e-6;
    assert_near(r.res.iter_time[0], 22e-3 + hops, 1e-12);
    double busy = 2 * 8 * 1e-3;
    assert_near(1 - busy / (r.res.iter_time[0] - hops), 3.0 / 11.0, 1e-9);
    run_release(&r);
}

/* Every pattern, with real bytes and its own data check, on 2, 4 and 7
 * ranks, at sizes below and above the eager limit. */
static void test_patterns_check_data(void **state)
{
    (void)state;
    static struct {
        const char *name;
        cl_pattern_fn *fn;
    } all[] = {
        {"relay", relay},       {"pingpong", pingpong}, {"ring", ring},
        {"exchange", exchange}, {"deadlock(nonblocking)", deadlock},
        {"pipeline", pipeline}, {"chunked", chunked},   {"allreduce-naive", allreduce_naive},
        {"allreduce-ring", allreduce_ring},
    };
    static const int ranks[] = {2, 4, 7};
    static const uint64_t sizes[] = {0, 8, 1000, 200000};
    for (size_t p = 0; p < sizeof all / sizeof all[0]; p++)
        for (size_t k = 0; k < 3; k++)
            for (size_t b = 0; b < 4; b++) {
                cl_args a = {.microbatches = 3, .fix = "nonblocking"};
                run r;
                setup s = {.iters = 2};
                run_pattern(&r, all[p].fn, ranks[k], sizes[b], &a, &s);
                if (r.res.status)
                    fail_msg("%s on %d ranks, %llu bytes: %s", all[p].name, ranks[k],
                             (unsigned long long)sizes[b], r.res.diag.msg);
                run_release(&r);
            }
}

/* A pattern that corrupts data is caught by the check. */
static int liar(cl_comm *c, const cl_args *a)
{
    unsigned char *buf = cl_alloc(c, a->bytes);
    if (cl_rank(c) == 0) {
        cl_fill(c, buf, a->bytes, 1);
        buf[3] ^= 0xff;
        return cl_send(c, buf, a->bytes, 1, 0);
    }
    CL_TRY(cl_recv(c, buf, a->bytes, 0, 0, NULL));
    return cl_verify(c, buf, a->bytes, 1, "received");
}

static void test_check_fails(void **state)
{
    (void)state;
    run r;
    run_pattern(&r, liar, 2, 64, NULL, NULL);
    assert_int_equal(r.res.status, CL_ECHECK);
    assert_non_null(strstr(r.res.diag.msg, "rank 1: data check failed: received: byte 3 of 64"));
    run_release(&r);
}

/* Same input, same bytes: outputs, reports and traces. */
/* Above 2,048 ranks the engine fetches the stack and state of the rank two
 * events ahead, above 32,768 also the requests it waits for (prefetch_soon
 * in sim/engine.c): hints only, so 40,000 ranks passing 8 B round the ring
 * three times give the ring's own figures, alpha + n / B an iteration and
 * one message per rank, with every rank's data checked. */
static void test_many_ranks(void **state)
{
    (void)state;
    run r;
    setup s = {.tier = "infiniband", .iters = 3};
    run_pattern(&r, ring, 40000, 8, NULL, &s);
    assert_int_equal(r.res.status, 0);
    for (int i = 0; i < 3; i++)
        assert_near(r.res.iter_time[i], 3e-6 + 8 / 50e9, 1e-15);
    assert_int_equal(r.res.messages, 3 * 40000);
    run_release(&r);
}

static void test_deterministic(void **state)
{
    (void)state;
    char *trace[2];
    size_t len[2];
    for (int i = 0; i < 2; i++) {
        rec_log log;
        rec_log_init(&log, 0);
        setup s = {.records = &log, .iters = 3};
        run r;
        cl_args a = {.chunk = 3000};
        run_pattern(&r, chunked, 3, 100000, &a, &s);
        assert_int_equal(r.res.status, 0);
        FILE *f = open_memstream(&trace[i], &len[i]);
        trace_meta m = {.pattern = "chunked", .backend = "sim", .ranks = 3};
        assert_int_equal(trace_write(f, log.v, log.n, &m), 0);
        fclose(f);
        rec_log_release(&log);
        run_release(&r);
    }
    assert_int_equal(len[0], len[1]);
    assert_memory_equal(trace[0], trace[1], len[0]);
    assert_non_null(strstr(trace[0], "\"ph\":\"s\""));
    free(trace[0]);
    free(trace[1]);
}

/* Groups: a sub-communicator of the odd ranks runs its own ring and its
 * own barrier, apart from the world's traffic. */
static int odd_ring(cl_comm *c, const cl_args *a)
{
    int odd[3] = {1, 3, 5};
    cl_comm *g;
    CL_TRY(cl_group(c, odd, 3, &g));
    if (!g)
        return cl_rank(c) % 2 == 0 ? 0 : cl_fail(c, "odd rank left out of the group");
    int err = ring(g, a);
    if (!err)
        err = cl_barrier(g);
    if (!err && cl_rank(g) != (cl_rank(c) - 1) / 2)
        err = cl_fail(c, "group rank %d for world rank %d", cl_rank(g), cl_rank(c));
    cl_group_free(g);
    return err;
}

static void test_groups(void **state)
{
    (void)state;
    run r;
    run_pattern(&r, odd_ring, 6, 4096, NULL, NULL);
    if (r.res.status)
        fail_msg("%s", r.res.diag.msg);
    run_release(&r);
}

/* The handshake adds the request / clear-to-send round trip (2 alpha) to a
 * rendezvous message, and nothing to an eager one. */
static void test_handshake(void **state)
{
    (void)state;
    run r;
    setup s = {.handshake = true, .no_payload = true};
    run_pattern(&r, pingpong, 2, 1 * MiB, NULL, &s);
    assert_near(r.res.iter_time[0] / 2, 3e-6 + 1048576 / 300e9, 1e-15);
    run_release(&r);
    run_pattern(&r, pingpong, 2, 1024, NULL, &s);
    assert_near(r.res.iter_time[0] / 2, 1e-6 + 1024 / 300e9, 1e-15);
    run_release(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pingpong_tiers),    cmocka_unit_test(test_relay),
        cmocka_unit_test(test_allreduce_k16),     cmocka_unit_test(test_deadlock_by_size),
        cmocka_unit_test(test_deadlock_fixes),    cmocka_unit_test(test_recv_nobody_sends),
        cmocka_unit_test(test_truncation),        cmocka_unit_test(test_pipeline_bubble),
        cmocka_unit_test(test_patterns_check_data), cmocka_unit_test(test_check_fails),
        cmocka_unit_test(test_many_ranks),
        cmocka_unit_test(test_deterministic),     cmocka_unit_test(test_groups),
        cmocka_unit_test(test_handshake),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
