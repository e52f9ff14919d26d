/* test_machine.c - machine files: loading, errors with file:line:column,
 * writing and reading back, the piecewise T(n), and the simulator replaying
 * it: a modeled ping-pong on a machine mesh takes exactly the file's T(n),
 * an exchange the file's duplex time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commlab.h"
#include "core/machine.h"
#include "sim/engine.h"
#include "sim/net.h"
#include "tests/testutil.h"

cl_pattern_fn pingpong, ring, pipeline, chunked;

static const char good[] =
    "host: node7\n"
    "backend: shm\n"
    "eager_limit: 64KiB\n"
    "date: 2024-05-02T10:11:12Z\n"
    "method: synthetic\n"
    "segments:\n"
    "  - {upto: 1KiB, alpha: 300ns, bandwidth: 2GB/s, r2: 0.99, max_residual_pct: 2.5}\n"
    "  - {upto: 64KiB, alpha: 500ns, bandwidth: 8GB/s}\n"
    "  - {upto: 8MiB, alpha: 4us, bandwidth: 14GB/s}\n"
    "  - {upto: 64MiB, alpha: 90us, bandwidth: 7GB/s}\n";

/* The same segments with gaps (LogGP's g + n G) in two of them. */
static const char gapped[] =
    "host: node7\n"
    "backend: rdma\n"
    "provider: tcp\n"
    "eager_limit: 64KiB\n"
    "segments:\n"
    "  - {upto: 1KiB, alpha: 300ns, bandwidth: 2GB/s, gap: 100ns}\n"
    "  - {upto: 64KiB, alpha: 1us, bandwidth: 1GB/s, gap: 200ns, gap_bandwidth: 4GB/s}\n"
    "  - {upto: 8MiB, alpha: 4us, bandwidth: 14GB/s, gap: 2us, gap_bandwidth: 28GB/s}\n"
    "  - {upto: 64MiB, alpha: 90us, bandwidth: 7GB/s}\n";

/* Segments of `good` and duplex ones: an exchange costs more. */
static const char duplexed[] =
    "host: node7\n"
    "backend: shm\n"
    "eager_limit: 64KiB\n"
    "segments:\n"
    "  - {upto: 64KiB, alpha: 500ns, bandwidth: 8GB/s, gap: 200ns}\n"
    "  - {upto: 64MiB, alpha: 4us, bandwidth: 14GB/s}\n"
    "duplex:\n"
    "  - {upto: 1KiB, alpha: 700ns, bandwidth: inf, r2: 0.5}\n"
    "  - {upto: 1MiB, alpha: 1us, bandwidth: 6GB/s}\n"
    "  - {upto: 64MiB, alpha: 5us, bandwidth: 9GB/s, max_residual_pct: 7}\n";

static void load_text(machine *m, const char *text)
{
    cl_diag d = {{0}};
    if (machine_load_string(m, "m.yaml", text, &d))
        fail_msg("%s", d.msg);
}

static void load_good(machine *m)
{
    load_text(m, good);
}

static void test_load(void **state)
{
    (void)state;
    machine m;
    load_good(&m);
    assert_true(machine_check(&m));
    assert_string_equal(m.host, "node7");
    assert_string_equal(m.backend, "shm");
    assert_string_equal(m.path, "m.yaml");
    assert_string_equal(m.method, "synthetic");
    assert_int_equal(m.eager_limit, 65536);
    /* no cache key: from before --cache, whose runs left buffers warm */
    assert_int_equal(m.cache, CACHE_WARM);
    assert_false(m.cache_recorded);
    assert_int_equal(m.nseg, 4);
    assert_int_equal(m.seg[2].upto, 8 << 20);
    assert_near(m.seg[0].r2, 0.99, 1e-12);
    assert_true(isnan(m.seg[1].r2));
    assert_near(m.seg[3].alpha, 90e-6, 1e-18);
}

/* T(n) picks the first segment with n <= upto, the last above them all. */
static void test_time_piecewise(void **state)
{
    (void)state;
    machine m;
    load_good(&m);
    assert_near(machine_time(&m, 8), 300e-9 + 8 / 2e9, 1e-18);
    assert_near(machine_time(&m, 1024), 300e-9 + 1024 / 2e9, 1e-18);
    assert_near(machine_time(&m, 1025), 500e-9 + 1025 / 8e9, 1e-18);
    assert_near(machine_time(&m, 65536), 500e-9 + 65536 / 8e9, 1e-18);
    assert_near(machine_time(&m, 65537), 4e-6 + 65537 / 14e9, 1e-18);
    assert_near(machine_time(&m, 1ULL << 30), 90e-6 + (double)(1ULL << 30) / 7e9, 1e-15);
    assert_ptr_equal(machine_segment_of(&m, 0), &m.seg[0]);
}

static void bad(const char *yaml, const char *where, const char *what)
{
    machine m = {.nseg = 99};
    cl_diag d = {{0}};
    int err = machine_load_string(&m, "bad.yaml", yaml, &d);
    if (err == 0)
        fail_msg("loaded a bad file:\n%s", yaml);
    if (strncmp(d.msg, where, strlen(where)) != 0 || !strstr(d.msg, what))
        fail_msg("message '%s' should start with '%s' and contain '%s'", d.msg, where, what);
    assert_int_equal(m.nseg, 99); /* unchanged */
}

static void test_errors(void **state)
{
    (void)state;
    const char *head = "host: h\nbackend: shm\neager_limit: 64KiB\n";
    char y[512];
    bad("host: h\n", "bad.yaml:1:1: ", "missing key 'backend'");
    bad("host: [\n", "bad.yaml:2:1: ", "YAML syntax error");
    const char *one = "segments:\n  - {upto: 1KiB, alpha: 1us, bandwidth: 1GB/s}\n";
    snprintf(y, sizeof y, "%s%sduplex: []\n", head, one);
    bad(y, "bad.yaml:6:9: ", "'duplex' must list 1 to 16 segments, got 0");
    snprintf(y, sizeof y, "%s%sduplex:\n  - {upto: 1KiB, alpha: 1us, bandwidth: 1GB/s, gap: 1us}\n",
             head, one);
    bad(y, "bad.yaml:7:48: ", "unknown key 'gap' in a duplex segment");
    snprintf(y, sizeof y,
             "%s%sduplex:\n  - {upto: 1KiB, alpha: 1us, bandwidth: 1GB/s}\n"
             "  - {upto: 1KiB, alpha: 1us, bandwidth: 1GB/s}\n",
             head, one);
    bad(y, "bad.yaml:8:12: ", "'upto' must increase from segment to segment");
    snprintf(y, sizeof y, "%s%sduplex:\n  - {upto: 1KiB, alpha: -1us, bandwidth: 1GB/s}\n", head,
             one);
    bad(y, "bad.yaml:7:25: ", "alpha");
    snprintf(y, sizeof y, "%s%sduplex: 3\n", head, one);
    bad(y, "bad.yaml:6:9: ", "duplex");
    const char *ref = "reference:\n  - {bytes: 8, time: 121ns}\n";
    machine withref;
    snprintf(y, sizeof y, "%s%s%s", head, one, ref);
    load_text(&withref, y);
    assert_int_equal(withref.nref, 1);
    assert_int_equal(withref.ref[0].bytes, 8);
    assert_near(withref.ref[0].time, 121e-9, 1e-15);
    snprintf(y, sizeof y, "%s%sreference: []\n", head, one);
    bad(y, "bad.yaml:6:12: ", "'reference' must list 1 to 4 probes, got 0");
    snprintf(y, sizeof y, "%s%sreference:\n  - {bytes: 8, time: 0ns}\n", head, one);
    bad(y, "bad.yaml:7:22: ", "'time' of a reference probe must be > 0");
    snprintf(y, sizeof y, "%s%sreference:\n  - {bytes: 8}\n", head, one);
    bad(y, "bad.yaml:7:5: ", "missing key 'time'");
    snprintf(y, sizeof y, "%s%sreference:\n  - {bytes: 8, time: 1us, size: 3}\n", head, one);
    bad(y, "bad.yaml:7:27: ", "unknown key 'size' in a reference probe");
    snprintf(y, sizeof y, "%ssegments: []\n", head);
    bad(y, "bad.yaml:4:11: ", "'segments' must list 1 to 16 segments, got 0");
    snprintf(y, sizeof y, "%ssegments:\n  - {upto: 1KiB, alpha: 1us, bandwidth: -3GB/s}\n", head);
    bad(y, "bad.yaml:5:41: ", "'bandwidth' must be > 0, got '-3GB/s'");
    snprintf(y, sizeof y, "%ssegments:\n  - {upto: 1KiB, alpha: 1parsec, bandwidth: 1GB/s}\n",
             head);
    bad(y, "bad.yaml:5:25: ", "unknown time unit 'parsec'");
    snprintf(y, sizeof y, "%ssegments:\n  - {upto: 1KiB, alpha: 1us}\n", head);
    bad(y, "bad.yaml:5:5: ", "missing key 'bandwidth'");
    snprintf(y, sizeof y,
             "%ssegments:\n  - {upto: 1KiB, alpha: 1us, bandwidth: 1GB/s}\n"
             "  - {upto: 1KiB, alpha: 1us, bandwidth: 1GB/s}\n",
             head);
    bad(y, "bad.yaml:6:12: ", "'upto' must increase from segment to segment, got 1024 after 1024");
    snprintf(y, sizeof y, "%ssegments:\n  - {upto: 1KiB, alpha: 1us, bandwidth: 1GB/s, beta: 2}\n",
             head);
    bad(y, "bad.yaml:5:48: ", "unknown key 'beta' in a segment");
    snprintf(y, sizeof y, "%scolour: red\nsegments:\n  - {upto: 1, alpha: 1us, bandwidth: 1GB/s}\n",
             head);
    bad(y, "bad.yaml:4:1: ", "unknown key 'colour' in a machine file");
    snprintf(y, sizeof y, "%ssegments:\n  - {upto: 1, alpha: 1us, bandwidth: 1GB/s, r2: high}\n",
             head);
    bad(y, "bad.yaml:5:49: ", "'r2' must be a number, got 'high'");
    bad("host: h\nbackend: shm\neager_limit: 64XB\nsegments: []\n", "bad.yaml:3:14: ",
        "unknown size unit 'XB'");
    snprintf(y, sizeof y, "%ssegments:\n  - {upto: 1, alpha: 1us, bandwidth: 1GB/s, gap: -5ns}\n",
             head);
    bad(y, "bad.yaml:5:50: ", "'gap' must be >= 0, got '-5ns'");
    snprintf(y, sizeof y, "%ssegments:\n  - {upto: 1, alpha: 1us, bandwidth: 1GB/s, gap: soon}\n",
             head);
    bad(y, "bad.yaml:5:50: ", "'gap'");
    snprintf(y, sizeof y,
             "%ssegments:\n  - {upto: 1, alpha: 1us, bandwidth: 1GB/s, gap_bandwidth: 2GB/s}\n",
             head);
    bad(y, "bad.yaml:5:60: ", "'gap_bandwidth' needs a 'gap' in the same segment");
    snprintf(y, sizeof y,
             "%ssegments:\n  - {upto: 1, alpha: 1us, bandwidth: 1GB/s, gap: 1ns, "
             "gap_bandwidth: 0GB/s}\n",
             head);
    bad(y, "bad.yaml:5:70: ", "'gap_bandwidth' must be > 0, got '0GB/s'");
    snprintf(y, sizeof y, "%scache: hot\n%s", head, one);
    bad(y, "bad.yaml:4:8: ", "'cache' must be fresh, warm or cold, got 'hot'");
    machine cold;
    snprintf(y, sizeof y, "%scache: cold\n%s", head, one);
    load_text(&cold, y);
    assert_int_equal(cold.cache, CACHE_COLD);
    assert_true(cold.cache_recorded);
    snprintf(y, sizeof y, "%snetlab: fast\nsegments:\n  - {upto: 1, alpha: 1us, bandwidth: 1GB/s}\n",
             head);
    bad(y, "bad.yaml:4:9: ", "'netlab'");
    snprintf(y, sizeof y, "%snetlab: 0Gbit/s\nsegments:\n  - {upto: 1, alpha: 1us, bandwidth: 1GB/s}\n",
             head);
    bad(y, "bad.yaml:4:9: ", "'netlab' must be > 0, got '0Gbit/s'");
    /* Values no link can have: the bounds tiers and topologies keep. */
    snprintf(y, sizeof y, "%ssegments:\n  - {upto: 1, alpha: 1e30s, bandwidth: 1GB/s}\n", head);
    bad(y, "bad.yaml:5:22: ", "'alpha' must be at most 3600s");
    snprintf(y, sizeof y, "%ssegments:\n  - {upto: 1, alpha: 1us, bandwidth: 1e30GB/s}\n", head);
    bad(y, "bad.yaml:5:38: ", "'bandwidth' must be in 1kB/s..1000TB/s");
    snprintf(y, sizeof y, "%ssegments:\n  - {upto: 1, alpha: 1us, bandwidth: 1e-30GB/s}\n",
             head);
    bad(y, "bad.yaml:5:38: ", "'bandwidth' must be in 1kB/s..1000TB/s");
    snprintf(y, sizeof y, "%ssegments:\n  - {upto: 1, alpha: 1us, bandwidth: 1GB/s, gap: 1e9s}\n",
             head);
    bad(y, "bad.yaml:5:50: ", "'gap' must be at most 3600s");
    snprintf(y, sizeof y, "%s%sreference:\n  - {bytes: 8, time: 1e20s}\n", head, one);
    bad(y, "bad.yaml:7:22: ", "'time' must be at most 3600s");
    snprintf(y, sizeof y, "%snetlab: 1e20TB/s\nsegments:\n  - {upto: 1, alpha: 1us, bandwidth: 1GB/s}\n",
             head);
    bad(y, "bad.yaml:4:9: ", "'netlab' must be in 1kB/s..1000TB/s");
    snprintf(y, sizeof y, "%ssegments:\n  - {upto: 1, alpha: 3600s, bandwidth: 1kB/s}\n", head);
    machine edge;
    load_text(&edge, y); /* the bounds themselves are links */
    machine m;
    cl_diag d = {{0}};
    assert_int_equal(machine_load(&m, "/nonexistent/m.yaml", &d), CL_ENOENT);
    assert_non_null(strstr(d.msg, "/nonexistent/m.yaml"));
}

/* What machine_write prints, machine_load reads back to 6 digits;
 * `bandwidth: inf` survives; machine_save leaves no temporary file. */
static void test_write_read_back(void **state)
{
    (void)state;
    machine m;
    load_text(&m, gapped);
    machine dx;
    load_text(&dx, duplexed);
    m.nduplex = dx.nduplex;
    memcpy(m.duplex, dx.duplex, sizeof m.duplex);
    m.seg[0].bandwidth = INFINITY;
    m.nref = 2;
    m.ref[0] = (machine_ref){8, 121.3e-9};
    m.ref[1] = (machine_ref){1 << 20, 70.21e-6};
    snprintf(m.host, sizeof m.host, "we\"ird\\host");
    assert_true(m.netlab == 0); /* the file has none */
    m.netlab = 125e6;           /* 1 Gbit/s a port */
    m.cache = CACHE_FRESH;
    char dir[] = "/tmp/commlab-test-machine-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/sub/m.yaml", dir);
    cl_diag d = {{0}};
    if (machine_save(&m, path, &d))
        fail_msg("%s", d.msg);
    machine back;
    if (machine_load(&back, path, &d))
        fail_msg("%s", d.msg);
    assert_string_equal(back.host, m.host);
    assert_string_equal(back.date, m.date);
    assert_int_equal(back.eager_limit, m.eager_limit);
    assert_int_equal(back.nseg, m.nseg);
    assert_true(isinf(back.seg[0].bandwidth));
    assert_string_equal(back.provider, "tcp");
    assert_near(back.netlab, 125e6, 125e6 * 1e-6);
    assert_int_equal(back.cache, CACHE_FRESH);
    assert_true(back.cache_recorded);
    assert_true(machine_check(&back));
    for (size_t i = 0; i < m.nseg; i++) {
        assert_int_equal(back.seg[i].upto, m.seg[i].upto);
        assert_near(back.seg[i].alpha, m.seg[i].alpha, m.seg[i].alpha * 1e-6);
        if (i > 0)
            assert_near(back.seg[i].bandwidth, m.seg[i].bandwidth, m.seg[i].bandwidth * 1e-6);
        assert_int_equal(isnan(back.seg[i].gap), isnan(m.seg[i].gap));
        if (!isnan(m.seg[i].gap)) {
            assert_near(back.seg[i].gap, m.seg[i].gap, m.seg[i].gap * 1e-6);
            assert_int_equal(isinf(back.seg[i].gap_bandwidth), isinf(m.seg[i].gap_bandwidth));
            if (!isinf(m.seg[i].gap_bandwidth))
                assert_near(back.seg[i].gap_bandwidth, m.seg[i].gap_bandwidth,
                            m.seg[i].gap_bandwidth * 1e-6);
        }
    }
    assert_int_equal(back.nduplex, 3);
    assert_true(isinf(back.duplex[0].bandwidth));
    for (size_t i = 0; i < m.nduplex; i++) {
        assert_int_equal(back.duplex[i].upto, m.duplex[i].upto);
        assert_near(back.duplex[i].alpha, m.duplex[i].alpha, m.duplex[i].alpha * 1e-6);
        assert_true(isnan(back.duplex[i].gap));
    }
    assert_near(back.duplex[0].r2, 0.5, 1e-9);
    assert_near(back.duplex[2].max_residual_pct, 7, 1e-9);
    assert_near(back.duplex[1].bandwidth, 6e9, 6e3);
    assert_int_equal(back.nref, 2);
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(back.ref[i].bytes, m.ref[i].bytes);
        assert_near(back.ref[i].time, m.ref[i].time, m.ref[i].time * 1e-6);
    }
    char cmd[256];
    snprintf(cmd, sizeof cmd, "test \"$(ls -A %s/sub)\" = m.yaml", dir);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "rm -r %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* Runs fn modeled on a machine mesh of n ranks; returns the run's status
 * (0, or how it failed), the time of its one iteration into *t. */
static int modeled_run(const machine *m, cl_pattern_fn *fn, int n, const cl_args *args,
                       double *t)
{
    sim_net *net;
    assert_int_equal(sim_net_create_machine(&net, m, n, NULL), 0);
    sim_opts o = {.job = {.fn = fn, .args = *args, .nranks = n, .eager_limit = m->eager_limit,
                          .payload = true, .iters = 1, .out = stdout, .report = stderr},
                  .net = net};
    run_result res;
    assert_int_equal(sim_run(&o, &res, NULL), 0);
    int status = res.status;
    *t = res.iter_time[0];
    run_result_release(&res);
    sim_net_destroy(net);
    return status;
}

/* The reported time of fn's one iteration (iteration time / divisor) on
 * a run that must succeed. */
static double modeled_args(const machine *m, cl_pattern_fn *fn, int n, const cl_args *args,
                           int divisor)
{
    double t;
    assert_int_equal(modeled_run(m, fn, n, args, &t), 0);
    return t / divisor;
}

static double modeled(const machine *m, cl_pattern_fn *fn, int n, uint64_t bytes, int divisor)
{
    cl_args a = {.bytes = (size_t)bytes};
    return modeled_args(m, fn, n, &a, divisor);
}

/* The calibration's promise: a modeled ping-pong reproduces the file's
 * T(n) at every size, eager and rendezvous alike (the rendezvous handshake
 * is inside the calibrated alpha, so none is added). */
static void test_modeled_pingpong_is_the_file(void **state)
{
    (void)state;
    machine m;
    load_good(&m);
    static const uint64_t sizes[] = {1, 8, 1024, 1025, 4096, 65536, 65537, 1 << 20, 8 << 20,
                                     (8 << 20) + 1, 64 << 20};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        double want = machine_time(&m, sizes[i]);
        double got = modeled(&m, pingpong, 2, sizes[i], 2);
        if (!(fabs(got - want) <= 1e-12 * want))
            fail_msg("pingpong %llu bytes: modeled %.12g s, file T(n) %.12g s",
                     (unsigned long long)sizes[i], got, want);
    }
    /* A ring moves every message at once: one T(n) too. */
    assert_near(modeled(&m, ring, 4, 4096, 1), machine_time(&m, 4096), 1e-15);
    /* Gaps space back-to-back messages only: a ping-pong is still T(n). */
    load_text(&m, gapped);
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        double want = machine_time(&m, sizes[i]);
        double got = modeled(&m, pingpong, 2, sizes[i], 2);
        if (!(fabs(got - want) <= 1e-12 * want))
            fail_msg("pingpong %llu bytes with gaps: modeled %.12g s, file T(n) %.12g s",
                     (unsigned long long)sizes[i], got, want);
    }
}

static void test_gap_load(void **state)
{
    (void)state;
    machine m;
    load_text(&m, gapped);
    assert_true(machine_check(&m));
    assert_string_equal(m.backend, "rdma");
    assert_string_equal(m.provider, "tcp");
    assert_near(m.seg[0].gap, 100e-9, 1e-18);
    assert_true(isinf(m.seg[0].gap_bandwidth)); /* gap alone: no per-byte part */
    assert_near(m.seg[1].gap_bandwidth, 4e9, 1e-3);
    assert_true(isnan(m.seg[3].gap));
    double g = -1;
    assert_true(machine_gap(&m, 8, &g));
    assert_near(g, 100e-9, 1e-18);
    assert_true(machine_gap(&m, 1024 + 1, &g));
    assert_near(g, 200e-9 + 1025 / 4e9, 1e-18);
    g = -1;
    assert_false(machine_gap(&m, 64 << 20, &g)); /* the last segment has none */
    assert_near(g, -1, 0);
    /* A file written before gaps existed: every segment without. */
    load_good(&m);
    assert_string_equal(m.provider, "");
    for (size_t i = 0; i < m.nseg; i++)
        assert_false(machine_gap(&m, m.seg[i].upto, &g));
    m.seg[1].gap = -1e-9;
    assert_false(machine_check(&m));
}

/* A pipeline of 2 stages and M microbatches (no compute), eager: rank 0
 * sends M activations back to back, each a gap g(n) after the previous; the
 * last lands at (M - 1) g + T; rank 1 then sends M gradients the same way:
 *   2 T(n) + 2 (M - 1) g(n).
 * Without a gap the spacing is n / bandwidth, as on a plain alpha-beta link. */
static void test_modeled_stream_with_gaps(void **state)
{
    (void)state;
    machine m;
    load_text(&m, gapped);
    cl_args a = {.bytes = 1024 + 1, .microbatches = 4};
    double T = 1e-6 + 1025 / 1e9, g = 200e-9 + 1025 / 4e9;
    assert_near(modeled_args(&m, pipeline, 2, &a, 1), 2 * T + 6 * g, 1e-15);
    a.microbatches = 1;
    assert_near(modeled_args(&m, pipeline, 2, &a, 1), 2 * T, 1e-15);
    a.microbatches = 4;
    m.seg[1].gap = NAN;
    assert_near(modeled_args(&m, pipeline, 2, &a, 1), 2 * T + 6 * (1025 / 1e9), 1e-15);

    /* A gap longer than the message's own time: an eager send completes
     * when its message has arrived, so a ring of one message a rank is
     * still T(n). */
    m.seg[1].gap = 5e-6;
    assert_near(modeled_args(&m, ring, 2, &a, 1), T, 1e-15);

    /* Rendezvous pieces all posted at once (chunked): the k-th starts k g
     * after the first, so 8 pieces of 1 MiB take 7 g + T. */
    load_text(&m, gapped);
    cl_args c = {.bytes = 8 << 20, .chunk = 1 << 20};
    double T1 = 4e-6 + (1 << 20) / 14e9, g1 = 2e-6 + (1 << 20) / 28e9;
    assert_near(modeled_args(&m, chunked, 2, &c, 1), 7 * g1 + T1, 1e-14);
}

/* ---- posted gaps ---- */

/* `gapped`'s first two segments with posted gaps (the eager ones; the
 * rendezvous segment keeps its gap alone). */
static const char posted[] =
    "host: node7\n"
    "backend: shm\n"
    "eager_limit: 64KiB\n"
    "segments:\n"
    "  - {upto: 1KiB, alpha: 300ns, bandwidth: 2GB/s, gap: 100ns, posted_gap: 40ns}\n"
    "  - {upto: 64KiB, alpha: 1us, bandwidth: 1GB/s, gap: 200ns, gap_bandwidth: 4GB/s,\n"
    "     posted_gap: 50ns, posted_gap_bandwidth: 8GB/s}\n"
    "  - {upto: 8MiB, alpha: 4us, bandwidth: 14GB/s, gap: 2us, gap_bandwidth: 28GB/s}\n"
    "  - {upto: 64MiB, alpha: 90us, bandwidth: 7GB/s}\n";

static void test_posted_gap_load(void **state)
{
    (void)state;
    machine m;
    load_text(&m, posted);
    assert_true(machine_check(&m));
    assert_true(machine_has_posted_gap(&m));
    double g = -1;
    assert_true(machine_posted_gap(&m, 8, &g));
    assert_near(g, 40e-9, 1e-18);
    assert_true(isinf(m.seg[0].posted_gap_bandwidth)); /* alone: no per-byte part */
    assert_true(machine_posted_gap(&m, 1025, &g));
    assert_near(g, 50e-9 + 1025 / 8e9, 1e-18);
    /* A segment without one: its gap; without either: none. */
    assert_true(machine_posted_gap(&m, 1 << 20, &g));
    assert_near(g, 2e-6 + (1 << 20) / 28e9, 1e-18);
    g = -1;
    assert_false(machine_posted_gap(&m, 64 << 20, &g));
    assert_near(g, -1, 0);
    load_text(&m, gapped);
    assert_false(machine_has_posted_gap(&m));
    assert_true(isnan(m.seg[0].posted_gap));

    /* Written and read back. */
    load_text(&m, posted);
    char buf[4096] = "";
    FILE *f = fmemopen(buf, sizeof buf, "w");
    assert_non_null(f);
    assert_int_equal(machine_write(&m, f), 0);
    fclose(f);
    assert_non_null(strstr(buf, ", gap: 100ns, gap_bandwidth: inf, posted_gap: 40ns, "
                                "posted_gap_bandwidth: inf}\n"));
    machine back;
    load_text(&back, buf);
    assert_near(back.seg[1].posted_gap, 50e-9, 1e-18);
    assert_near(back.seg[1].posted_gap_bandwidth, 8e9, 1e-3);
    assert_true(isnan(back.seg[2].posted_gap));

    /* Refused: a posted gap without a gap, a rate without its gap, a
     * negative one (machine_check too). */
    const char *head = "host: h\nbackend: shm\neager_limit: 64KiB\nsegments:\n";
    char y[512];
    snprintf(y, sizeof y, "%s  - {upto: 1, alpha: 1us, bandwidth: 1GB/s, posted_gap: 1ns}\n",
             head);
    bad(y, "bad.yaml:5:57: ", "'posted_gap' needs a 'gap' in the same segment");
    snprintf(y, sizeof y,
             "%s  - {upto: 1, alpha: 1us, bandwidth: 1GB/s, gap: 1ns, "
             "posted_gap_bandwidth: 1GB/s}\n", head);
    bad(y, "bad.yaml:5:", "'posted_gap_bandwidth' needs a 'posted_gap' in the same segment");
    snprintf(y, sizeof y,
             "%s  - {upto: 1, alpha: 1us, bandwidth: 1GB/s, gap: 1ns, posted_gap: -1ns}\n",
             head);
    bad(y, "bad.yaml:5:", "'posted_gap' must be >= 0, got '-1ns'");
    m.seg[0].posted_gap = -1e-9;
    assert_false(machine_check(&m));
    m.seg[0].posted_gap = 1e-9;
    m.seg[0].gap = NAN;
    assert_false(machine_check(&m));
}

/* Streams of W eager messages of n bytes from rank 0 to rank 1 (isend
 * back to back, then wait), received three ways; rank 1's time is when
 * the last message has landed. */
#define STREAM_W 4

static int stream_send(cl_comm *c, const cl_args *a)
{
    cl_request *r[STREAM_W];
    unsigned char *buf = cl_alloc(c, a->bytes);
    for (int i = 0; i < STREAM_W; i++)
        CL_TRY(cl_isend(c, buf, a->bytes, 1, 0, &r[i]));
    return cl_waitall(c, STREAM_W, r, NULL);
}

/* Every receive posted first, as chunked does; delayed by a->compute
 * (posted only after the messages were sent) when it is set. */
static int stream_posted(cl_comm *c, const cl_args *a)
{
    if (cl_rank(c) == 0)
        return stream_send(c, a);
    if (a->compute > 0)
        CL_TRY(cl_compute(c, a->compute));
    cl_request *r[STREAM_W];
    unsigned char *buf = cl_alloc(c, a->bytes);
    for (int i = 0; i < STREAM_W; i++)
        CL_TRY(cl_irecv(c, buf, a->bytes, 0, 0, &r[i]));
    return cl_waitall(c, STREAM_W, r, NULL);
}

/* Blocking receives one after another, as calibrate's window does. */
static int stream_blocking(cl_comm *c, const cl_args *a)
{
    if (cl_rank(c) == 0)
        return stream_send(c, a);
    unsigned char *buf = cl_alloc(c, a->bytes);
    for (int i = 0; i < STREAM_W; i++)
        CL_TRY(cl_recv(c, buf, a->bytes, 0, 0, NULL));
    return 0;
}

/* The engine prices a message when the instant it was sent in ends, so a
 * receive posted at that instant (after the send: rank 0 runs first)
 * counts as posted.  With T = T(n), g its gap and p its posted gap:
 *   - every receive posted first: T + (W - 1) p;
 *   - blocking receives: the first is posted at once, the rest after the
 *     message before them landed: T + p + (W - 2) g;
 *   - receives posted after the sends' instant: T + (W - 1) g after it;
 *   - rendezvous sizes keep the gap: T + (W - 1) g.
 * A file whose posted gaps equal its gaps models what one without them
 * does, and a file without posted gaps is untouched (test above). */
static void test_modeled_posted_gaps(void **state)
{
    (void)state;
    machine m;
    load_text(&m, posted);
    cl_args a = {.bytes = 1025};
    double T = 1e-6 + 1025 / 1e9, g = 200e-9 + 1025 / 4e9, p = 50e-9 + 1025 / 8e9;
    assert_near(modeled_args(&m, stream_posted, 2, &a, 1), T + 3 * p, 1e-15);
    assert_near(modeled_args(&m, stream_blocking, 2, &a, 1), T + p + 2 * g, 1e-15);
    a.compute = 1e-6;
    assert_near(modeled_args(&m, stream_posted, 2, &a, 1), T + 3 * g, 1e-15);
    a.compute = 0;
    a.bytes = 1 << 20; /* rendezvous */
    double T1 = 4e-6 + (1 << 20) / 14e9, g1 = 2e-6 + (1 << 20) / 28e9;
    assert_near(modeled_args(&m, stream_posted, 2, &a, 1), T1 + 3 * g1, 1e-14);
    /* chunked's 8 pieces of 1 KiB + 1 (eager), all posted at the instant. */
    cl_args c = {.bytes = 8 * 1025, .chunk = 1025};
    assert_near(modeled_args(&m, chunked, 2, &c, 1), T + 7 * p, 1e-15);

    /* Posted gaps equal to the gaps: what the file without them gives. */
    machine same;
    load_text(&same, posted);
    for (size_t i = 0; i < same.nseg; i++)
        if (!isnan(same.seg[i].posted_gap)) {
            same.seg[i].posted_gap = same.seg[i].gap;
            same.seg[i].posted_gap_bandwidth = same.seg[i].gap_bandwidth;
        }
    machine none;
    load_text(&none, posted);
    for (size_t i = 0; i < none.nseg; i++)
        none.seg[i].posted_gap = NAN;
    cl_pattern_fn *fns[] = {stream_posted, stream_blocking, chunked, pipeline, pingpong, ring};
    static const uint64_t sizes[] = {8, 1025, 65536, 65537, 1 << 20};
    for (size_t f = 0; f < sizeof fns / sizeof fns[0]; f++)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            cl_args b = {.bytes = sizes[i], .microbatches = 4};
            double x = modeled_args(&same, fns[f], 2, &b, 1);
            double y = modeled_args(&none, fns[f], 2, &b, 1);
            if (x != y)
                fail_msg("pattern %zu, %llu bytes: %.17g s with posted gaps equal to the gaps, "
                         "%.17g without", f, (unsigned long long)sizes[i], x, y);
        }
}

/* Rank 1 fails at the instant rank 0's messages are sent, before their
 * price is known: the run stops with its error, and what the pending
 * messages held is freed (the sanitized build checks the leak). */
static int fail_at_once(cl_comm *c, const cl_args *a)
{
    if (cl_rank(c) == 0)
        return stream_send(c, a);
    return cl_fail(c, "rank 1 gives up");
}

/* A deadlock is still found with every price waiting for its instant's
 * end: both ranks send first above the eager limit. */
static int both_send(cl_comm *c, const cl_args *a)
{
    unsigned char *buf = cl_alloc(c, a->bytes);
    CL_TRY(cl_send(c, buf, a->bytes, 1 - cl_rank(c), 0));
    return cl_recv(c, buf, a->bytes, 1 - cl_rank(c), 0, NULL);
}

static void test_posted_failures(void **state)
{
    (void)state;
    machine m;
    load_text(&m, posted);
    double t;
    cl_args a = {.bytes = 512};
    assert_int_equal(modeled_run(&m, fail_at_once, 2, &a, &t), CL_ECHECK);
    a.bytes = 1 << 20;
    assert_int_equal(modeled_run(&m, both_send, 2, &a, &t), CL_EDEADLOCK);
    a.bytes = 512; /* eager: both sends complete */
    assert_int_equal(modeled_run(&m, both_send, 2, &a, &t), 0);
    assert_near(t, 300e-9 + 512 / 2e9, 1e-15);
}

static void test_duplex_load(void **state)
{
    (void)state;
    machine m;
    load_text(&m, duplexed);
    assert_true(machine_check(&m));
    assert_int_equal(m.nduplex, 3);
    double t = -1;
    assert_true(machine_duplex_time(&m, 8, &t));
    assert_near(t, 700e-9, 1e-18); /* bandwidth: inf */
    assert_true(machine_duplex_time(&m, 4096, &t));
    assert_near(t, 1e-6 + 4096 / 6e9, 1e-18);
    assert_true(machine_duplex_time(&m, 128 << 20, &t)); /* above every upto: the last */
    assert_near(t, 5e-6 + (128 << 20) / 9e9, 1e-15);
    /* A file without duplex segments: no duplex time. */
    load_good(&m);
    assert_int_equal(m.nduplex, 0);
    t = -1;
    assert_false(machine_duplex_time(&m, 8, &t));
    assert_near(t, -1, 0);
    load_text(&m, duplexed);
    m.duplex[1].gap = 1e-6;
    assert_false(machine_check(&m));
    m.duplex[1].gap = NAN;
    m.duplex[2].upto = 1;
    assert_false(machine_check(&m));
}

/* An exchange (a ring of 2) moves its two messages at once: the one that
 * starts second moves while its sender receives the first, so it takes
 * the duplex time D(n) and so does the exchange; the first keeps T(n).  In
 * a ring of 4 every message but the first moves while its sender receives:
 * D(n) again.  A ping-pong and a pipeline never send both ways at once:
 * T(n) and 2 T(n) + 6 gap(n) as without duplex segments. */
static void test_modeled_duplex(void **state)
{
    (void)state;
    machine m;
    load_text(&m, duplexed);
    static const uint64_t sizes[] = {8, 4096, 65536, 65537, 1 << 20, 8 << 20};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        double T = machine_time(&m, sizes[i]), D;
        assert_true(machine_duplex_time(&m, sizes[i], &D));
        assert_near(modeled(&m, ring, 2, sizes[i], 1), D, 1e-12 * D);
        assert_near(modeled(&m, ring, 4, sizes[i], 1), D, 1e-12 * D);
        assert_near(modeled(&m, pingpong, 2, sizes[i], 2), T, 1e-12 * T);
    }
    cl_args a = {.bytes = 1024, .microbatches = 4};
    double T = 500e-9 + 1024 / 8e9, g = 200e-9;
    assert_near(modeled_args(&m, pipeline, 2, &a, 1), 2 * T + 6 * g, 1e-15);
    /* The same file without its duplex segments: the exchange is T(n). */
    m.nduplex = 0;
    assert_near(modeled(&m, ring, 2, 4096, 1), machine_time(&m, 4096), 1e-15);
}

static void test_net_describe(void **state)
{
    (void)state;
    machine m;
    load_good(&m);
    sim_net *net;
    assert_int_equal(sim_net_create_machine(&net, &m, 3, NULL), 0);
    assert_string_equal(sim_net_describe(net),
                        "machine m.yaml (shm on node7, 4 segments), full mesh of 3 ranks");
    double a, bw;
    int hops;
    sim_net_cost(net, 0, 2, 1 << 20, &a, &bw, &hops);
    assert_near(a, 4e-6, 1e-18);
    assert_near(bw, 14e9, 1e-3);
    assert_int_equal(hops, 1);
    sim_net_destroy(net);
    cl_diag d = {{0}};
    assert_int_equal(sim_net_create_machine(&net, &m, 0, &d), CL_EINVAL);
    assert_null(net);
    load_text(&m, duplexed);
    assert_int_equal(sim_net_create_machine(&net, &m, 2, NULL), 0);
    assert_string_equal(sim_net_describe(net),
                        "machine m.yaml (shm on node7, 2 segments, duplex), full mesh of 2 ranks");
    double t;
    assert_true(sim_net_duplex(net, 4096, &t));
    assert_near(t, 1e-6 + 4096 / 6e9, 1e-18);
    sim_net_destroy(net);
}

/* reduce_bandwidth: per type, optional (a type left out, or a file
 * without the key, reduces for free), written and read back, and the
 * simulator's gamma of each type is its inverse. */
static void test_reduce_bandwidth(void **state)
{
    (void)state;
    char text[1024];
    snprintf(text, sizeof text, "%sreduce_bandwidth: {f64: 10GB/s, bf16: 2.5GB/s}\n", good);
    machine m;
    load_text(&m, text);
    assert_true(m.reduce_bandwidth[CL_F64] == 10e9);
    assert_true(m.reduce_bandwidth[CL_BF16] == 2.5e9);
    assert_true(m.reduce_bandwidth[CL_F32] == 0);
    sim_net *net;
    assert_int_equal(sim_net_create_machine(&net, &m, 2, NULL), 0);
    assert_near(sim_net_gamma(net, CL_F64), 1e-10, 1e-25);
    assert_near(sim_net_gamma(net, CL_BF16), 4e-10, 1e-25);
    assert_true(sim_net_gamma(net, CL_F32) == 0);
    sim_net_destroy(net);
    char buf[4096] = "";
    FILE *f = fmemopen(buf, sizeof buf, "w");
    assert_non_null(f);
    assert_int_equal(machine_write(&m, f), 0);
    fclose(f);
    assert_non_null(strstr(buf, "reduce_bandwidth: {f64: 10GB/s, bf16: 2.5GB/s}\n"));
    machine back;
    load_text(&back, buf);
    assert_true(back.reduce_bandwidth[CL_BF16] == 2.5e9);
    load_good(&m); /* none: free */
    assert_int_equal(sim_net_create_machine(&net, &m, 2, NULL), 0);
    assert_true(sim_net_gamma(net, CL_F64) == 0);
    sim_net_destroy(net);
    snprintf(text, sizeof text, "%sreduce_bandwidth: {f8: 1GB/s}\n", good);
    bad(text, "bad.yaml:", "unknown key 'f8' in reduce_bandwidth");
    snprintf(text, sizeof text, "%sreduce_bandwidth: {f32: -1GB/s}\n", good);
    bad(text, "bad.yaml:", "'f32' must be > 0");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load),
        cmocka_unit_test(test_time_piecewise),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_write_read_back),
        cmocka_unit_test(test_modeled_pingpong_is_the_file),
        cmocka_unit_test(test_net_describe),
        cmocka_unit_test(test_reduce_bandwidth),
        cmocka_unit_test(test_gap_load),
        cmocka_unit_test(test_modeled_stream_with_gaps),
        cmocka_unit_test(test_duplex_load),
        cmocka_unit_test(test_modeled_duplex),
        cmocka_unit_test(test_posted_gap_load),
        cmocka_unit_test(test_modeled_posted_gaps),
        cmocka_unit_test(test_posted_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
