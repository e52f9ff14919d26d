/* test_lessons.c - the three lessons of issue 19 in the simulator: the
 * overlap of gradient buckets (chapter 02, overlap.c), the relay in
 * pieces over K hops (chapter 02, relay_chunked.c) and the blocking ring
 * (chapter 05, blocking_ring.c).  Each time is checked against its
 * formula, derived in the comment above its test, to the nanosecond,
 * with links shared max-min and priced alone. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "commlab.h"
#include "tests/simcase.h"
#include "tests/testutil.h"

cl_pattern_fn overlap, relay_chunked, blocking_ring;

/* The exercises' files define `pattern`; each is included under a name of
 * its own. */
#define pattern sol_overlap
#include "chapters/02-point-to-point/solutions/overlap.c"
#undef pattern
#undef MAX_BUCKETS
#define pattern ex_serialized
#include "chapters/02-point-to-point/examples/serialized.c"
#undef pattern
#define pattern sol_ring_evenodd
#include "chapters/05-deadlock/solutions/ring_evenodd.c"
#undef pattern

#define KiB 1024ULL
#define MiB (1024ULL * 1024ULL)
#define NS 1e-9 /* "to the nanosecond" */

/* configs/tiers.yaml */
#define NV_ALPHA 1e-6 /* nvlink: 1 us, 300 GB/s */
#define NV_BW 300e9
#define IB_ALPHA 3e-6 /* infiniband: 3 us, 50 GB/s */
#define IB_BW 50e9

/* Runs fn; fails the test when the run fails.  Returns its time. */
static double time_of(cl_pattern_fn *fn, int k, uint64_t bytes, const cl_args *a,
                      const setup *s, const char *what)
{
    run r;
    run_pattern(&r, fn, k, bytes, a, s);
    if (r.res.status)
        fail_msg("%s: %s", what, r.res.diag.msg);
    double t = r.res.iter_time[0];
    run_release(&r);
    return t;
}

/* Overlap.  m buckets of n / m bytes; a swap of one costs c = alpha +
 * n / (m bw) (both directions at once on a full-duplex link), and the
 * backward pass of --compute is split among them, T = compute / m each.
 * The pattern computes bucket 0 (T), then m - 1 times posts the swap of
 * bucket b and computes bucket b + 1 before waiting: max(T, c) a step,
 * since the swap and the compute both start at the step's start.  The
 * last swap has nothing to hide behind: c.  Overlapped: T + (m - 1)
 * max(T, c) + c; serialized, each bucket computed then swapped: m (T + c),
 * which the pattern prints from the last swap, timed alone. */
static void test_overlap_is_max_not_sum(void **state)
{
    (void)state;
    static const double computes[] = {4e-3, 400e-6, 40e-6, 0};
    static const int buckets[] = {1, 2, 4, 8};
    for (int sharing = 0; sharing < 2; sharing++)
        for (size_t i = 0; i < sizeof computes / sizeof computes[0]; i++)
            for (size_t j = 0; j < sizeof buckets / sizeof buckets[0]; j++) {
                int b = buckets[j];
                double t = computes[i] / b, n = 256.0 * MiB;
                double c = NV_ALPHA + n / b / NV_BW;
                cl_args a = {.pieces = b, .compute = computes[i]};
                setup s = {.no_sharing = sharing, .no_payload = true};
                char what[96];
                snprintf(what, sizeof what, "overlap, %d buckets, compute %g s, sharing %s", b,
                         t, sharing ? "none" : "maxmin");
                double got = time_of(overlap, 2, 256 * MiB, &a, &s, what);
                assert_near(got, t + (b - 1) * fmax(t, c) + c, NS);
            }
    /* What rank 0 prints (README, chapter 02): 4 x (1 ms + 224.7 us)
     * serialized, 1 ms + 3 x 1 ms + 224.7 us overlapped. */
    cl_args a = {.pieces = 4, .compute = 4e-3};
    setup s = {.no_payload = true};
    run r;
    run_pattern(&r, overlap, 2, 256 * MiB, &a, &s);
    assert_int_equal(r.res.status, 0);
    assert_non_null(strstr(r.out, "rank 0: 4 buckets, compute 1 ms and swap 0.2247 ms each: "
                                  "overlapped 4.225 ms, serialized 4.899 ms"));
    run_release(&r);
}

/* Exercise 2.6: the serialized start costs m (T + c), the solution what
 * the pattern costs; both end with the right data (their own checks, which
 * time_of fails the test on). */
static void test_overlap_exercise(void **state)
{
    (void)state;
    for (int m = 1; m <= 8; m *= 2)
        for (double compute = 40e-6; compute < 1e-2; compute *= 10) {
            cl_args a = {.pieces = m, .compute = compute};
            double t = compute / m, c = NV_ALPHA + 256.0 * MiB / m / NV_BW;
            setup s = {.no_payload = true};
            double serial = time_of(ex_serialized, 2, 256 * MiB, &a, &s, "serialized.c");
            double mine = time_of(sol_overlap, 2, 256 * MiB, &a, &s, "solutions/overlap.c");
            assert_near(serial, m * (t + c), NS);
            assert_near(mine, time_of(overlap, 2, 256 * MiB, &a, &s, "overlap"), NS);
        }
    cl_args a = {.pieces = 3, .compute = 1e-6};
    time_of(sol_overlap, 5, 100003, &a, NULL, "solutions/overlap.c");
    time_of(ex_serialized, 5, 100003, &a, NULL, "serialized.c");
}

/* Each replica ends with its partner's buckets, with uneven buckets and
 * an odd rank left out; pair (2, 3) swaps as (0, 1) does. */
static void test_overlap_data(void **state)
{
    (void)state;
    for (int k = 2; k <= 5; k++)
        for (int b = 1; b <= 7; b += 3) {
            cl_args a = {.pieces = b, .compute = 1e-6};
            run r;
            run_pattern(&r, overlap, k, 100003, &a, NULL);
            assert_int_equal(r.res.status, 0);
            assert_int_equal(r.res.messages, (uint64_t)(k / 2 * 2 * b));
            run_release(&r);
        }
}

/* The last rank ends with rank 0's buffer, in pieces that do not divide
 * it, above and below the eager limit. */
static void test_relay_chunked_data(void **state)
{
    (void)state;
    for (int k = 2; k <= 5; k++)
        for (int c = 1; c <= 13; c += 4) {
            cl_args a = {.pieces = c};
            run r;
            run_pattern(&r, relay_chunked, k, 1000003, &a, NULL);
            assert_int_equal(r.res.status, 0);
            assert_int_equal(r.res.messages, (uint64_t)((k - 1) * c));
            run_release(&r);
        }
}

/* The chunked relay.  K hops (K + 1 ranks), C pieces of n / C bytes, each
 * above the eager limit so a blocking send returns once its piece has
 * arrived: h = alpha + n / (C bw).  Piece j crosses hop i in step i + j
 * (each rank's receives are posted before anything is sent, and a rank
 * sends piece j once it has it and its send of piece j - 1 is done), so
 * the last piece crosses the last hop in step (K - 1) + (C - 1): the relay
 * takes (K - 1 + C) h.  No two pieces cross one port direction at once
 * (a rank receives piece j + 1 on its way in while it sends piece j on its
 * way out), so sharing changes nothing, whether the flows are priced alone
 * or all handed to the max-min solver. */
static double relay_formula(int hops, int pieces, double n)
{
    return (hops - 1 + pieces) * (IB_ALPHA + n / pieces / IB_BW);
}

static void test_relay_chunked_formula(void **state)
{
    (void)state;
    static const int pieces[] = {1, 2, 8, 37, 64};
    static const char *const how[] = {"maxmin", "none", "maxmin, solver only"};
    for (int sharing = 0; sharing < 3; sharing++)
        for (int hops = 1; hops <= 6; hops++)
            for (size_t j = 0; j < sizeof pieces / sizeof pieces[0]; j++) {
                cl_args a = {.pieces = pieces[j]};
                setup s = {.tier = "infiniband", .no_sharing = sharing == 1,
                           .solver_only = sharing == 2, .no_payload = true};
                char what[96];
                snprintf(what, sizeof what, "relay-chunked, %d hops, %d pieces, sharing %s",
                         hops, pieces[j], how[sharing]);
                double got = time_of(relay_chunked, hops + 1, 64 * MiB, &a, &s, what);
                assert_near(got, relay_formula(hops, pieces[j], 64.0 * MiB), NS);
            }
}

/* The best C.  T(C) = (K - 1) alpha + n / bw + C alpha + (K - 1) n / (C
 * bw); dT/dC = alpha - (K - 1) n / (C^2 bw) = 0 at C* = sqrt((K - 1) n /
 * (alpha bw)).  For 64 MiB over 4 hops on InfiniBand C* = 36.64, and of
 * its neighbours 37 is the faster (exercise 2.7): the simulated time is
 * least there among 1 .. 80.  On one hop T(C) = C alpha + n / bw: the
 * best C is 1, chunking only adds latency. */
static void test_relay_chunked_best(void **state)
{
    (void)state;
    setup s = {.tier = "infiniband", .no_payload = true};
    double n = 64.0 * MiB, cstar = sqrt(3 * n / (IB_ALPHA * IB_BW));
    assert_near(cstar, 36.64, 0.01);
    for (int hops = 1; hops <= 4; hops += 3) {
        int best = 0;
        double least = INFINITY;
        for (int c = 1; c <= 80; c++) {
            cl_args a = {.pieces = c};
            double t = time_of(relay_chunked, hops + 1, 64 * MiB, &a, &s, "relay-chunked");
            if (t < least) {
                least = t;
                best = c;
            }
        }
        assert_int_equal(best, hops == 1 ? 1 : 37);
        assert_near(least, relay_formula(hops, best, n), NS);
    }
}

/* The blocking ring.  Every rank sending first deadlocks above the eager
 * limit (a cycle through every rank) and completes below it.  With
 * even ranks sending first and odd ranks receiving first, a message of t
 * = alpha + n / bw: on K even, round 1 is 0>1, 2>3, ..., round 2 the
 * others: 2t.  On K odd, ranks K - 1 and 0 both send first: 0>1 and the
 * other even>odd messages take round 1; K-1>0 starts once rank 0's send
 * is done (round 2, beside the odd>even messages whose receivers are
 * free); K-2>K-1 waits for rank K - 1's send: round 3, 3t. */
static void test_blocking_ring(void **state)
{
    (void)state;
    for (int k = 2; k <= 9; k++) {
        run r;
        run_pattern(&r, blocking_ring, k, 1 * MiB, NULL, NULL);
        assert_int_equal(r.res.status, CL_EDEADLOCK);
        assert_non_null(strstr(r.report, "cycle: rank 0 -> rank 1 -> "));
        run_release(&r);
        run_pattern(&r, blocking_ring, k, 1 * KiB, NULL, NULL);
        assert_int_equal(r.res.status, 0);
        run_release(&r);
        for (int sharing = 0; sharing < 2; sharing++) {
            cl_args a = {.fix = "evenodd"};
            setup s = {.no_sharing = sharing};
            double t = NV_ALPHA + (double)MiB / NV_BW;
            double got = time_of(blocking_ring, k, 1 * MiB, &a, &s, "blocking-ring evenodd");
            assert_near(got, (k % 2 ? 3 : 2) * t, NS);
        }
    }
}

/* Exercise 5.3: the solution completes at every K, with the data, in the
 * time of --fix evenodd. */
static void test_ring_exercise(void **state)
{
    (void)state;
    cl_args a = {.fix = "evenodd"};
    for (int k = 2; k <= 9; k++)
        assert_near(time_of(sol_ring_evenodd, k, 1 * MiB, NULL, NULL, "ring_evenodd.c"),
                    time_of(blocking_ring, k, 1 * MiB, &a, NULL, "blocking-ring"), NS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_overlap_is_max_not_sum),
        cmocka_unit_test(test_overlap_data),
        cmocka_unit_test(test_overlap_exercise),
        cmocka_unit_test(test_relay_chunked_data),
        cmocka_unit_test(test_relay_chunked_formula),
        cmocka_unit_test(test_relay_chunked_best),
        cmocka_unit_test(test_blocking_ring),
        cmocka_unit_test(test_ring_exercise),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
