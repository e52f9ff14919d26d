/* test_collectives.c - chapter 04's collectives in the simulator: every
 * algorithm's data check at 2, 3, 4, 7 and 8 ranks with sizes that do not
 * divide, that a wrong result is caught, the message counts of the
 * algorithms, and the alpha-beta formulas of core/formula.h: equal to the
 * simulated time to the nanosecond where no two messages share a link, and
 * below it where they do. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chapters/04-collectives/coll.h"
#include "commlab.h"
#include "core/formula.h"
#include "core/pattern.h"
#include "core/tier.h"
#include "sim/engine.h"
#include "sim/net.h"
#include "tests/simcase.h"
#include "tests/testutil.h"

#define KiB 1024ULL
#define MiB (1024ULL * 1024ULL)

/* nvlink in configs/tiers.yaml: alpha 1 us, 300 GB/s, reduce_bandwidth
 * 680 GB/s (an A100's 2,039 GB/s of HBM2e over the 3 bytes a reduced
 * byte moves: NVIDIA's A100 datasheet). */
#define ALPHA 1e-6
#define BW 300e9
#define GAMMA (1 / 680e9)

static const int rank_counts[] = {2, 3, 4, 7, 8};

/* Runs p on k ranks with bytes; returns the run's status, *t its time. */
static int run_algo(const pattern_info *p, int k, uint64_t bytes, const cl_args *a,
                    const setup *s, double *t, uint64_t *messages)
{
    run r;
    run_pattern(&r, p->fn, k, bytes, a, s);
    int status = r.res.status;
    if (status == 0 && t)
        *t = r.res.iter_time[0];
    if (messages)
        *messages = r.res.messages;
    if (status)
        print_message("%s on %d ranks, %llu bytes: %s\n", p->name, k,
                      (unsigned long long)bytes, r.res.diag.msg);
    run_release(&r);
    return status;
}

/* Every algorithm of every collective ends with the right data on every
 * rank (each pattern checks its own), on odd and even rank counts, sizes
 * that split unevenly into blocks and one above the eager limit. */
static void test_every_algorithm_checks(void **state)
{
    (void)state;
    static const uint64_t sizes[] = {1, 13, 1003, 100003};
    const pattern_info *p;
    int runs = 0;
    for (size_t i = 0; (p = pattern_at(i)) != NULL; i++) {
        if (!p->collective)
            continue;
        for (size_t k = 0; k < sizeof rank_counts / sizeof rank_counts[0]; k++)
            for (size_t b = 0; b < sizeof sizes / sizeof sizes[0]; b++) {
                cl_args a = {.chunk = 0};
                assert_int_equal(run_algo(p, rank_counts[k], sizes[b], &a, NULL, NULL, NULL),
                                 0);
                runs++;
            }
    }
    assert_int_equal(runs, 22 * 5 * 4);
}

/* The hierarchical all-reduce in groups that do and do not divide K, and
 * the chain broadcast in pieces that do not divide n. */
static void test_groups_and_pieces(void **state)
{
    (void)state;
    const pattern_info *h = pattern_find("allreduce-hierarchical");
    const pattern_info *chain = pattern_find("broadcast-chain");
    assert_non_null(h);
    assert_non_null(chain);
    for (int k = 2; k <= 8; k++)
        for (int g = 1; g <= k; g++) {
            cl_args a = {.group = g};
            assert_int_equal(run_algo(h, k, 100003, &a, NULL, NULL, NULL), 0);
            assert_int_equal(run_algo(h, k, 24, &a, NULL, NULL, NULL), 0);
        }
    for (int k = 2; k <= 8; k++) {
        cl_args a = {.chunk = 7};
        assert_int_equal(run_algo(chain, k, 100, &a, NULL, NULL, NULL), 0);
        a.chunk = 40000;
        assert_int_equal(run_algo(chain, k, 100003, &a, NULL, NULL, NULL), 0);
    }
}

/* A reduction that leaves one rank out: the chapter's check catches it. */
static int allreduce_missing_rank(cl_comm *c, const cl_args *a)
{
    coll_red r = coll_red_of(a);
    size_t count = coll_count(&r, a->bytes);
    double *x = cl_alloc(c, count * sizeof(double));
    coll_reduce_init(c, &r, x, count);
    if (cl_rank(c) == cl_size(c) - 1)
        for (size_t i = 0; i < count; i++)
            x[i] = 0;
    CL_TRY(coll_ring_allreduce(c, &r, x, count, cl_size(c)));
    return coll_reduce_verify(c, &r, x, 0, count, "result");
}

/* The ring all-reduce of the data of a->op, reduced with the operator
 * of a->pieces - 1 instead: the check must catch every other operator. */
static int allreduce_wrong_op(cl_comm *c, const cl_args *a)
{
    coll_red r = coll_red_of(a), wrong = r;
    wrong.op = (cl_op)(a->pieces - 1);
    size_t count = coll_count(&r, a->bytes);
    void *x = cl_alloc(c, count * r.size);
    coll_reduce_init(c, &r, x, count);
    CL_TRY(coll_ring_allreduce(c, &wrong, x, count, cl_size(c)));
    return coll_reduce_verify(c, &r, x, 0, count, "result");
}

/* A broadcast whose root sends the wrong bytes to the last rank. */
static int broadcast_wrong_bytes(cl_comm *c, const cl_args *a)
{
    unsigned char *x = cl_alloc(c, a->bytes);
    int rank = cl_rank(c), k = cl_size(c);
    if (rank == 0) {
        for (int d = 1; d < k; d++) {
            cl_fill(c, x, a->bytes, coll_seed(0, d == k - 1 ? 1 : 0));
            CL_TRY(cl_send(c, x, a->bytes, d, 0));
        }
        return 0;
    }
    CL_TRY(cl_recv(c, x, a->bytes, 0, 0, NULL));
    return cl_verify(c, x, a->bytes, coll_seed(0, 0), "broadcast buffer");
}

static void test_wrong_data_caught(void **state)
{
    (void)state;
    run r;
    run_pattern(&r, allreduce_missing_rank, 4, 1000, NULL, NULL);
    assert_int_equal(r.res.status, CL_ECHECK);
    assert_non_null(strstr(r.res.diag.msg, "element 0 of the result is 6, expected 10 (sum of "
                                           "f64 over 4 ranks)"));
    run_release(&r);
    run_pattern(&r, broadcast_wrong_bytes, 3, 1000, NULL, NULL);
    assert_int_equal(r.res.status, CL_ECHECK);
    assert_non_null(strstr(r.res.diag.msg, "broadcast buffer"));
    run_release(&r);
}

static formula_args shape(int k, uint64_t bytes)
{
    return (formula_args){.ranks = k, .bytes = bytes, .alpha = ALPHA, .bandwidth = BW,
                          .eager_limit = 64 * KiB, .gamma = GAMMA};
}

static const cl_dtype dtypes[] = {CL_F64, CL_F32, CL_BF16, CL_F16, CL_I32, CL_I64};

static bool op_takes(cl_op op, cl_dtype t)
{
    return op < CL_OP_BAND || t == CL_I32 || t == CL_I64;
}

/* Every algorithm of the three reductions with every operator on every
 * type it takes, on K = 2, 3, 7 and 40 (where bf16 and f16 sums take the
 * sparse inputs of coll_data.c) and a size that splits unevenly: each
 * pattern's own check holds. */
static void test_every_op_and_dtype(void **state)
{
    (void)state;
    static const int ks[] = {2, 3, 7, 40};
    const pattern_info *p;
    int runs = 0;
    for (size_t i = 0; (p = pattern_at(i)) != NULL; i++) {
        if (!p->collective || !p->collective->reduces)
            continue;
        for (size_t k = 0; k < sizeof ks / sizeof ks[0]; k++)
            for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; t++)
                for (int op = CL_OP_SUM; op <= CL_OP_BXOR; op++) {
                    if (!op_takes((cl_op)op, dtypes[t]))
                        continue;
                    cl_args a = {.op = (cl_op)op, .dtype = dtypes[t]};
                    if (run_algo(p, ks[k], 1003, &a, NULL, NULL, NULL))
                        fail_msg("%s, %s of %s", p->name, cl_op_name(a.op),
                                 cl_dtype_name(a.dtype));
                    runs++;
                }
    }
    assert_int_equal(runs, 10 * 4 * (5 * 6 + 3 * 2));
}

/* The data of each operator, reduced with any other operator the type
 * takes, fails the check, on 4 ranks and on 40 (sparse sums in bf16 and
 * f16): a sum is caught where a max, a min or a product is asked, and so
 * on for every pair. */
static void test_wrong_op_caught(void **state)
{
    (void)state;
    static const int ks[] = {4, 40};
    for (size_t k = 0; k < 2; k++)
        for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; t++)
            for (int op = CL_OP_SUM; op <= CL_OP_BXOR; op++)
                for (int other = CL_OP_SUM; other <= CL_OP_BXOR; other++) {
                    if (other == op || !op_takes((cl_op)op, dtypes[t]) ||
                        !op_takes((cl_op)other, dtypes[t]))
                        continue;
                    cl_args a = {.op = (cl_op)op, .dtype = dtypes[t], .pieces = other + 1};
                    run r;
                    run_pattern(&r, allreduce_wrong_op, ks[k], 1000, &a, NULL);
                    if (r.res.status != CL_ECHECK)
                        fail_msg("K = %d, %s data reduced with %s in %s: status %d", ks[k],
                                 cl_op_name(a.op), cl_op_name((cl_op)other),
                                 cl_dtype_name(a.dtype), r.res.status);
                    run_release(&r);
                }
}

/* Gamma 0 (reduce_bandwidth inf) gives the alpha-beta figures of the
 * chapter before gamma: the ring all-reduce on 8 nvlink ranks at 8 MiB is
 * 2(K - 1)(alpha + n / (K B)) = 14 (1 us + 1 MiB / 300 GB/s) = 62.933 us,
 * and with the tier's gamma the same plus (K - 1) n gamma / K = 7 MiB /
 * 680 GB/s = 10.794 us. */
static void test_gamma_zero_is_alpha_beta(void **state)
{
    (void)state;
    cl_tier free_tier = {.name = "free", .alpha = ALPHA, .bandwidth = BW,
                         .reduce_bandwidth = INFINITY};
    sim_net *net;
    assert_int_equal(sim_net_create_tier(&net, &free_tier, 8, NULL), 0);
    setup s = {.net = net, .no_sharing = true, .no_payload = true};
    setup g = {.no_sharing = true, .no_payload = true};
    const pattern_info *ring = pattern_find("allreduce-ring");
    double t0, tg;
    assert_int_equal(run_algo(ring, 8, 8 * MiB, NULL, &s, &t0, NULL), 0);
    assert_int_equal(run_algo(ring, 8, 8 * MiB, NULL, &g, &tg, NULL), 0);
    assert_near(t0, 14 * (ALPHA + (double)MiB / BW), 1e-12);
    assert_near(t0, 62.933e-6, 1e-9);
    assert_near(tg - t0, 7.0 * (double)MiB / 680e9, 1e-12);
    assert_near(tg - t0, 10.794e-6, 1e-9);
    /* And every reduction's simulated time is its formula with gamma 0. */
    const pattern_info *p;
    for (size_t i = 0; (p = pattern_at(i)) != NULL; i++) {
        if (!p->collective || !p->collective->reduces)
            continue;
        formula_args f = shape(8, 8 * MiB);
        f.gamma = 0;
        assert_int_equal(run_algo(p, 8, 8 * MiB, NULL, &s, &t0, NULL), 0);
        assert_near(t0, p->formula(&f), 1e-9);
    }
    sim_net_destroy(net);
}

/* Where gamma changes the winner: 16 ranks on infiniband (3 us, 50 GB/s),
 * 512 KiB, each message alone.  Without gamma the tree all-reduce beats
 * the ring (8 (3 us + 10.486 us) = 107.89 us against 30 (3 us + 0.655 us)
 * = 109.66 us: below exercise 4.5's crossover, 538776 B); at 680 GB/s the
 * tree's parents reduce whole buffers, 7 n gamma on its longest path
 * (5.397 us), the ring (K - 1) n gamma / K (0.723 us), and the ring wins:
 * 113.29 us against 110.38 us. */
static void test_gamma_changes_the_winner(void **state)
{
    (void)state;
    tier_set ts = {0};
    cl_tier ib = *course_tier(&ts, "infiniband");
    tier_set_release(&ts);
    const pattern_info *tree = pattern_find("allreduce-tree"), *ring = pattern_find("allreduce-ring");
    double t[2][2]; /* [gamma 0, tier's][tree, ring] */
    for (int g = 0; g < 2; g++) {
        if (!g)
            ib.reduce_bandwidth = INFINITY;
        else
            ib.reduce_bandwidth = 680e9;
        sim_net *net;
        assert_int_equal(sim_net_create_tier(&net, &ib, 16, NULL), 0);
        setup s = {.net = net, .no_sharing = true, .no_payload = true};
        formula_args f = {.ranks = 16, .bytes = 512 * KiB, .alpha = 3e-6, .bandwidth = 50e9,
                          .eager_limit = 64 * KiB, .gamma = tier_gamma(&ib)};
        assert_int_equal(run_algo(tree, 16, 512 * KiB, NULL, &s, &t[g][0], NULL), 0);
        assert_int_equal(run_algo(ring, 16, 512 * KiB, NULL, &s, &t[g][1], NULL), 0);
        assert_near(t[g][0], tree->formula(&f), 1e-9);
        assert_near(t[g][1], ring->formula(&f), 1e-9);
        sim_net_destroy(net);
    }
    assert_near(t[0][0], 107.886e-6, 1e-9);
    assert_near(t[0][1], 109.661e-6, 1e-9);
    assert_near(t[1][0], 113.283e-6, 1e-9);
    assert_near(t[1][1], 110.384e-6, 1e-9);
    assert_true(t[0][0] < t[0][1]); /* the tree wins without gamma */
    assert_true(t[1][1] < t[1][0]); /* the ring with it */
}

/* Messages per all-reduce of each algorithm on K = 8 (a power of two) and
 * K = 7 (folded): from the algorithms' steps. */
static void test_message_counts(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        int k;
        uint64_t messages;
    } want[] = {
        {"allreduce-naive", 8, 2 * 7},          /* 2(K-1) hops */
        {"allreduce-ring", 8, 2 * 7 * 8},       /* 2(K-1) steps, every rank */
        {"allreduce-rd", 8, 3 * 8},             /* lg K steps, every rank */
        {"allreduce-rd", 7, 2 * 4 + 3 * 2},     /* p = 4 swap twice; 3 fold, 3 unfold */
        {"allreduce-rabenseifner", 8, 2 * 3 * 8},
        {"allreduce-tree", 8, 2 * 7},           /* K-1 edges, up and down */
        {"allreduce-tree", 7, 2 * 6},
        {"broadcast-linear", 7, 6},
        {"broadcast-binomial", 7, 6},
        {"reduce-binomial", 7, 6},
        {"gather-binomial", 7, 6},
        {"scatter-binomial", 7, 6},
        {"allgather-ring", 7, 7 * 6},
        {"allgather-rd", 8, 3 * 8},
        {"reducescatter-rh", 8, 3 * 8},
        {"alltoall-linear", 7, 7 * 6},
        {"alltoall-pairwise", 7, 7 * 6},
        {"barrier-dissemination", 7, 3 * 7},    /* ceil(lg 7) rounds, every rank */
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const pattern_info *p = pattern_find(want[i].name);
        assert_non_null(p);
        uint64_t m = 0;
        assert_int_equal(run_algo(p, want[i].k, 64 * KiB, NULL, NULL, NULL, &m), 0);
        if (m != want[i].messages)
            fail_msg("%s on %d ranks: %llu messages, expected %llu", want[i].name, want[i].k,
                     (unsigned long long)m, (unsigned long long)want[i].messages);
    }
}


/* --sharing none prices every message alone: every algorithm's time is
 * its formula, to the nanosecond, wherever formula_exact says the figure
 * is exact (blocks of equal size; K a power of two for the trees and the
 * recursive ones).  Sizes on both sides of the eager limit. */
static void test_formula_exact_alone(void **state)
{
    (void)state;
    static const uint64_t sizes[] = {8 * 8 * 8, 64 * KiB, 8 * MiB};
    setup s = {.no_sharing = true, .no_payload = true};
    const pattern_info *p;
    int exact = 0;
    for (size_t i = 0; (p = pattern_at(i)) != NULL; i++) {
        if (!p->collective)
            continue;
        for (size_t k = 0; k < sizeof rank_counts / sizeof rank_counts[0]; k++)
            for (size_t b = 0; b < sizeof sizes / sizeof sizes[0]; b++) {
                int n = rank_counts[k];
                uint64_t bytes = sizes[b] / 8 * (uint64_t)n * 7; /* divides by 8K */
                formula_args f = shape(n, bytes);
                if (!formula_exact(p->formula, &f))
                    continue;
                double t;
                assert_int_equal(run_algo(p, n, bytes, NULL, &s, &t, NULL), 0);
                double want = p->formula(&f);
                if (!(fabs(t - want) <= 1e-9))
                    fail_msg("%s, K = %d, n = %llu: simulated %.12g s, formula %s = %.12g s",
                             p->name, n, (unsigned long long)bytes, t, p->formula_text, want);
                exact++;
            }
    }
    /* Every algorithm is exact on 2, 4 and 8 ranks with these sizes. */
    assert_true(exact >= 22 * 3 * 3);
    /* The hierarchical all-reduce in groups of 2 and 4 of 8 ranks. */
    const pattern_info *h = pattern_find("allreduce-hierarchical");
    for (int g = 2; g <= 4; g += 2)
        for (size_t b = 0; b < sizeof sizes / sizeof sizes[0]; b++) {
            cl_args a = {.group = g};
            formula_args f = shape(8, sizes[b] * 8);
            f.group = g;
            double t;
            assert_true(formula_exact(h->formula, &f));
            assert_int_equal(run_algo(h, 8, f.bytes, &a, &s, &t, NULL), 0);
            assert_near(t, h->formula(&f), 1e-9);
        }
}

/* With shared ports (a --tier run, max-min) the algorithms whose ranks
 * send or receive one message at a time still match their formula, and
 * the ones that post many at once through one port are slower than it by
 * what that port carries. */
static void test_formula_where_ports_are_shared(void **state)
{
    (void)state;
    setup s = {.no_payload = true};
    int k = 8;
    uint64_t bytes = 8 * MiB;
    formula_args f = shape(k, bytes);
    static const char *const alone[] = {"broadcast-binomial", "reduce-binomial",
                                        "allgather-ring", "reducescatter-ring",
                                        "allreduce-ring", "allreduce-naive",
                                        "alltoall-pairwise", "broadcast-chain"};
    for (size_t i = 0; i < sizeof alone / sizeof alone[0]; i++) {
        const pattern_info *p = pattern_find(alone[i]);
        double t;
        assert_int_equal(run_algo(p, k, bytes, NULL, &s, &t, NULL), 0);
        assert_near(t, p->formula(&f), 1e-9);
    }
    /* Rank 0's port carries K - 1 copies: alpha + (K - 1) n / B. */
    double t;
    assert_int_equal(run_algo(pattern_find("broadcast-linear"), k, bytes, NULL, &s, &t, NULL), 0);
    assert_near(t, ALPHA + 7.0 * (double)bytes / BW, 1e-9);
    assert_true(t > formula_broadcast_linear(&f) + 1e-6);
    /* Every port carries K - 1 blocks of n / K. */
    assert_int_equal(run_algo(pattern_find("alltoall-linear"), k, bytes, NULL, &s, &t, NULL), 0);
    assert_near(t, ALPHA + 7.0 * (double)bytes / 8 / BW, 1e-9);
    assert_true(t > formula_alltoall_linear(&f) + 1e-6);
    /* A tree's parent takes both children's n at once, going up. */
    assert_int_equal(run_algo(pattern_find("allreduce-tree"), k, bytes, NULL, &s, &t, NULL), 0);
    assert_true(t > formula_allreduce_tree(&f) + 1e-6);
}

/* A request per peer lives on the heap (cl_array), not on the rank's
 * stack: the linear algorithms, chapter 03's incast, the hierarchical
 * all-reduce's groups and the grid's run past the 256 ranks they once
 * stopped at, data checked,
 * and the linear all-to-all at 512 ranks, 1 MiB a block, on tier
 * infiniband takes what every port carries: alpha + (K - 1) n / (K B) =
 * 3 us + 511 MiB / 50 GB/s = 10.719447 ms (SimGrid 3.32 simulating the
 * same posts on a star of split-duplex host links, CM02 with exact
 * alpha-beta flags, prints 0.0107194467 s: `simgrid_ref alltoall star
 * 512 1048576 3e-6 50e9`, sim/simgrid/reference.c). */
static void test_past_256_ranks(void **state)
{
    (void)state;
    static const char *const linear[] = {"broadcast-linear", "reduce-linear", "gather-linear",
                                         "scatter-linear", "alltoall-linear", "incast"};
    setup payload = {0}, sized = {.tier = "infiniband", .no_payload = true};
    for (size_t i = 0; i < sizeof linear / sizeof linear[0]; i++)
        assert_int_equal(run_algo(pattern_find(linear[i]), 300, 8 * 300, NULL, &payload, NULL,
                                  NULL), 0);
    cl_args g = {.group = 2};
    assert_int_equal(run_algo(pattern_find("allreduce-hierarchical"), 600, 8 * 600, &g,
                              &payload, NULL, NULL), 0);
    assert_int_equal(run_algo(pattern_find("grid"), 600, 64, &g, &payload, NULL, NULL), 0);
    double t;
    uint64_t messages;
    assert_int_equal(run_algo(pattern_find("alltoall-linear"), 512, 512 * MiB, NULL, &sized, &t,
                              &messages), 0);
    assert_int_equal(messages, 512 * 511);
    assert_near(t, 3e-6 + 511.0 * (double)MiB / 50e9, 1e-12);
    assert_near(t, 10.719447e-3, 5e-10);
}

/* The table: every collective's default algorithm exists, names are
 * COLLECTIVE-ALGO, and the bus bandwidth factors are nccl-tests'. */
static void test_registry(void **state)
{
    (void)state;
    const collective_info *c;
    size_t ncoll = 0, nalgo = 0;
    for (size_t i = 0; (c = collective_at(i)) != NULL; i++, ncoll++) {
        assert_non_null(collective_algo(c, c->algo));
        const pattern_info *p;
        for (size_t j = 0; (p = collective_algo_at(c, j)) != NULL; j++, nalgo++) {
            char name[64];
            snprintf(name, sizeof name, "%s-%s", c->name, p->algo);
            assert_string_equal(p->name, name);
            assert_ptr_equal(pattern_find(name), p);
            assert_non_null(p->formula);
        }
    }
    assert_int_equal(ncoll, 9);
    assert_int_equal(nalgo, 22);
    assert_null(collective_algo(collective_find("allreduce"), "nope"));
    char list[128];
    assert_string_equal(collective_algo_list(collective_find("alltoall"), list, sizeof list),
                        "linear, pairwise");
    /* nccl-tests (doc/PERFORMANCE.md): all-reduce 2(n-1)/n, all-gather,
     * reduce-scatter and all-to-all (n-1)/n, broadcast and reduce 1. */
    assert_near(pattern_bus_factor(collective_find("allreduce")->bus, 8), 1.75, 1e-15);
    assert_near(pattern_bus_factor(collective_find("allgather")->bus, 8), 0.875, 1e-15);
    assert_near(pattern_bus_factor(collective_find("reducescatter")->bus, 4), 0.75, 1e-15);
    assert_near(pattern_bus_factor(collective_find("alltoall")->bus, 2), 0.5, 1e-15);
    assert_near(pattern_bus_factor(collective_find("broadcast")->bus, 8), 1, 1e-15);
    assert_near(pattern_bus_factor(collective_find("reduce")->bus, 8), 1, 1e-15);
    assert_near(pattern_bus_factor(collective_find("barrier")->bus, 8), 0, 1e-15);
}

/* Blocks: the remainder goes to the first blocks, nothing is lost. */
static void test_blocks(void **state)
{
    (void)state;
    size_t total = 0;
    for (int j = 0; j < 7; j++) {
        assert_int_equal(coll_first(100, 7, j), total);
        assert_int_equal(coll_len(100, 7, j), j < 2 ? 15 : 14);
        total += coll_len(100, 7, j);
    }
    assert_int_equal(total, 100);
    assert_int_equal(coll_span(100, 7, 1, 3), 15 + 14 + 14);
    coll_fold f;
    coll_fold_init(&f, 5, 7); /* p = 4, r = 3: pairs (0,1) (2,3) (4,5), rank 6 alone */
    assert_int_equal(f.p, 4);
    assert_int_equal(f.v, -1);
    assert_int_equal(f.buddy, 4);
    coll_fold_init(&f, 6, 7);
    assert_int_equal(f.v, 3);
    assert_int_equal(f.buddy, -1);
    assert_int_equal(coll_real_lo(&f, 2), 4);
    assert_int_equal(coll_real_hi(&f, 2), 5);
    assert_int_equal(coll_real_lo(&f, 3), 6);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blocks),
        cmocka_unit_test(test_registry),
        cmocka_unit_test(test_every_algorithm_checks),
        cmocka_unit_test(test_groups_and_pieces),
        cmocka_unit_test(test_wrong_data_caught),
        cmocka_unit_test(test_every_op_and_dtype),
        cmocka_unit_test(test_wrong_op_caught),
        cmocka_unit_test(test_gamma_zero_is_alpha_beta),
        cmocka_unit_test(test_gamma_changes_the_winner),
        cmocka_unit_test(test_message_counts),
        cmocka_unit_test(test_formula_exact_alone),
        cmocka_unit_test(test_formula_where_ports_are_shared),
        cmocka_unit_test(test_past_256_ranks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
