/* test_net.c - the simulator's network: tier meshes, dimension and explicit
 * topologies, their routes and their load errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commlab.h"
#include "tests/testutil.h"
#include "sim/net.h"

#define MiB (1024ULL * 1024ULL)

static tier_set tiers_of(void)
{
    tier_set s;
    cl_diag d = {{0}};
    if (tier_set_load(&s, "configs/tiers.yaml", &d))
        fail_msg("%s", d.msg);
    return s;
}

static sim_net *load(const char *yaml, const tier_set *s)
{
    sim_net *n;
    cl_diag d = {{0}};
    if (sim_net_load_string(&n, "t.yaml", yaml, s, &d))
        fail_msg("%s\nfor:\n%s", d.msg, yaml);
    return n;
}

/* The route src->dst is a walk of links from src to dst whose alpha sum,
 * min bandwidth and length are exactly what sim_net_path says. */
static void check_route(sim_net *n, int src, int dst)
{
    double alpha, bw, sum = 0, min = INFINITY;
    int hops, at = src;
    sim_net_path(n, src, dst, &alpha, &bw, &hops);
    const sim_link_dir *h;
    size_t nh;
    assert_int_equal(sim_net_route(n, src, dst, &h, &nh), 0);
    if ((int)nh != hops)
        fail_msg("%d->%d: route has %zu links, path says %d hops", src, dst, nh, hops);
    for (size_t i = 0; i < nh; i++) {
        sim_link l;
        assert_int_equal(sim_net_link(n, h[i].link, &l), 0);
        int from = h[i].dir ? l.b : l.a, to = h[i].dir ? l.a : l.b;
        if (from != at)
            fail_msg("%d->%d: hop %zu leaves %d, the walk is at %d", src, dst, i, from, at);
        at = to;
        sum += l.alpha;
        min = fmin(min, l.bandwidth);
    }
    assert_int_equal(at, dst);
    assert_near(sum, alpha, 0);
    assert_near(min, bw, 0);
}

static void check_all_routes(sim_net *n)
{
    for (int s = 0; s < sim_net_ranks(n); s++)
        for (int t = 0; t < sim_net_ranks(n); t++)
            if (s != t)
                check_route(n, s, t);
}

static void expect_path(sim_net *n, int src, int dst, double alpha, double bw, int hops)
{
    double a, b;
    int h;
    sim_net_path(n, src, dst, &a, &b, &h);
    if (h != hops)
        fail_msg("%d->%d: %d hops, want %d", src, dst, h, hops);
    assert_near(a, alpha, 1e-18);
    assert_near(b, bw, 0);
}

/* The course's tier table: one 256 MiB message costs 0.90 ms on NVLink,
 * 10.74 ms on PCIe, 5.37 ms on InfiniBand NDR and 86.62 ms on 25G Ethernet
 * (source: the course's alpha-beta chapter, its tier table with alpha
 * 1/2/3/30 us and bandwidth 300/25/50/3.1 GB/s).  A tier mesh must give
 * alpha + n/B exactly, between any pair. */
static void test_mesh_price_table(void **state)
{
    (void)state;
    static const struct {
        const char *tier, *ms;
    } want[] = {{"nvlink", "0.90"}, {"pcie", "10.74"}, {"infiniband", "5.37"},
                {"ethernet", "86.62"}};
    tier_set s = tiers_of();
    for (size_t i = 0; i < 4; i++) {
        const cl_tier *t = tier_set_find(&s, want[i].tier);
        sim_net *n;
        assert_int_equal(sim_net_create_tier(&n, t, 8, NULL), 0);
        char ms[32];
        snprintf(ms, sizeof ms, "%.2f", sim_net_time(n, 6, 2, 256 * MiB) * 1e3);
        assert_string_equal(ms, want[i].ms);
        assert_true(sim_net_time(n, 0, 7, 256 * MiB) == t->alpha + 256.0 * MiB / t->bandwidth);
        expect_path(n, 3, 1, t->alpha, t->bandwidth, 1);
        assert_int_equal(sim_net_links(n), 28);
        check_all_routes(n);
        char want_desc[64];
        snprintf(want_desc, sizeof want_desc, "tier %s, full mesh of 8 ranks", t->name);
        assert_string_equal(sim_net_describe(n), want_desc);
        sim_net_destroy(n);
    }
    tier_set_release(&s);
}

/* The spacing of back-to-back messages: n / bandwidth on a tier mesh and
 * on a machine segment without a gap, the segment's gap + n / gap_bandwidth
 * where it has one; for a message whose receive was posted (`posted`), the
 * segment's posted gap where it has one, else its gap. */
static void test_gap(void **state)
{
    (void)state;
    cl_tier t = {.name = "x", .alpha = 1e-6, .bandwidth = 2e9};
    sim_net *n;
    assert_int_equal(sim_net_create_tier(&n, &t, 2, NULL), 0);
    assert_true(sim_net_gap(n, 4096, 2e9, false) == 4096 / 2e9);
    assert_true(sim_net_gap(n, 4096, 2e9, true) == 4096 / 2e9);
    sim_net_destroy(n);

    machine m;
    cl_diag d = {{0}};
    if (machine_load_string(&m, "m.yaml",
                            "host: h\nbackend: shm\neager_limit: 64KiB\nsegments:\n"
                            "  - {upto: 1KiB, alpha: 300ns, bandwidth: 2GB/s, gap: 120ns, "
                            "gap_bandwidth: 8GB/s, posted_gap: 40ns, "
                            "posted_gap_bandwidth: 16GB/s}\n"
                            "  - {upto: 32KiB, alpha: 1us, bandwidth: 4GB/s, gap: 200ns, "
                            "gap_bandwidth: 5GB/s}\n"
                            "  - {upto: 64MiB, alpha: 4us, bandwidth: 10GB/s}\n",
                            &d))
        fail_msg("%s", d.msg);
    assert_int_equal(sim_net_create_machine(&n, &m, 2, NULL), 0);
    double a, bw;
    int hops;
    sim_net_cost(n, 0, 1, 512, &a, &bw, &hops);
    assert_near(sim_net_gap(n, 512, bw, false), 120e-9 + 512 / 8e9, 1e-18);
    assert_near(sim_net_gap(n, 512, bw, true), 40e-9 + 512 / 16e9, 1e-18);
    sim_net_cost(n, 0, 1, 8192, &a, &bw, &hops); /* no posted gap: the gap */
    assert_near(sim_net_gap(n, 8192, bw, true), 200e-9 + 8192 / 5e9, 1e-18);
    sim_net_cost(n, 0, 1, 1 << 20, &a, &bw, &hops);
    assert_near(sim_net_gap(n, 1 << 20, bw, false), (1 << 20) / 10e9, 1e-18);
    assert_near(sim_net_gap(n, 1 << 20, bw, true), (1 << 20) / 10e9, 1e-18);
    sim_net_destroy(n);
}

/* sim_net_flow_mesh answers, once, what sim_net_flow_route answers for
 * every pair of a tier mesh (the engine prices each message from it), and
 * nothing for a topology or a machine mesh. */
static void test_flow_mesh(void **state)
{
    (void)state;
    cl_tier t = {.name = "x", .alpha = 1.5e-6, .bandwidth = 25e9};
    sim_net *n;
    assert_int_equal(sim_net_create_tier(&n, &t, 5, NULL), 0);
    double bw = 0, alpha = 0;
    assert_true(sim_net_flow_mesh(n, &bw, &alpha));
    assert_true(bw == 25e9 && alpha == 1.5e-6);
    for (int s = 0; s < 5; s++)
        for (int d = 0; d < 5; d++) {
            if (s == d)
                continue;
            int64_t ids[4];
            double cap[4], a = -1;
            assert_int_equal(sim_net_flow_route(n, s, d, ids, cap, 4, &a), 2);
            assert_true(ids[0] == 2 * s && ids[1] == 2 * d + 1);
            assert_true(cap[0] == bw && cap[1] == bw && a == alpha);
        }
    sim_net_destroy(n);

    n = load("topology: [Switch, Switch]\nnpus_count: [4, 2]\n"
             "bandwidth: [300GB/s, 50GB/s]\nlatency: [1us, 3us]\n",
             NULL);
    bw = alpha = -1;
    assert_false(sim_net_flow_mesh(n, &bw, &alpha));
    assert_true(bw == -1 && alpha == -1); /* nothing written */
    sim_net_destroy(n);

    machine m;
    cl_diag d = {{0}};
    if (machine_load_string(&m, "m.yaml",
                            "host: h\nbackend: shm\neager_limit: 64KiB\nsegments:\n"
                            "  - {upto: 64MiB, alpha: 4us, bandwidth: 10GB/s}\n",
                            &d))
        fail_msg("%s", d.msg);
    assert_int_equal(sim_net_create_machine(&n, &m, 2, NULL), 0);
    assert_false(sim_net_flow_mesh(n, &bw, &alpha));
    assert_false(sim_net_can_share(n));
    sim_net_destroy(n);
}

/* A million ranks cost no memory per rank: link ids are pair indices. */
static void test_mesh_million(void **state)
{
    (void)state;
    cl_tier t = {"nvlink", "", 1e-6, 300e9, 0};
    sim_net *n;
    cl_diag d = {{0}};
    assert_int_equal(sim_net_create_tier(&n, &t, 1000000, &d), 0);
    assert_int_equal(sim_net_ranks(n), 1000000);
    assert_true(sim_net_links(n) == 499999500000LL);
    expect_path(n, 999999, 0, 1e-6, 300e9, 1);
    const sim_link_dir *h;
    size_t nh;
    sim_net_route(n, 999999, 12345, &h, &nh);
    assert_int_equal(nh, 1);
    assert_true(h[0].link == 999999LL * 999998 / 2 + 12345);
    assert_int_equal(h[0].dir, 1);
    check_route(n, 999999, 12345);
    check_route(n, 0, 999999);
    sim_link l;
    assert_int_equal(sim_net_link(n, sim_net_links(n) - 1, &l), 0);
    assert_int_equal(l.a, 999998);
    assert_int_equal(l.b, 999999);
    assert_int_equal(sim_net_link(n, sim_net_links(n), &l), CL_ERANGE);
    sim_net_destroy(n);
    assert_int_equal(sim_net_create_tier(&n, &t, 0, &d), CL_EINVAL);
    assert_null(n);
    assert_string_equal(d.msg, "ranks must be in 1..16777216, got 0");
}

/* Two Switch dimensions: 4 GPUs per host on NVLink, 2 hosts on IB. */
static void test_dims_switch(void **state)
{
    (void)state;
    sim_net *n = load("topology: [Switch, Switch]\nnpus_count: [4, 2]\n"
                      "bandwidth: [300GB/s, 50GB/s]\nlatency: [1us, 3us]\n",
                      NULL);
    assert_int_equal(sim_net_ranks(n), 8);
    assert_int_equal(sim_net_vertices(n), 8 + 2 + 4);
    assert_true(sim_net_links(n) == 16);
    assert_string_equal(sim_net_describe(n),
                        "topology t.yaml: 8 devices, 6 switches, 16 links (Switch 4 x Switch 2)");
    expect_path(n, 0, 3, 2e-6, 300e9, 2);          /* intra-host: 2 NVLink hops */
    expect_path(n, 1, 5, 6e-6, 50e9, 2);           /* same GPU index: the IB switch */
    expect_path(n, 1, 6, 1e-6 + 1e-6 + 3e-6 + 3e-6, 50e9, 4); /* both */
    assert_true(sim_net_time(n, 1, 6, 256 * MiB) == 8e-6 + 256.0 * MiB / 50e9);
    check_all_routes(n);
    const sim_link_dir *h;
    size_t nh;
    char a[32], b[32];
    sim_link l;
    sim_net_route(n, 1, 6, &h, &nh);
    sim_net_link(n, h[1].link, &l);
    assert_string_equal(sim_net_vertex_name(n, l.b, a, sizeof a), "sw0.0");
    sim_net_link(n, h[2].link, &l);
    assert_string_equal(sim_net_vertex_name(n, l.b, a, sizeof a), "sw1.2");
    assert_string_equal(sim_net_vertex_name(n, l.a, b, sizeof b), "npu2");
    sim_net_destroy(n);
}

/* Rings go the shorter way round (forward on a tie); 3 dims compose. */
static void test_dims_ring_full(void **state)
{
    (void)state;
    tier_set s = tiers_of();
    sim_net *n = load("topology: [Ring]\nnpus_count: [8]\ntier: [nvlink]\n", &s);
    assert_true(sim_net_links(n) == 8);
    expect_path(n, 0, 7, 1e-6, 300e9, 1);
    expect_path(n, 0, 3, 3e-6, 300e9, 3);
    expect_path(n, 0, 5, 3e-6, 300e9, 3);
    expect_path(n, 6, 1, 3e-6, 300e9, 3);
    expect_path(n, 0, 4, 4e-6, 300e9, 4);
    const sim_link_dir *h;
    size_t nh;
    sim_net_route(n, 0, 4, &h, &nh);
    assert_int_equal(h[0].dir, 0); /* forward */
    sim_net_route(n, 0, 5, &h, &nh);
    assert_true(h[0].link == 7 && h[0].dir == 1); /* backward over link 7-0 */
    check_all_routes(n);
    sim_net_destroy(n);

    n = load("topology: [Ring, FullyConnected, Switch]\nnpus_count: [4, 3, 2]\n"
             "tier: [nvlink, pcie, infiniband]\nbandwidth: [300GB/s, 20GB/s, 50GB/s]\n",
             &s);
    assert_int_equal(sim_net_ranks(n), 24);
    assert_true(sim_net_links(n) == 6 * 4 + 8 * 3 + 12 * 2);
    expect_path(n, 0, 2, 2e-6, 300e9, 2);           /* ring, 2 steps */
    expect_path(n, 0, 8, 2e-6, 20e9, 1);            /* full: one link, bandwidth overridden */
    expect_path(n, 0, 12, 6e-6, 50e9, 2);           /* switch */
    expect_path(n, 0, 12 + 8 + 3, 1e-6 + 2e-6 + 6e-6, 20e9, 4);
    check_all_routes(n);
    sim_net_destroy(n);

    n = load("topology: [Ring, Ring]\nnpus_count: [2, 1]\nlatency: [1us, 1us]\n"
             "bandwidth: [1GB/s, 1GB/s]\n", NULL);
    assert_true(sim_net_links(n) == 1);
    check_all_routes(n);
    sim_net_destroy(n);
    tier_set_release(&s);
}

/* Explicit hosts, switches and links: tier names, lanes, half duplex. */
static void test_explicit(void **state)
{
    (void)state;
    tier_set s = tiers_of();
    sim_net *n = load("hosts:\n"
                      "  - {name: node0, devices: 4, switch: nvs0, tier: nvlink}\n"
                      "  - {name: node1, devices: [x, y], switch: nvs1, tier: nvlink}\n"
                      "switches: [ib0]\n"
                      "links:\n"
                      "  - {a: nvs0, b: ib0, tier: infiniband, lanes: 4}\n"
                      "  - {a: ib0, b: nvs1, alpha: 3us, bandwidth: 50GB/s, duplex: half}\n",
                      &s);
    assert_int_equal(sim_net_ranks(n), 6);
    assert_int_equal(sim_net_vertices(n), 9);
    assert_string_equal(sim_net_describe(n), "topology t.yaml: 6 devices, 3 switches, 8 links");
    char buf[32];
    assert_string_equal(sim_net_vertex_name(n, 5, buf, sizeof buf), "node1.y");
    assert_string_equal(sim_net_vertex_name(n, 6, buf, sizeof buf), "ib0");
    sim_link l;
    sim_net_link(n, 6, &l);
    assert_near(l.bandwidth, 200e9, 0);
    assert_false(l.half_duplex);
    sim_net_link(n, 7, &l);
    assert_true(l.half_duplex && l.a == 6 && l.b == 8);
    expect_path(n, 0, 3, 2e-6, 300e9, 2);
    expect_path(n, 1, 4, 1e-6 + 3e-6 + 3e-6 + 1e-6, 50e9, 4);
    const sim_link_dir *h;
    size_t nh;
    sim_net_route(n, 5, 0, &h, &nh);
    assert_int_equal(nh, 4);
    assert_true(h[0].link == 5 && h[1].link == 7 && h[1].dir == 1 && h[2].link == 6 &&
                h[2].dir == 1 && h[3].link == 0 && h[3].dir == 1);
    check_all_routes(n);
    sim_net_destroy(n);

    /* A square 0-1-3, 0-2-3: the tie goes to the lowest link ids; ranks as
     * endpoints. */
    n = load("devices: 4\nlinks:\n  - {a: 0, b: gpu2, alpha: 1us, bandwidth: 1GB/s}\n"
             "  - {a: 2, b: 3, alpha: 1us, bandwidth: 1GB/s}\n"
             "  - {a: 0, b: 1, alpha: 1us, bandwidth: 1GB/s}\n"
             "  - {a: 1, b: 3, alpha: 1us, bandwidth: 1GB/s}\n",
             NULL);
    sim_net_route(n, 0, 3, &h, &nh);
    assert_true(nh == 2 && h[0].link == 0 && h[1].link == 1);
    sim_net_route(n, 3, 0, &h, &nh);
    assert_true(nh == 2 && h[0].link == 1 && h[0].dir == 1 && h[1].link == 0);
    check_all_routes(n);
    sim_net_destroy(n);
    tier_set_release(&s);
}

/* The example files load, and the explicit ring matches the dimension ring. */
static void test_examples(void **state)
{
    (void)state;
    static const char *const files[] = {"dgx-2node", "pcie-4gpu", "ring-8", "2x4-nvlink-ib"};
    static const int ranks[] = {16, 4, 8, 8};
    tier_set s = tiers_of();
    for (size_t i = 0; i < 4; i++) {
        char path[128];
        snprintf(path, sizeof path, "configs/topologies/%s.yaml", files[i]);
        sim_net *n;
        cl_diag d = {{0}};
        if (sim_net_load(&n, path, &s, &d))
            fail_msg("%s", d.msg);
        assert_int_equal(sim_net_ranks(n), ranks[i]);
        check_all_routes(n);
        sim_net_destroy(n);
    }
    sim_net *a, *b;
    assert_int_equal(sim_net_load(&a, "configs/topologies/ring-8.yaml", &s, NULL), 0);
    b = load("topology: [Ring]\nnpus_count: [8]\ntier: [nvlink]\n", &s);
    for (int x = 0; x < 8; x++)
        for (int y = 0; y < 8; y++)
            if (x != y) {
                double a1, b1, a2, b2;
                int h1, h2;
                sim_net_path(a, x, y, &a1, &b1, &h1);
                sim_net_path(b, x, y, &a2, &b2, &h2);
                assert_int_equal(h1, h2);
                assert_true(a1 == a2 && b1 == b2);
            }
    sim_net_destroy(a);
    sim_net_destroy(b);
    tier_set_release(&s);
}

/* A ring of 2,000 explicit devices has more sources than the route cache
 * holds: evicted trees are rebuilt and answers stay the same. */
static void test_cache_eviction(void **state)
{
    (void)state;
    enum { N = 2000 };
    size_t cap = 64 + (size_t)N * 64;
    char *yaml = malloc(cap);
    assert_non_null(yaml);
    int len = snprintf(yaml, cap, "devices: %d\nlinks:\n", N);
    for (int i = 0; i < N; i++)
        len += snprintf(yaml + len, cap - (size_t)len,
                        "  - {a: %d, b: %d, alpha: 1us, bandwidth: 1GB/s}\n", i, (i + 1) % N);
    sim_net *n = load(yaml, NULL);
    free(yaml);
    for (int round = 0; round < 2; round++)
        for (int src = 0; src < N; src += 7) {
            int dst = (src + 3 * round + 600) % N, fwd = (dst - src + N) % N;
            int hops = fwd <= N - fwd ? fwd : N - fwd;
            double a, bw;
            int h;
            sim_net_path(n, src, dst, &a, &bw, &h);
            assert_int_equal(h, hops);
            if (src % 91 == 0)
                check_route(n, src, dst);
        }
    sim_net_destroy(n);
}

/* Loads YAML that must fail: the code, the whole file:line:column prefix
 * and a fragment of the rest. */
static void bad(const char *yaml, const char *where, const char *what)
{
    tier_set s = tiers_of();
    sim_net *n = (sim_net *)&s;
    cl_diag d = {{0}};
    int err = sim_net_load_string(&n, "t.yaml", yaml, &s, &d);
    tier_set_release(&s);
    if (err != CL_ECONFIG)
        fail_msg("expected CL_ECONFIG, got %s (%s) for:\n%s", cl_errname(err), d.msg, yaml);
    if (strncmp(d.msg, where, strlen(where)) != 0 || !strstr(d.msg, what))
        fail_msg("message '%s' should start with '%s' and contain '%s'", d.msg, where, what);
    assert_null(n);
}

/* A topology's reduce_bandwidth, in both forms: absent, the default of
 * core/tier.h (680 GB/s); a figure; inf, free. */
static void test_reduce_bandwidth(void **state)
{
    (void)state;
    sim_net *n = load("topology: [Ring]\nnpus_count: [4]\nbandwidth: [1GB/s]\n"
                      "latency: [1us]\n", NULL);
    assert_near(sim_net_gamma(n, CL_F64), 1 / 680e9, 1e-25);
    sim_net_destroy(n);
    n = load("topology: [Ring]\nnpus_count: [4]\nbandwidth: [1GB/s]\nlatency: [1us]\n"
             "reduce_bandwidth: 100GB/s\n", NULL);
    assert_near(sim_net_gamma(n, CL_BF16), 1e-11, 1e-25);
    sim_net_destroy(n);
    n = load("devices: 2\nlinks: [{a: 0, b: 1, alpha: 1us, bandwidth: 1GB/s}]\n"
             "reduce_bandwidth: inf\n", NULL);
    assert_true(sim_net_gamma(n, CL_I32) == 0);
    sim_net_destroy(n);
}

static void test_errors(void **state)
{
    (void)state;
    const char *sq = "devices: 2\nswitches: [s]\nlinks:\n";
    char y[512];
    bad("topology: [Switch]\nnpus_count: [4]\ntier: [nvlnk]\n", "t.yaml:3:8: ",
        "unknown tier 'nvlnk' (known: nvlink, pcie, infiniband, ethernet)");
    snprintf(y, sizeof y, "%s  - {a: gpu0, b: s, tier: ib}\n", sq);
    bad(y, "t.yaml:4:27: ", "unknown tier 'ib'");
    snprintf(y, sizeof y, "%s  - {a: gpu0, b: s, alpha: 1us, bandwidth: 0GB/s}\n", sq);
    bad(y, "t.yaml:4:44: ", "'bandwidth' must be > 0, got '0GB/s'");
    bad("topology: [Ring]\nnpus_count: [4]\nlatency: [1us]\nbandwidth: [-3GB/s]\n",
        "t.yaml:4:13: ", "'bandwidth' must be > 0, got '-3GB/s'");
    snprintf(y, sizeof y, "%s  - {a: gpu0, b: sw, tier: pcie}\n", sq);
    bad(y, "t.yaml:4:18: ", "'b': unknown device or switch 'sw'");
    snprintf(y, sizeof y, "%s  - {a: 2, b: s, tier: pcie}\n", sq);
    bad(y, "t.yaml:4:9: ", "'a': no rank 2 (the topology has 2 devices)");
    bad("devices: [a, b, c]\nlinks:\n  - {a: a, b: b, tier: pcie}\n", "t.yaml:1:17: ",
        "devices 'a' and 'c' are not connected");
    bad("hosts:\n  - {name: h0, devices: 2, switch: s0, tier: pcie}\n"
        "  - {name: h1, devices: 2, switch: s1, tier: pcie}\n",
        "t.yaml:3:25: ", "devices 'h0.gpu0' and 'h1.gpu0' are not connected");
    bad("topology: [Switch, Switch]\nnpus_count: [4, 2]\nbandwidth: [300GB/s]\n"
        "latency: [1us, 3us]\n",
        "t.yaml:3:12: ", "'bandwidth' has 1 entries but 'npus_count' has 2");
    bad("topology: [Switch, Mesh]\nnpus_count: [4, 2]\ntier: [pcie, pcie]\n", "t.yaml:1:20: ",
        "unknown 'topology' 'Mesh' (known: Switch, Ring, FullyConnected)");
    bad("topology: [Switch]\nnpus_count: [0]\ntier: [pcie]\n", "t.yaml:2:14: ",
        "'npus_count' must be in 1..16777216, got '0'");
    bad("topology: [Switch]\nnpus_count: [4]\nlatency: [1us]\n", "t.yaml:1:1: ",
        "missing key 'bandwidth'");
    bad("topology: [Switch, Switch]\nnpus_count: [65536, 65536]\ntier: [pcie, pcie]\n",
        "t.yaml:2:13: ", "'npus_count' makes more than 16777216 devices");
    bad("devices: 2\nlnks: []\n", "t.yaml:2:1: ",
        "unknown key 'lnks' in a topology (known: hosts, devices, switches, links, "
        "reduce_bandwidth)");
    bad("switches: [s]\n", "t.yaml:1:1: ", "missing key 'devices'");
    /* Issue 23: this 63-byte file once cost 57 s and 6.75 GB before it was
     * refused; a topology that names its devices holds at most 2^20. */
    bad("devices: 100000000\n", "t.yaml:1:10: ", "'devices' must be in 1..1048576, got '100000000'");
    snprintf(y, sizeof y, "%s  - {a: gpu0, b: s, tier: pcie, duplex: simplex}\n", sq);
    bad(y, "t.yaml:4:41: ", "'duplex' must be 'full' or 'half', got 'simplex'");
    snprintf(y, sizeof y, "%s  - {a: gpu0, b: s, tier: pcie, lanes: 0}\n", sq);
    bad(y, "t.yaml:4:40: ", "'lanes' must be in 1..65536, got '0'");
    snprintf(y, sizeof y, "%s  - {a: gpu0, b: s, alpha: 1us}\n", sq);
    bad(y, "t.yaml:4:5: ", "missing key 'bandwidth' (a link needs 'tier' or 'alpha'");
    snprintf(y, sizeof y, "%s  - {a: s, b: s, tier: pcie}\n", sq);
    bad(y, "t.yaml:4:5: ", "link joins 's' to itself");
    bad("devices: [a, b]\nswitches: [a]\n", "t.yaml:2:12: ",
        "'switches': name 'a' is defined twice");
    bad("devices: [a, '7']\n", "t.yaml:1:14: ", "'devices' must be a name, not a number");
    bad("hosts:\n  - {name: h, devices: 2, tier: pcie, swich: s}\n", "t.yaml:2:39: ",
        "unknown key 'swich' in a host");
    bad("hosts:\n  - {name: h, devices: 2, switch: gpu0}\n", "t.yaml:2:5: ",
        "missing key 'tier'");
    bad("hosts:\n  - {name: h, devices: 2, switch: h.gpu0, tier: pcie}\n", "t.yaml:2:35: ",
        "'switch': 'h.gpu0' is a device");
    bad("devices: 2\nhosts: []\n", "t.yaml:1:10: ", "give 'devices' or 'hosts', not both");

    sim_net *n;
    cl_diag d = {{0}};
    assert_int_equal(sim_net_load(&n, "no/such/topo.yaml", NULL, &d), CL_ENOENT);
    assert_non_null(strstr(d.msg, "'no/such/topo.yaml'"));
    assert_int_equal(sim_net_load_string(&n, "t.yaml", "links: [\n", NULL, &d), CL_EPARSE);
    /* Without a tiers file, tier names cannot resolve. */
    assert_int_equal(sim_net_load_string(&n, "t.yaml", "topology: [Ring]\nnpus_count: [2]\n"
                                         "tier: [nvlink]\n", NULL, &d), CL_ECONFIG);
    assert_string_equal(d.msg, "t.yaml:3:8: unknown tier 'nvlink' (known: none, no tiers file)");
}

/* Two loads of one file give the same routes, link by link. */
static void test_determinism(void **state)
{
    (void)state;
    tier_set s = tiers_of();
    sim_net *a, *b;
    assert_int_equal(sim_net_load(&a, "configs/topologies/2x4-nvlink-ib.yaml", &s, NULL), 0);
    assert_int_equal(sim_net_load(&b, "configs/topologies/2x4-nvlink-ib.yaml", &s, NULL), 0);
    for (int x = 0; x < 8; x++)
        for (int y = 7; y >= 0; y--) {
            if (x == y)
                continue;
            const sim_link_dir *ha, *hb;
            size_t na, nb;
            sim_net_route(a, x, y, &ha, &na);
            sim_net_route(b, x, y, &hb, &nb);
            assert_int_equal(na, nb);
            for (size_t i = 0; i < na; i++)
                assert_true(ha[i].link == hb[i].link && ha[i].dir == hb[i].dir);
        }
    sim_net_destroy(a);
    sim_net_destroy(b);
    tier_set_release(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mesh_price_table), cmocka_unit_test(test_mesh_million),
        cmocka_unit_test(test_dims_switch),      cmocka_unit_test(test_dims_ring_full),
        cmocka_unit_test(test_explicit),         cmocka_unit_test(test_examples),
        cmocka_unit_test(test_cache_eviction),   cmocka_unit_test(test_errors),
        cmocka_unit_test(test_reduce_bandwidth),
        cmocka_unit_test(test_determinism),      cmocka_unit_test(test_gap),
        cmocka_unit_test(test_flow_mesh),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
