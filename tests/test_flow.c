/* test_flow.c - max-min fair bandwidth sharing (sim/flow.h): the figures
 * of the flow-model issue at the solver level, the fast path, the moved
 * callback, batches, determinism, and random runs against a reference
 * solver.
 *
 * Figures: n = 256 MiB = 2^28 bytes, B = 50 GB/s = 5e10 B/s, 5 (or 8)
 * ranks on one switch; rank r's up link (r -> switch) is resource 2r and
 * its down link (switch -> r) is resource 2r+1, each of capacity B; a flow
 * s -> d crosses s.up and d.down.  Only the bandwidth phase is tested (the
 * engine adds the route's alpha).
 *
 * Comparisons: exact where every operation on the way is exact or is the
 * same single rounding on both sides (capacities divided by powers of two
 * are exact, and n / (B / 2^k) and 2^k n / B are then both the one
 * rounding of 2^(28+k) / B); else relative 1e-12, a few hundred ulps,
 * for results that went through a division by 3 or 7 or a subtraction of
 * rounded products: far below any modeled effect, far above the rounding
 * of a handful of operations. */
#include <stdlib.h>
#include <string.h>

#include "commlab.h"
#include "sim/flow.h"
#include "testutil.h"

#define N 268435456.0 /* 256 MiB */
#define B 50e9        /* bytes/s */
#define UP(r) (2 * (int64_t)(r))
#define DN(r) (2 * (int64_t)(r) + 1)
#define REL 1e-12

#define assert_rel(got, want) assert_near((got), (want), REL * fabs(want))

/* What the moved callback saw. */
typedef struct moves {
    int n;              /* callbacks */
    sim_flow *last;     /* last flow reported */
    double last_end;    /* and its end */
} moves;

static void on_moved(void *ctx, sim_flow *f, double end)
{
    moves *m = ctx;
    assert_true(end == sim_flow_end(f));
    m->n++;
    m->last = f;
    m->last_end = end;
}

static sim_flow_sys *mk(moves *m)
{
    sim_flow_sys *s = NULL;
    assert_int_equal(sim_flow_create(&s, on_moved, m), 0);
    return s;
}

/* src -> dst over src.up (capacity B) and dst.down (capacity down). */
static sim_flow *pair(sim_flow_sys *s, double now, int src, int dst, double work, double down)
{
    int64_t res[2] = {UP(src), DN(dst)};
    double cap[2] = {B, down};
    sim_flow *f = NULL;
    assert_int_equal(sim_flow_start(s, now, res, cap, 2, work, NULL, &f), 0);
    assert_int_equal(sim_flow_check(s), 0);
    return f;
}

static void finish(sim_flow_sys *s, sim_flow *f)
{
    double end = sim_flow_end(f);
    assert_true(sim_flow_remaining(f, end) <= 1e-9 * N);
    sim_flow_finish(s, end, f);
    assert_int_equal(sim_flow_check(s), 0);
}

static void test_alone(void **state)
{
    (void)state;
    moves m = {0};
    sim_flow_sys *s = mk(&m);
    sim_flow *f = pair(s, 0, 1, 0, N, B);
    assert_true(sim_flow_end(f) == N / B); /* n/B: rate B exactly, one division */
    assert_true(sim_flow_rate(f) == B);
    assert_int_equal(sim_flow_resources(s), 2);
    finish(s, f);
    const sim_flow_stats *st = sim_flow_stats_get(s);
    assert_int_equal(st->fast_starts, 1);
    assert_int_equal(st->fast_finishes, 1);
    assert_int_equal(st->solves, 0);
    assert_int_equal(m.n, 0);
    assert_int_equal(sim_flow_resources(s), 0);
    assert_int_equal(sim_flow_active(s), 0);
    sim_flow_destroy(s);
    sim_flow_destroy(NULL);
}

/* 1..4 -> 0 at t = 0: 0.down is the bottleneck, B/4 each. */
static void test_four_into_one(void **state)
{
    (void)state;
    moves m = {0};
    sim_flow_sys *s = mk(&m);
    sim_flow *f[4];
    for (int i = 0; i < 4; i++)
        f[i] = pair(s, 0, i + 1, 0, N, B);
    /* moves: f0 when f1 starts, f0,f1 when f2 does, f0..f2 when f3 does */
    assert_int_equal(m.n, 1 + 2 + 3);
    for (int i = 0; i < 4; i++) {
        assert_true(sim_flow_rate(f[i]) == B / 4); /* exact: power of two */
        assert_true(sim_flow_end(f[i]) == 4 * N / B); /* n/(B/4) = 2^30/B = 4n/B */
    }
    for (int i = 0; i < 4; i++)
        finish(s, f[i]);
    assert_int_equal(sim_flow_resources(s), 0);
    sim_flow_destroy(s);
}

/* Sizes n, 2n, 3n, 4n into rank 0 at t = 0.  Phase 1: four at B/4, the n
 * flow ends at n/(B/4) = 4n/B with the others n in.  Phase 2: n, 2n, 3n
 * left at B/3: the next ends 3n/B later, at 7n/B, the others 2n in.
 * Phase 3: n, 2n at B/2: 2n/B later, 9n/B.  Phase 4: n at B: 10n/B. */
static void test_sizes(void **state)
{
    (void)state;
    moves m = {0};
    sim_flow_sys *s = mk(&m);
    sim_flow *f[4];
    for (int i = 0; i < 4; i++)
        f[i] = pair(s, 0, i + 1, 0, (i + 1) * N, B);
    assert_true(sim_flow_end(f[0]) == 4 * N / B); /* exact, as in four_into_one */
    assert_true(sim_flow_end(f[3]) == 16 * N / B); /* 4n/(B/4): exact */
    const double want[4] = {4 * N / B, 7 * N / B, 9 * N / B, 10 * N / B};
    for (int i = 0; i < 4; i++) {
        assert_rel(sim_flow_end(f[i]), want[i]); /* rel 1e-12: B/3, rounded work */
        m.n = 0;
        finish(s, f[i]);
        assert_int_equal(m.n, 3 - i); /* every flow left moves */
    }
    sim_flow_destroy(s);
}

/* 0 -> 1, 2, 3, 4 and 4.down runs at B/8.  4.down's share B/8 is the
 * smallest: that flow gets B/8 and ends at n/(B/8) = 8n/B (exact).  0.up
 * then has B - B/8 = 7B/8 for three flows: 7B/24 each, ending at
 * n/(7B/24) = 24/7 n/B (rel 1e-12: a division by 3).  When they end,
 * 4.down still limits the last flow to B/8: its rate and end stay. */
static void test_slow_receiver(void **state)
{
    (void)state;
    moves m = {0};
    sim_flow_sys *s = mk(&m);
    sim_flow *f[4];
    for (int i = 0; i < 4; i++)
        f[i] = pair(s, 0, 0, i + 1, N, i == 3 ? B / 8 : B);
    assert_true(sim_flow_end(f[3]) == 8 * N / B);
    assert_true(sim_flow_rate(f[3]) == B / 8);
    for (int i = 0; i < 3; i++) {
        assert_rel(sim_flow_end(f[i]), 24.0 / 7.0 * N / B);
        assert_rel(sim_flow_rate(f[i]), 7.0 * B / 24.0);
        assert_true(sim_flow_end(f[i]) == sim_flow_end(f[0])); /* one share, one end */
    }
    m.n = 0;
    for (int i = 0; i < 3; i++)
        finish(s, f[i]);
    assert_int_equal(m.n, 0); /* the slow flow's rate never changed */
    assert_true(sim_flow_end(f[3]) == 8 * N / B);
    finish(s, f[3]);
    assert_int_equal(sim_flow_resources(s), 0);
    sim_flow_destroy(s);
}

/* Each of 8 ranks sends n to the 7 others at t = 0 (all-to-all order):
 * every up and down link carries 7 flows, B/7 each, so every flow ends
 * at n/(B/7) = 7n/B (rel 1e-12: a division by 7; the snap to the filling
 * level makes all 56 ends the same double).  Returns the end. */
static double all_to_all(bool batch)
{
    moves m = {0};
    sim_flow_sys *s = mk(&m);
    sim_flow *f[56];
    if (batch)
        sim_flow_batch_begin(s, 0);
    int k = 0;
    for (int src = 0; src < 8; src++)
        for (int j = 1; j < 8; j++) {
            int64_t res[2] = {UP(src), DN((src + j) % 8)};
            double cap[2] = {B, B};
            assert_int_equal(sim_flow_start(s, 0, res, cap, 2, N, NULL, &f[k++]), 0);
        }
    const sim_flow_stats *st = sim_flow_stats_get(s);
    if (batch) {
        assert_int_equal(st->solves, 0);
        assert_true(sim_flow_end(f[55]) == INFINITY); /* not solved yet */
        sim_flow_batch_end(s);
        assert_int_equal(st->solves, 1);
        assert_int_equal(m.n, 56); /* f0 (fast: n/B) and the 55 at +inf all moved */
    } else {
        assert_int_equal(st->solves, 55); /* the first start took the fast path */
    }
    assert_int_equal(sim_flow_check(s), 0);
    double end = sim_flow_end(f[0]);
    assert_rel(end, 7 * N / B);
    for (int i = 0; i < 56; i++)
        assert_true(sim_flow_end(f[i]) == end);
    for (int i = 0; i < 56; i++)
        finish(s, f[i]);
    assert_int_equal(sim_flow_resources(s), 0);
    sim_flow_destroy(s);
    return end;
}

static void test_all_to_all(void **state)
{
    (void)state;
    double each = all_to_all(false), batch = all_to_all(true);
    assert_true(each == batch); /* the same final solve, bit for bit */
}

/* a, b, c (n each) and d (2n) into rank 0: B/4 each, a..c end at 4n/B
 * (exact) with d n in; d then has 0.down alone: n/B more, 5n/B (rel
 * 1e-12: the work left is a rounded product).  Finishing a..c in a batch
 * solves once and moves d once; one by one, d moves three times (B/3,
 * B/2, B) to the same end bit for bit (its work is advanced once, at
 * 4n/B, and the last rate is B either way). */
static double finish_three(bool batch)
{
    moves m = {0};
    sim_flow_sys *s = mk(&m);
    sim_flow *f[4];
    for (int i = 0; i < 4; i++)
        f[i] = pair(s, 0, i + 1, 0, i == 3 ? 2 * N : N, B);
    double t = sim_flow_end(f[0]);
    assert_true(t == 4 * N / B);
    uint64_t solves = sim_flow_stats_get(s)->solves;
    m.n = 0;
    if (batch)
        sim_flow_batch_begin(s, t);
    for (int i = 0; i < 3; i++)
        sim_flow_finish(s, t, f[i]);
    if (batch) {
        assert_int_equal(m.n, 0); /* nothing solved yet */
        sim_flow_batch_end(s);
    }
    assert_int_equal(sim_flow_check(s), 0);
    assert_int_equal(m.n, batch ? 1 : 3);
    assert_int_equal(sim_flow_stats_get(s)->solves, solves + (batch ? 1 : 3));
    double end = sim_flow_end(f[3]);
    assert_rel(end, 5 * N / B);
    finish(s, f[3]);
    assert_int_equal(sim_flow_resources(s), 0);
    sim_flow_destroy(s);
    return end;
}

static void test_batch_finish(void **state)
{
    (void)state;
    assert_true(finish_three(true) == finish_three(false));
}

/* More flows at once than several slabs hold (sim/slab.h: 256, then 512,
 * 1,024, ... flows of a route length), of two route lengths, started and
 * finished in batches twice, the second time from the pooled flows: every
 * flow is its own (the checks), each has its end, and all finish at the
 * latest. */
#define MANY 4000

static double many_flows(sim_flow_sys *s, sim_flow **f, double t)
{
    sim_flow_batch_begin(s, t);
    for (int i = 0; i < MANY; i++) {
        int64_t res[2] = {UP(i % 64), DN(64 + i / 64 % 64)};
        double cap[2] = {B, B};
        int nres = i % 4 == 0 ? 1 : 2;
        assert_int_equal(sim_flow_start(s, t, res + 2 - nres, cap, nres, N, NULL, &f[i]), 0);
    }
    sim_flow_batch_end(s);
    assert_int_equal(sim_flow_check(s), 0);
    assert_int_equal(sim_flow_active(s), MANY);
    double last = t;
    for (int i = 0; i < MANY; i++) {
        assert_true(sim_flow_end(f[i]) > t && sim_flow_end(f[i]) < INFINITY);
        if (sim_flow_end(f[i]) > last)
            last = sim_flow_end(f[i]);
    }
    sim_flow_batch_begin(s, last);
    for (int i = 0; i < MANY; i++)
        sim_flow_finish(s, last, f[i]);
    sim_flow_batch_end(s);
    assert_int_equal(sim_flow_check(s), 0);
    assert_int_equal(sim_flow_active(s), 0);
    return last;
}

static void test_many_slabs(void **state)
{
    (void)state;
    sim_flow *f[MANY];
    sim_flow_sys *s = mk(&(moves){0});
    many_flows(s, f, many_flows(s, f, 0));
    sim_flow_destroy(s);
}

/* A (0 -> 1) alone from t = 0 at rate B; B' (2 -> 1) joins 1.down at
 * t1 = n/(2B).  A has n/2 left and now runs at B/2: it ends at
 * t1 + (n/2)/(B/2) = n/(2B) + n/B = 3n/(2B).  B' runs at B/2 until then,
 * doing (B/2)(n/B) = n/2, so its first prediction is t1 + n/(B/2) =
 * 5n/(2B); once A ends it has n/2 left at rate B: 3n/(2B) + n/(2B) =
 * 2n/B.  Rel 1e-12: the work left is a rounded product. */
static void test_late_start(void **state)
{
    (void)state;
    moves m = {0};
    sim_flow_sys *s = mk(&m);
    sim_flow *a = pair(s, 0, 0, 1, N, B);
    assert_true(sim_flow_end(a) == N / B);
    sim_flow *b = pair(s, N / (2 * B), 2, 1, N, B);
    assert_int_equal(m.n, 1);
    assert_ptr_equal(m.last, a);
    assert_rel(m.last_end, 1.5 * N / B);
    assert_rel(sim_flow_remaining(a, N / (2 * B)), N / 2);
    assert_rel(sim_flow_end(b), 2.5 * N / B);
    finish(s, a);
    assert_int_equal(m.n, 2);
    assert_ptr_equal(m.last, b);
    assert_rel(sim_flow_end(b), 2 * N / B);
    assert_true(sim_flow_rate(b) == B);
    finish(s, b);
    sim_flow_destroy(s);
}

/* Ranks i -> i+1 on a ring of 1,000 mesh ports: no resource ever carries
 * two flows, so nothing is solved, and each end is n/B exactly. */
static void test_fast_path(void **state)
{
    (void)state;
    enum { R = 1000 };
    moves m = {0};
    sim_flow_sys *s = mk(&m);
    sim_flow **f = malloc(R * sizeof(*f));
    assert_non_null(f);
    for (int round = 0; round < 2; round++) { /* the second runs on pooled flows */
        for (int i = 0; i < R; i++) {
            int64_t res[2] = {UP(i), DN((i + 1) % R)};
            double cap[2] = {B, B};
            assert_int_equal(sim_flow_start(s, round, res, cap, 2, N, NULL, &f[i]), 0);
            assert_true(sim_flow_end(f[i]) == round + N / B);
        }
        assert_int_equal(sim_flow_check(s), 0);
        assert_int_equal(sim_flow_resources(s), 2 * R);
        for (int i = 0; i < R; i++)
            sim_flow_finish(s, round + N / B, f[i]);
        assert_int_equal(sim_flow_resources(s), 0);
    }
    const sim_flow_stats *st = sim_flow_stats_get(s);
    assert_int_equal(st->fast_starts, 2 * R);
    assert_int_equal(st->fast_finishes, 2 * R);
    assert_int_equal(st->solves, 0);
    assert_int_equal(st->solved_flows, 0);
    assert_int_equal(m.n, 0);
    free(f);
    sim_flow_destroy(s);
}

/* moved fires for the flows whose end changed and for no other. */
static void test_moved_exact(void **state)
{
    (void)state;
    moves m = {0};
    sim_flow_sys *s = mk(&m);
    sim_flow *a = pair(s, 0, 0, 1, N, B);
    sim_flow *c = pair(s, 0, 2, 3, N, B); /* another component */
    sim_flow *b = pair(s, 0, 4, 1, 2 * N, B); /* meets a on 1.down */
    assert_int_equal(m.n, 1);
    assert_ptr_equal(m.last, a);
    assert_true(sim_flow_end(c) == N / B);
    /* d, e share 5.up (B/2 each); g joins e on 7.down, where e's share is
     * B/2 already: the component is solved and nothing moves. */
    sim_flow *d = pair(s, 0, 5, 6, N, B);
    sim_flow *e = pair(s, 0, 5, 7, N, B);
    uint64_t solves = sim_flow_stats_get(s)->solves;
    m.n = 0;
    sim_flow *g = pair(s, 0, 8, 7, 2 * N, B);
    assert_int_equal(sim_flow_stats_get(s)->solves, solves + 1);
    assert_int_equal(m.n, 0);
    assert_true(sim_flow_rate(g) == B / 2);
    assert_true(sim_flow_end(d) == 2 * N / B && sim_flow_end(e) == 2 * N / B);
    /* c ends (n/B): its component was only c, nothing moves.  d ends
     * (2n/B): e stays at B/2 (7.down), nothing again.  e ends (2n/B): g,
     * n left, gets 7.down alone and moves to 3n/B; a ends (2n/B): b, n
     * left, moves to 3n/B.  (Flows that end together would not move: a
     * flow with no work left ends now at any rate.) */
    finish(s, c);
    assert_int_equal(m.n, 0);
    finish(s, d);
    assert_int_equal(m.n, 0);
    finish(s, e);
    assert_int_equal(m.n, 1);
    assert_ptr_equal(m.last, g);
    assert_rel(m.last_end, 3 * N / B);
    finish(s, a);
    assert_int_equal(m.n, 2);
    assert_ptr_equal(m.last, b);
    assert_rel(m.last_end, 3 * N / B);
    finish(s, b);
    finish(s, g);
    assert_int_equal(sim_flow_resources(s), 0);
    sim_flow_destroy(s);
}

/* A half-duplex link 0 <-> 1 is one resource for both directions: a flow
 * each way gets B/2 and ends at n/(B/2) = 2n/B (exact).  Full duplex (a
 * resource per direction): n/B each. */
static void test_half_duplex(void **state)
{
    (void)state;
    moves m = {0};
    sim_flow_sys *s = mk(&m);
    int64_t link = 42;
    double cap = B;
    sim_flow *ab, *ba;
    assert_int_equal(sim_flow_start(s, 0, &link, &cap, 1, N, NULL, &ab), 0);
    assert_int_equal(sim_flow_start(s, 0, &link, &cap, 1, N, NULL, &ba), 0);
    assert_true(sim_flow_end(ab) == 2 * N / B && sim_flow_end(ba) == 2 * N / B);
    assert_int_equal(sim_flow_resources(s), 1);
    finish(s, ab);
    finish(s, ba);
    int64_t fwd = 42, back = 43;
    assert_int_equal(sim_flow_start(s, 10, &fwd, &cap, 1, N, NULL, &ab), 0);
    assert_int_equal(sim_flow_start(s, 10, &back, &cap, 1, N, NULL, &ba), 0);
    assert_true(sim_flow_end(ab) == 10 + N / B && sim_flow_end(ba) == 10 + N / B);
    finish(s, ab);
    finish(s, ba);
    sim_flow_destroy(s);
}

/* Capacity 1.0, work in seconds: 1.5 s and 0.5 s of work share one
 * resource at 0.5 each; the short one ends at 0.5/0.5 = 1.0, the long one
 * has 1.5 - 0.5 x 1.0 = 1.0 left at rate 1: it ends at 2.0.  All exact. */
static void test_normalized(void **state)
{
    (void)state;
    moves m = {0};
    sim_flow_sys *s = mk(&m);
    int64_t r = 7;
    double one = 1.0;
    sim_flow *lng, *shrt;
    assert_int_equal(sim_flow_start(s, 0, &r, &one, 1, 1.5, NULL, &lng), 0);
    assert_int_equal(sim_flow_start(s, 0, &r, &one, 1, 0.5, NULL, &shrt), 0);
    assert_true(sim_flow_end(shrt) == 1.0 && sim_flow_end(lng) == 3.0);
    sim_flow_finish(s, 1.0, shrt);
    assert_true(sim_flow_end(lng) == 2.0);
    assert_true(sim_flow_remaining(lng, 1.5) == 0.5);
    sim_flow_finish(s, 2.0, lng);
    assert_int_equal(sim_flow_check(s), 0);
    sim_flow_destroy(s);
}

/* Bad arguments fail with CL_EINVAL and change nothing. */
static void test_errors(void **state)
{
    (void)state;
    moves m = {0};
    sim_flow_sys *s = mk(&m);
    sim_flow *a = pair(s, 0, 0, 1, N, B), *out = NULL;
    int64_t res[17];
    double cap[17];
    for (int i = 0; i < 17; i++)
        res[i] = 100 + i, cap[i] = B;
    assert_int_equal(sim_flow_start(s, 0, res, cap, 0, N, NULL, &out), CL_EINVAL);
    assert_int_equal(sim_flow_start(s, 0, res, cap, 17, N, NULL, &out), CL_EINVAL);
    assert_int_equal(sim_flow_start(s, 0, res, cap, 16, -1, NULL, &out), CL_EINVAL);
    assert_int_equal(sim_flow_start(s, 0, res, cap, 16, NAN, NULL, &out), CL_EINVAL);
    assert_int_equal(sim_flow_start(s, 0, res, cap, 16, INFINITY, NULL, &out), CL_EINVAL);
    cap[3] = 0;
    assert_int_equal(sim_flow_start(s, 0, res, cap, 16, N, NULL, &out), CL_EINVAL);
    cap[3] = B;
    res[5] = res[2]; /* a repeated resource */
    assert_int_equal(sim_flow_start(s, 0, res, cap, 16, N, NULL, &out), CL_EINVAL);
    int64_t busy[2] = {UP(2), DN(1)}; /* 1.down is in use at B */
    double other[2] = {B, B / 2};
    assert_int_equal(sim_flow_start(s, 0, busy, other, 2, N, NULL, &out), CL_EINVAL);
    assert_null(out);
    assert_int_equal(sim_flow_active(s), 1);
    assert_int_equal(sim_flow_resources(s), 2);
    assert_int_equal(sim_flow_stats_get(s)->starts, 1);
    res[5] = 105;
    assert_int_equal(sim_flow_start(s, 0, res, cap, 16, N, &m, &out), 0); /* 16 is fine */
    assert_ptr_equal(sim_flow_owner(out), &m);
    assert_int_equal(sim_flow_check(s), 0);
    finish(s, out);
    finish(s, a);
    /* Idle again, 1.down takes whatever capacity comes next. */
    sim_flow *b = pair(s, N / B, 2, 1, N, B / 2);
    assert_true(sim_flow_end(b) == N / B + 2 * N / B);
    finish(s, b);
    sim_flow_destroy(s);
}

/* ---- random runs ---- */

static uint64_t rng(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

#define RRES 10
#define RFLOWS 300

typedef struct run {
    sim_flow *f[RFLOWS];
    double end[RFLOWS];  /* as the caller knows it: start, then moves */
    int id[RFLOWS];
    bool live[RFLOWS];
    int64_t res[RFLOWS][4];
    int nres[RFLOWS];
    double trace[2 * RFLOWS + 1]; /* every event time, then the moves count */
    int ntrace;
    int moves;
} run;

static void on_moved_run(void *ctx, sim_flow *f, double end)
{
    run *r = ctx;
    int i = *(int *)sim_flow_owner(f);
    assert_true(r->live[i]);
    assert_true(end != r->end[i]); /* moves are real */
    r->end[i] = end;
    r->moves++;
}

static double res_cap(int64_t id)
{
    return B * (double)(1 + id % 3); /* B, 2B, 3B */
}

/* Max-min rates of the live flows by the textbook loop, O(R F) a round. */
static void reference(const run *r, double *rate)
{
    bool fixed[RFLOWS] = {0};
    double rem[RRES];
    for (int k = 0; k < RRES; k++)
        rem[k] = res_cap(k);
    for (;;) {
        double best = INFINITY;
        int at = -1;
        for (int k = 0; k < RRES; k++) {
            int n = 0;
            for (int i = 0; i < RFLOWS; i++)
                for (int h = 0; r->live[i] && !fixed[i] && h < r->nres[i]; h++)
                    n += r->res[i][h] == k;
            if (n && rem[k] / n < best)
                best = rem[k] / n, at = k;
        }
        if (at < 0)
            return;
        for (int i = 0; i < RFLOWS; i++) {
            bool on = false;
            for (int h = 0; r->live[i] && !fixed[i] && h < r->nres[i]; h++)
                on |= r->res[i][h] == at;
            if (!on)
                continue;
            fixed[i] = true;
            rate[i] = best;
            for (int h = 0; h < r->nres[i]; h++)
                rem[r->res[i][h]] -= best;
        }
    }
}

/* Poisson-ish arrivals of flows over 1..4 of RRES resources, each end
 * processed in time order, every step checked against sim_flow_check, the
 * reference rates and the ends the callbacks told. */
static void random_run(run *r, uint64_t seed, bool check)
{
    memset(r, 0, sizeof(*r));
    sim_flow_sys *s = NULL;
    assert_int_equal(sim_flow_create(&s, on_moved_run, r), 0);
    double next = 0, now = 0;
    int started = 0, done = 0;
    while (done < RFLOWS) {
        int first = -1;
        for (int i = 0; i < started; i++)
            if (r->live[i] && (first < 0 || r->end[i] < r->end[first]))
                first = i;
        if (started < RFLOWS && (first < 0 || next < r->end[first])) {
            int i = started++;
            now = next;
            r->id[i] = i;
            r->nres[i] = 1 + (int)(rng(&seed) % 4);
            double cap[4];
            for (int h = 0; h < r->nres[i]; h++) {
                int64_t id;
                bool dup;
                do {
                    id = (int64_t)(rng(&seed) % RRES);
                    dup = false;
                    for (int j = 0; j < h; j++)
                        dup |= r->res[i][j] == id;
                } while (dup);
                r->res[i][h] = id;
                cap[h] = res_cap(id);
            }
            double work = N * (0.25 + (double)(rng(&seed) % 1000) / 500.0);
            assert_int_equal(sim_flow_start(s, now, r->res[i], cap, r->nres[i], work, &r->id[i],
                                            &r->f[i]),
                             0);
            r->live[i] = true;
            r->end[i] = sim_flow_end(r->f[i]);
            next = now + (double)(rng(&seed) % 1000) * 1e-6 * N / B;
        } else {
            now = r->end[first];
            assert_true(sim_flow_remaining(r->f[first], now) <= 1e-9 * N);
            sim_flow_finish(s, now, r->f[first]);
            r->live[first] = false;
            done++;
        }
        r->trace[r->ntrace++] = now;
        if (!check)
            continue;
        assert_int_equal(sim_flow_check(s), 0);
        double want[RFLOWS];
        reference(r, want);
        for (int i = 0; i < started; i++) {
            if (!r->live[i])
                continue;
            assert_true(r->end[i] == sim_flow_end(r->f[i])); /* every move was told */
            assert_near(sim_flow_rate(r->f[i]), want[i], 1e-8 * want[i]); /* the snap, 1e-9 */
        }
    }
    r->trace[r->ntrace++] = r->moves;
    assert_int_equal(sim_flow_resources(s), 0);
    assert_true(sim_flow_stats_get(s)->solves > 0);
    sim_flow_destroy(s);
}

static void test_random_reference(void **state)
{
    (void)state;
    run *r = malloc(sizeof(*r));
    assert_non_null(r);
    for (uint64_t seed = 1; seed <= 5; seed++)
        random_run(r, seed * 0x9e3779b97f4a7c15ULL, true);
    free(r);
}

/* Two identical runs: the same event times and moves, bit for bit. */
static void test_determinism(void **state)
{
    (void)state;
    run *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));
    assert_non_null(a);
    assert_non_null(b);
    random_run(a, 12345, false);
    random_run(b, 12345, false);
    assert_int_equal(a->ntrace, b->ntrace);
    assert_memory_equal(a->trace, b->trace, sizeof(a->trace));
    assert_true(a->moves > 0);
    free(a);
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alone),
        cmocka_unit_test(test_four_into_one),
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_slow_receiver),
        cmocka_unit_test(test_all_to_all),
        cmocka_unit_test(test_batch_finish),
        cmocka_unit_test(test_late_start),
        cmocka_unit_test(test_fast_path),
        cmocka_unit_test(test_moved_exact),
        cmocka_unit_test(test_half_duplex),
        cmocka_unit_test(test_normalized),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_random_reference),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_many_slabs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
