/* test_share.c - shared links (--sharing maxmin): messages that cross one
 * link direction at the same time share its bandwidth, max-min fair.  The
 * figures are the shared-links issue's, on a switch of five ranks at
 * latency 3 us and 50 GB/s a link (ASTRA-sim's dimension form):
 *
 *   topology: [Switch]  npus_count: [5]  bandwidth: [50GB/s]  latency: [3us]
 *
 * A message from rank s to rank d crosses s's link up to the switch and
 * d's link down from it: route alpha a = 2 x 3 us, bottleneck B = 50 GB/s.
 * n = 256 MiB, above the eager limit: every message is a rendezvous, so
 * its bytes move once both ends are posted (all at t = 0 below).  A flow
 * pays a once, after its bytes: a message alone costs a + n/B exactly. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "commlab.h"
#include "core/record.h"
#include "sim/engine.h"
#include "sim/net.h"
#include "tests/simcase.h"
#include "tests/testutil.h"

#define N (256.0 * 1024 * 1024) /* bytes */
#define B 50e9                  /* bytes per second */
#define A 6e-6                  /* seconds: two links of 3 us */

static sim_net *load(const char *yaml)
{
    sim_net *net;
    cl_diag d = {{0}};
    if (sim_net_load_string(&net, "t.yaml", yaml, NULL, &d))
        fail_msg("%s", d.msg);
    return net;
}

static sim_net *switch5(void)
{
    return load("topology: [Switch]\nnpus_count: [5]\nbandwidth: [50GB/s]\nlatency: [3us]\n");
}

/* Ranks 1..K-1 each send a->bytes x (rank if a->chunk, else 1) to rank 0,
 * which posts every receive first and waits for all: an incast. */
static int incast(cl_comm *c, const cl_args *a)
{
    int k = cl_size(c), me = cl_rank(c);
    size_t mult = a->chunk ? (size_t)me : 1;
    if (me > 0)
        return cl_send(c, NULL, a->bytes * mult, 0, 0);
    cl_request *req[8];
    for (int i = 1; i < k; i++)
        CL_TRY(cl_irecv(c, NULL, a->bytes * (a->chunk ? (size_t)i : 1), i, 0, &req[i - 1]));
    return cl_waitall(c, k - 1, req, NULL);
}

/* When rank left the barrier: the start of its iteration record.  The
 * ranks of a switch all leave it at once. */
static double iter_start(const rec_log *log, int rank)
{
    for (size_t i = 0; i < log->n; i++)
        if (log->v[i].op == REC_ITER && log->v[i].rank == rank)
            return log->v[i].started;
    fail_msg("no iteration record of rank %d", rank);
    return 0;
}

/* When the receive of the message from src completed, from the start of
 * its receiver's iteration (the records). */
static double recv_end(const rec_log *log, int src)
{
    for (size_t i = 0; i < log->n; i++)
        if (log->v[i].op == REC_RECV && log->v[i].peer == src)
            return log->v[i].finished - iter_start(log, log->v[i].rank);
    fail_msg("no receive from rank %d", src);
    return 0;
}

static void run_incast(int k, bool sizes, bool sharing, rec_log *log, run *r)
{
    sim_net *net = switch5();
    rec_log_init(log, 1u << 16);
    setup s = {.net = net, .no_payload = true, .records = log, .no_sharing = !sharing};
    cl_args a = {.chunk = sizes};
    run_pattern(r, incast, k, (uint64_t)N, &a, &s);
    assert_int_equal(r->res.status, 0);
    sim_net_destroy(net);
}

/* One flow alone: a + n/B, as without sharing. */
static void test_one_flow(void **state)
{
    (void)state;
    rec_log log;
    run r;
    run_incast(2, false, true, &log, &r);
    assert_near(recv_end(&log, 1), A + N / B, 1e-15);
    run_release(&r);
    rec_log_release(&log);
}

/* Four equal flows into rank 0 share its down link: each gets B/4, so
 * each ends at a + 4n/B (21.48 ms + 6 us). */
static void test_four_into_one(void **state)
{
    (void)state;
    rec_log log;
    run r;
    run_incast(5, false, true, &log, &r);
    for (int src = 1; src <= 4; src++)
        assert_near(recv_end(&log, src), A + 4 * N / B, 1e-12);
    assert_near(r.res.iter_time[0], A + 4 * N / B, 1e-12);
    run_release(&r);
    rec_log_release(&log);
}

/* Sizes n, 2n, 3n, 4n into rank 0: all at B/4 until the n flow ends at
 * 4n/B; the other three, n, 2n and 3n left, at B/3 until the next ends
 * 3n/B later (7n/B); two at B/2 with n and 2n left: 2n/B later (9n/B);
 * the last alone, n left: n/B later (10n/B).  Plus a each. */
static void test_sizes_into_one(void **state)
{
    (void)state;
    rec_log log;
    run r;
    run_incast(5, true, true, &log, &r);
    const double want[] = {4, 7, 9, 10};
    for (int src = 1; src <= 4; src++)
        assert_near(recv_end(&log, src), A + want[src - 1] * N / B, 1e-12);
    run_release(&r);
    rec_log_release(&log);
}

/* --sharing none prices every message alone, as before shared links:
 * the four of the incast each end at a + n/B. */
static void test_none_alone(void **state)
{
    (void)state;
    rec_log log;
    run r;
    run_incast(5, false, false, &log, &r);
    for (int src = 1; src <= 4; src++)
        assert_near(recv_end(&log, src), A + N / B, 1e-15);
    run_release(&r);
    rec_log_release(&log);
}

/* Rank 0 sends n to each of ranks 1..4 at once. */
static int fanout(cl_comm *c, const cl_args *a)
{
    if (cl_rank(c) > 0)
        return cl_recv(c, NULL, a->bytes, 0, 0, NULL);
    cl_request *req[4];
    for (int i = 1; i <= 4; i++)
        CL_TRY(cl_isend(c, NULL, a->bytes, i, 0, &req[i - 1]));
    return cl_waitall(c, 4, req, NULL);
}

/* One sender's link (rank 0 to the switch, B) is shared by four flows to
 * four receivers, one of whose links runs at B/8.  Max-min: that flow is
 * held to B/8 by its own link; the other three share the rest of the
 * sender's link, 7B/8, at 7B/24 each.  They end at n / (7B/24) = 24/7 n/B;
 * the slow one has then moved 24/7 n/B x B/8 = 3/7 n and keeps B/8, since
 * its own link still holds it there: it ends at 8n/B.  Latency 2 us (two
 * links of 1 us) after the bytes. */
static void test_slow_receiver(void **state)
{
    (void)state;
    sim_net *net = load("devices: 5\n"
                        "switches: [s]\n"
                        "links:\n"
                        "  - {a: 0, b: s, alpha: 1us, bandwidth: 50GB/s}\n"
                        "  - {a: 1, b: s, alpha: 1us, bandwidth: 6.25GB/s}\n"
                        "  - {a: 2, b: s, alpha: 1us, bandwidth: 50GB/s}\n"
                        "  - {a: 3, b: s, alpha: 1us, bandwidth: 50GB/s}\n"
                        "  - {a: 4, b: s, alpha: 1us, bandwidth: 50GB/s}\n");
    rec_log log;
    rec_log_init(&log, 1u << 16);
    setup s = {.net = net, .no_payload = true, .records = &log};
    run r;
    run_pattern(&r, fanout, 5, (uint64_t)N, NULL, &s);
    assert_int_equal(r.res.status, 0);
    double ends[5] = {0};
    for (size_t i = 0; i < log.n; i++)
        if (log.v[i].op == REC_RECV)
            ends[log.v[i].rank] = log.v[i].finished - iter_start(&log, log.v[i].rank);
    assert_near(ends[1], 2e-6 + 8 * N / B, 1e-12);
    for (int d = 2; d <= 4; d++)
        assert_near(ends[d], 2e-6 + 24.0 / 7.0 * N / B, 1e-12);
    run_release(&r);
    rec_log_release(&log);
    sim_net_destroy(net);
}

/* All-to-all: every rank posts a receive from every other, then sends n
 * to every other, then waits for all. */
static int alltoall(cl_comm *c, const cl_args *a)
{
    int k = cl_size(c), me = cl_rank(c), m = 0;
    cl_request *req[2 * 16];
    for (int i = 0; i < k; i++)
        if (i != me)
            CL_TRY(cl_irecv(c, NULL, a->bytes, i, 0, &req[m++]));
    for (int i = 0; i < k; i++)
        if (i != me)
            CL_TRY(cl_isend(c, NULL, a->bytes, i, 0, &req[m++]));
    return cl_waitall(c, m, req, NULL);
}

/* All-to-all of 8 ranks on one switch: each rank's up link carries its 7
 * flows out, each down link 7 flows in: every flow gets B/7 and ends at
 * 7n/B, so the all-to-all takes a + 7n/B (37.58 ms + 6 us): (K - 1) n/B,
 * where pricing each message alone would say a + n/B. */
static void test_alltoall(void **state)
{
    (void)state;
    sim_net *net = load("topology: [Switch]\nnpus_count: [8]\nbandwidth: [50GB/s]\n"
                        "latency: [3us]\n");
    setup s = {.net = net, .no_payload = true};
    run r;
    run_pattern(&r, alltoall, 8, (uint64_t)N, NULL, &s);
    assert_int_equal(r.res.status, 0);
    assert_near(r.res.iter_time[0], A + 7 * N / B, 1e-12);
    run_release(&r);
    setup none = {.net = net, .no_payload = true, .no_sharing = true};
    run_pattern(&r, alltoall, 8, (uint64_t)N, NULL, &none);
    assert_near(r.res.iter_time[0], A + N / B, 1e-15);
    run_release(&r);
    sim_net_destroy(net);
}

/* The naive all-reduce with non-blocking receives at rank 0: every other
 * rank sends its n to rank 0 (which posts all receives at once), rank 0
 * reduces and sends the result back to each at once.  The K - 1 flows in
 * share rank 0's down link and the K - 1 out its up link: 2 (a + (K-1)
 * n/B), 2 (6 us + 4 x 5.37 ms) = 42.96 ms for K = 5. */
static int naive_nonblocking(cl_comm *c, const cl_args *a)
{
    int k = cl_size(c), me = cl_rank(c);
    if (me > 0) {
        CL_TRY(cl_send(c, NULL, a->bytes, 0, 0));
        return cl_recv(c, NULL, a->bytes, 0, 1, NULL);
    }
    cl_request *req[16];
    for (int i = 1; i < k; i++)
        CL_TRY(cl_irecv(c, NULL, a->bytes, i, 0, &req[i - 1]));
    CL_TRY(cl_waitall(c, k - 1, req, NULL));
    for (int i = 1; i < k; i++)
        CL_TRY(cl_isend(c, NULL, a->bytes, i, 1, &req[i - 1]));
    return cl_waitall(c, k - 1, req, NULL);
}

static void test_naive_allreduce(void **state)
{
    (void)state;
    sim_net *net = switch5();
    setup s = {.net = net, .no_payload = true};
    run r;
    run_pattern(&r, naive_nonblocking, 5, (uint64_t)N, NULL, &s);
    assert_int_equal(r.res.status, 0);
    assert_near(r.res.iter_time[0], 2 * (A + 4 * N / B), 1e-12);
    run_release(&r);
    sim_net_destroy(net);
}

/* Rank 0 isends, rank 1 irecvs, and both poll with cl_test until done:
 * the run ends (it used to spin at one instant for ever), at a + n/B. */
static int both_poll(cl_comm *c, const cl_args *a)
{
    cl_request *req;
    if (cl_rank(c) == 0)
        CL_TRY(cl_isend(c, NULL, a->bytes, 1, 0, &req));
    else
        CL_TRY(cl_irecv(c, NULL, a->bytes, 0, 0, &req));
    bool done = false;
    while (!done)
        CL_TRY(cl_test(c, &req, &done, NULL));
    return 0;
}

static void test_both_poll(void **state)
{
    (void)state;
    for (int sharing = 0; sharing < 2; sharing++) {
        sim_net *net = switch5();
        setup s = {.net = net, .no_payload = true, .no_sharing = !sharing};
        run r;
        run_pattern(&r, both_poll, 2, (uint64_t)N, NULL, &s);
        assert_int_equal(r.res.status, 0);
        assert_near(r.res.iter_time[0], A + N / B, 1e-15);
        run_release(&r);
        sim_net_destroy(net);
    }
}

/* Rank 1 posts a receive, looks at it once (not there: rank 0 sends
 * after 1 ms of compute), then computes 10 us and looks again: a failed
 * test costs no virtual time, so the compute ends at 10 us, not after the
 * send (a rank that progresses a collective between slices of its work
 * must lose nothing to looking).  The message then lands at 1 ms + a +
 * n/B. */
static int test_then_compute(cl_comm *c, const cl_args *a)
{
    if (cl_rank(c) == 0) {
        CL_TRY(cl_compute(c, 1e-3));
        return cl_send(c, NULL, a->bytes, 1, 0);
    }
    cl_request *req;
    bool done = true;
    CL_TRY(cl_irecv(c, NULL, a->bytes, 0, 0, &req));
    double t0 = cl_now(c);
    CL_TRY(cl_test(c, &req, &done, NULL));
    if (done)
        return cl_fail(c, "the message was there before it was sent");
    CL_TRY(cl_compute(c, 10e-6));
    if (cl_now(c) != t0 + 10e-6)
        return cl_fail(c, "10 us of compute after a failed test at %.9g s ended at %.9g s", t0,
                       cl_now(c));
    CL_TRY(cl_test(c, &req, &done, NULL));
    if (done)
        return cl_fail(c, "the message was there before it was sent");
    return cl_wait(c, &req, NULL);
}

static void test_failed_test_costs_nothing(void **state)
{
    (void)state;
    for (int sharing = 0; sharing < 2; sharing++) {
        sim_net *net = switch5();
        setup s = {.net = net, .no_payload = true, .no_sharing = !sharing};
        run r;
        run_pattern(&r, test_then_compute, 2, (uint64_t)N, NULL, &s);
        if (r.res.status)
            fail_msg("%s", r.res.diag.msg);
        assert_near(r.res.iter_time[0], 1e-3 + A + N / B, 1e-15);
        run_release(&r);
        sim_net_destroy(net);
    }
}

/* Ranks 0 and 1 each isend to the other and irecv from it, then poll
 * both requests in turn until both are done (issue 16 item 7: polling
 * two requests used to spin at one instant for ever).  Each message is
 * alone on its ports both ways, so both ranks end at a + n/B, eager
 * (1 KiB) or rendezvous (n), shared or not. */
static int poll_two(cl_comm *c, const cl_args *a)
{
    int peer = 1 - cl_rank(c);
    cl_request *r[2];
    CL_TRY(cl_irecv(c, NULL, a->bytes, peer, 0, &r[0]));
    CL_TRY(cl_isend(c, NULL, a->bytes, peer, 0, &r[1]));
    bool d0 = false, d1 = false;
    while (!(d0 && d1)) {
        CL_TRY(cl_test(c, &r[0], &d0, NULL));
        CL_TRY(cl_test(c, &r[1], &d1, NULL));
    }
    return 0;
}

static void test_poll_two(void **state)
{
    (void)state;
    static const double sizes[] = {1024, N};
    for (int sharing = 0; sharing < 2; sharing++)
        for (int i = 0; i < 2; i++) {
            sim_net *net = switch5();
            setup s = {.net = net, .no_payload = true, .no_sharing = !sharing, .timeout = 20};
            run r;
            run_pattern(&r, poll_two, 2, (uint64_t)sizes[i], NULL, &s);
            assert_int_equal(r.res.status, 0);
            assert_near(r.res.iter_time[0], A + sizes[i] / B, 1e-15);
            run_release(&r);
            sim_net_destroy(net);
        }
}

/* Rank 0 polls a receive (and a send to rank 2 in turn) that rank 1
 * sends only after computing for 1 s: rank 0 sees it land at 1 s + a +
 * n/B.  Rank 2 computes in 1,000 steps (1,000 events); rank 0 tests again
 * once at each of those instants, never twice: about 2,000 events in all
 * with the barrier, where a spin at one instant would never end. */
static int poll_late(cl_comm *c, const cl_args *a)
{
    switch (cl_rank(c)) {
    case 0: {
        cl_request *r[2];
        CL_TRY(cl_irecv(c, NULL, a->bytes, 1, 0, &r[0]));
        CL_TRY(cl_isend(c, NULL, 1024, 2, 0, &r[1]));
        bool d0 = false, d1 = false;
        while (!(d0 && d1)) {
            CL_TRY(cl_test(c, &r[0], &d0, NULL));
            CL_TRY(cl_test(c, &r[1], &d1, NULL));
        }
        return 0;
    }
    case 1:
        CL_TRY(cl_compute(c, 1.0));
        return cl_send(c, NULL, a->bytes, 0, 0);
    default:
        for (int i = 0; i < 1000; i++)
            CL_TRY(cl_compute(c, 1e-3));
        return cl_recv(c, NULL, 1024, 0, 0, NULL);
    }
}

static void test_poll_late(void **state)
{
    (void)state;
    for (int sharing = 0; sharing < 2; sharing++) {
        sim_net *net = switch5();
        setup s = {.net = net, .no_payload = true, .no_sharing = !sharing, .timeout = 20};
        run r;
        run_pattern(&r, poll_late, 3, (uint64_t)N, NULL, &s);
        assert_int_equal(r.res.status, 0);
        assert_near(r.res.iter_time[0], 1.0 + A + N / B, 1e-12);
        assert_true(r.stats.events <= 2100);
        run_release(&r);
        sim_net_destroy(net);
    }
}

/* Determinism: the same contended run twice gives the same times, bit
 * for bit. */
static void test_deterministic(void **state)
{
    (void)state;
    rec_log a, b;
    run ra, rb;
    run_incast(5, true, true, &a, &ra);
    run_incast(5, true, true, &b, &rb);
    assert_int_equal(a.n, b.n);
    for (size_t i = 0; i < a.n; i++)
        assert_true(a.v[i].finished == b.v[i].finished);
    run_release(&ra);
    run_release(&rb);
    rec_log_release(&a);
    rec_log_release(&b);
}

/* Random traffic: ROUNDS rounds of MSGS messages between random pairs,
 * eager (1 and 40 KiB) and rendezvous (200 KiB and 1 MiB), drawn from one
 * seed so every rank draws the same schedule.  A rank may compute first;
 * a receiver may post late (after its own sends: its eager messages wait
 * unexpected); odd ranks poll with cl_test instead of waiting.  Lone flows
 * meet later ones mid-flight, are met while unexpected, and their waits
 * reopen: the ground the lone-flow shortcut must get exactly right. */
#define ROUNDS 12
#define MSGS 10

static uint64_t draw(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static int traffic(cl_comm *c, const cl_args *a)
{
    static const size_t sizes[] = {1024, 40 * 1024, 200 * 1024, 1024 * 1024};
    int k = cl_size(c), me = cl_rank(c);
    uint64_t x = 0x9e3779b97f4a7c15ULL + (uint64_t)a->chunk;
    for (int round = 0; round < ROUNDS; round++) {
        int src[MSGS], dst[MSGS], late[MSGS];
        size_t len[MSGS];
        double delay[16];
        for (int i = 0; i < MSGS; i++) {
            src[i] = (int)(draw(&x) % (uint64_t)k);
            dst[i] = (src[i] + 1 + (int)(draw(&x) % (uint64_t)(k - 1))) % k;
            len[i] = sizes[draw(&x) % 4];
            late[i] = (int)(draw(&x) % 2);
        }
        for (int r = 0; r < k; r++)
            delay[r] = (double)(draw(&x) % 4) * 7e-6;
        cl_request *req[2 * MSGS];
        int n = 0;
        for (int i = 0; i < MSGS; i++)
            if (dst[i] == me && !late[i])
                CL_TRY(cl_irecv(c, NULL, len[i], src[i], round * MSGS + i, &req[n++]));
        CL_TRY(cl_compute(c, delay[me]));
        for (int i = 0; i < MSGS; i++)
            if (src[i] == me)
                CL_TRY(cl_isend(c, NULL, len[i], dst[i], round * MSGS + i, &req[n++]));
        for (int i = 0; i < MSGS; i++)
            if (dst[i] == me && late[i])
                CL_TRY(cl_irecv(c, NULL, len[i], src[i], round * MSGS + i, &req[n++]));
        if (me % 2 == 0) {
            CL_TRY(cl_waitall(c, n, req, NULL));
            continue;
        }
        for (int i = 0; i < n; i++)
            for (bool done = false; !done;)
                CL_TRY(cl_test(c, &req[i], &done, NULL));
    }
    return 0;
}

static const cl_record *find(const rec_log *log, const cl_record *r)
{
    for (size_t i = 0; i < log->n; i++) {
        const cl_record *q = &log->v[i];
        if (q->op == r->op && q->rank == r->rank && q->peer == r->peer && q->tag == r->tag &&
            q->iter == r->iter && (q->op == REC_SEND || q->op == REC_RECV || q->posted == r->posted))
            return q;
    }
    return NULL;
}

/* A flow alone on free ports is priced on the spot and handed to the
 * solver only when another flow meets it (sim/engine_share.c, "lone flows"):
 * every record and iteration time must come out as when the solver holds
 * every flow from its start, bit for bit, on a tier mesh and on a
 * switch's two-link routes. */
static void test_lone_flows_exact(void **state)
{
    (void)state;
    for (int net_kind = 0; net_kind < 2; net_kind++) {
        sim_net *net = net_kind ? load("topology: [Switch]\nnpus_count: [6]\n"
                                       "bandwidth: [50GB/s]\nlatency: [3us]\n")
                                : NULL;
        rec_log log[2];
        run r[2];
        for (int only = 0; only < 2; only++) {
            rec_log_init(&log[only], 1u << 20);
            setup s = {.net = net, .tier = "infiniband", .no_payload = true,
                       .records = &log[only], .solver_only = only, .iters = 2};
            cl_args a = {.chunk = (size_t)net_kind};
            run_pattern(&r[only], traffic, 6, 0, &a, &s);
            assert_int_equal(r[only].res.status, 0);
        }
        /* Messages and iterations; not the waits a polling rank falls
         * into, whose number depends on which events happen to be queued. */
        size_t moved = 0, n[2] = {0, 0};
        for (int only = 0; only < 2; only++)
            for (size_t i = 0; i < log[only].n; i++)
                n[only] += log[only].v[i].op != REC_WAIT;
        assert_int_equal(n[0], n[1]);
        for (size_t i = 0; i < log[0].n; i++) {
            const cl_record *p = &log[0].v[i], *q = find(&log[1], p);
            if (p->op == REC_WAIT)
                continue;
            assert_non_null(q);
            assert_true(p->started == q->started);
            assert_true(p->finished == q->finished);
            moved += p->op == REC_RECV && p->finished > p->started;
        }
        assert_true(moved > 0);
        for (int it = 0; it < 2; it++)
            assert_true(r[0].res.iter_time[it] == r[1].res.iter_time[it]);
        /* The shortcut was taken, and so was the hand-over. */
        assert_true(r[0].stats.lone > 0 && r[0].stats.adopted > 0);
        assert_true(r[1].stats.lone == 0 && r[0].stats.flows == r[1].stats.flows);
        for (int only = 0; only < 2; only++) {
            run_release(&r[only]);
            rec_log_release(&log[only]);
        }
        sim_net_destroy(net);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_flow),        cmocka_unit_test(test_four_into_one),
        cmocka_unit_test(test_sizes_into_one),  cmocka_unit_test(test_none_alone),
        cmocka_unit_test(test_slow_receiver),   cmocka_unit_test(test_alltoall),
        cmocka_unit_test(test_naive_allreduce), cmocka_unit_test(test_both_poll),
        cmocka_unit_test(test_failed_test_costs_nothing),
        cmocka_unit_test(test_poll_two),        cmocka_unit_test(test_poll_late),
        cmocka_unit_test(test_deterministic),   cmocka_unit_test(test_lone_flows_exact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
