/* test_plot.c - plot CSVs: checking them (kinds, headers, values, line
 * numbers in errors), --term lists, and the writers read back.
 *
 * cli/ is not part of libcommlab.a; the plot module (plot.c, plot_render.c,
 * plot_write.c) depends only on core/ and libc, so the test compiles it in. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/plot.c"
#include "cli/plot_render.c"
#include "cli/plot_write.c"
#include "tests/testutil.h"

/* plot_csv_read() of text, as if from a file called "t.csv". */
static int read_text(const char *text, plot_csv *out, cl_diag *d)
{
    FILE *f = fmemopen((void *)text, strlen(text), "r");
    assert_non_null(f);
    int err = plot_csv_read(f, "t.csv", out, d);
    fclose(f);
    return err;
}

static const char compare_csv[] =
    "# commlab-plot: compare\n"
    "# title: pingpong, shm, 2 ranks, host myhost\n"
    "pattern,backend,ranks,bytes,modeled_s,measured_median_s,measured_min_s,"
    "measured_max_s,error_pct,measured_q1_s,measured_q3_s\n"
    "pingpong,shm,2,8,2.1e-07,2.3e-07,2.2e-07,2.9e-07,-8.7,2.2e-07,2.5e-07\n"
    "pingpong,shm,2,64,2.3e-07,2.5e-07,2.4e-07,3.1e-07,-8,2.4e-07,2.6e-07\n"
    "pingpong,tcp,2,8,2.1e-07,9.3e-06,8.2e-06,2.9e-05,-97.7,9e-06,1e-05\n"
    "# a comment between rows is skipped, as gnuplot does\n"
    "pingpong,shm,2,512,2.9e-07,3.2e-07,3e-07,4.5e-07,-9.4,3.1e-07,3.3e-07\n"
    "pingpong,shm,2,16,2.2e-07,,,,,,\n"; /* the model alone, for its curve */

static void test_reads_compare(void **state)
{
    (void)state;
    plot_csv c;
    cl_diag d = {{0}};
    assert_int_equal(read_text(compare_csv, &c, &d), 0);
    assert_int_equal(c.kind, PLOT_COMPARE);
    assert_string_equal(c.title, "pingpong, shm, 2 ranks, host myhost");
    assert_int_equal(c.rows, 5);
    /* Series in order of first appearance, each once. */
    assert_string_equal(c.series, "pingpong,shm,2 pingpong,tcp,2");
    assert_int_equal(c.nseries, 2);
    assert_string_equal(c.status, "ok");
}

static void test_title_defaults_and_is_cleaned(void **state)
{
    (void)state;
    plot_csv c;
    cl_diag d = {{0}};
    const char *untitled = "# commlab-plot: tiers\n"
                           "tier,scope,bytes,alpha_s,bandwidth_Bps,time_s,ratio\n"
                           "nvlink,,8,1e-06,3e+11,1e-06,1\n"; /* empty scope is fine */
    assert_int_equal(read_text(untitled, &c, &d), 0);
    assert_string_equal(c.title, "t.csv");
    const char *tabbed = "# commlab-plot: tiers\r\n"
                         "# title:   a\tb \r\n"
                         "tier,scope,bytes,alpha_s,bandwidth_Bps,time_s,ratio\r\n"
                         "nvlink,x,8,1e-06,3e+11,1e-06,1\r\n";
    assert_int_equal(read_text(tabbed, &c, &d), 0);
    assert_string_equal(c.title, "a b");
    assert_string_equal(c.series, "nvlink");
}

/* Every malformed file is refused with the line and the value. */
static void test_errors_name_line_and_value(void **state)
{
    (void)state;
    static const char tiers_head[] = "tier,scope,bytes,alpha_s,bandwidth_Bps,time_s,ratio\n";
    char buf[1024];
    struct {
        const char *body; /* after "# commlab-plot: tiers\n# title: t\n" + header, or whole */
        bool whole;
        const char *want;
    } cases[] = {
        {"", true, "t.csv:1: not a plot CSV"},
        {"tier,scope\n", true, "t.csv:1: not a plot CSV"},
        {"# commlab-plot: pie\n", true, "t.csv:1: unknown plot kind 'pie'"},
        {"# commlab-plot: tiers\n# title: t\n", true, "t.csv:2: the header line is missing"},
        {"# commlab-plot: tiers\nbytes,tier\n", true, "t.csv:2: a tiers CSV's header must be"},
        {"", false, "t.csv: no data rows after the header"},
        {"a,b,8,1e-06,3e+11,1e-06\n", false, "t.csv:4: expected 7 columns"},
        {"a,b,8,1e-06,3e+11,1e-06,1,9\n", false, "got 8"},
        {"a,b,8,1e-06,3e+11,soon,1\n", false,
         "t.csv:4: column 'time_s' must be a number, got 'soon'"},
        {"a,b,8,1e-06,3e+11,nan,1\n", false, "column 'time_s' must be a number, got 'nan'"},
        {"a,b,8,1e-06,3e+11,1e-6x,1\n", false, "got '1e-6x'"},
        {"a,b,8,1e-06,0,1e-06,1\n", false, "column 'bandwidth_Bps' must be > 0, got '0'"},
        {"a,b,-8,1e-06,3e+11,1e-06,1\n", false,
         "column 'bytes' must be an integer >= 0, got '-8'"},
        {"a,b,8.5,1e-06,3e+11,1e-06,1\n", false, "got '8.5'"},
        {",b,8,1e-06,3e+11,1e-06,1\n", false, "t.csv:4: column 'tier' is empty"},
        {"a b,b,8,1e-06,3e+11,1e-06,1\n", false, "column 'tier' must not contain quotes or spaces"},
        {"a,\"b\",8,1e-06,3e+11,1e-06,1\n", false, "column 'scope' must not contain quotes"},
        {"a,b,8,1e-06,3e+11,1e-06,1\n\nc,b,8,1e-06,3e+11,1e-06,1\n", false,
         "t.csv:5: empty line between data rows"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (cases[i].whole)
            snprintf(buf, sizeof buf, "%s", cases[i].body);
        else
            snprintf(buf, sizeof buf, "# commlab-plot: tiers\n# title: t\n%s%s", tiers_head,
                     cases[i].body);
        plot_csv c;
        cl_diag d = {{0}};
        int err = read_text(buf, &c, &d);
        if (err != CL_EPARSE || !strstr(d.msg, cases[i].want))
            fail_msg("case %zu: got %d '%s', want CL_EPARSE and '%s'", i, err, d.msg,
                     cases[i].want);
    }
}

static void test_row_checks(void **state)
{
    (void)state;
    plot_csv c;
    cl_diag d = {{0}};
    const char *minmax = "# commlab-plot: compare\n"
                         "pattern,backend,ranks,bytes,modeled_s,measured_median_s,"
                         "measured_min_s,measured_max_s,error_pct,measured_q1_s,"
                         "measured_q3_s\n"
                         "p,shm,2,8,1e-6,2e-6,3e-6,4e-6,-50,3e-6,3e-6\n";
    assert_int_equal(read_text(minmax, &c, &d), CL_EPARSE);
    assert_non_null(strstr(d.msg, "t.csv:3: measured_min_s <= measured_q1_s <= "
                                  "measured_median_s <= measured_q3_s <= measured_max_s"));
    const char *iqr = "# commlab-plot: compare\n"
                      "pattern,backend,ranks,bytes,modeled_s,measured_median_s,"
                      "measured_min_s,measured_max_s,error_pct,measured_q1_s,measured_q3_s\n"
                      "p,shm,2,8,1e-6,2e-6,1e-6,4e-6,-50,2.5e-6,3e-6\n";
    assert_int_equal(read_text(iqr, &c, &d), CL_EPARSE);
    assert_non_null(strstr(d.msg, "(1e-06, 2.5e-06, 2e-06, 3e-06, 4e-06)"));
    /* A row of the model alone leaves every measured column empty, or none. */
    const char *half = "# commlab-plot: compare\n"
                       "pattern,backend,ranks,bytes,modeled_s,measured_median_s,"
                       "measured_min_s,measured_max_s,error_pct,measured_q1_s,measured_q3_s\n"
                       "p,shm,2,8,1e-6,,,,,,2e-6\n";
    assert_int_equal(read_text(half, &c, &d), CL_EPARSE);
    assert_non_null(strstr(d.msg, "t.csv:3: column 'measured_median_s' must be a number"));
    const char *order = "# commlab-plot: timeline\n"
                        "rank,op,posted_s,started_s,finished_s,peer,bytes,tag,stalled\n"
                        "0,send,0,2e-6,1e-6,1,8,0,0\n";
    assert_int_equal(read_text(order, &c, &d), CL_EPARSE);
    assert_non_null(strstr(d.msg, "posted_s <= started_s <= finished_s"));
    const char *op = "# commlab-plot: timeline\n"
                     "rank,op,posted_s,started_s,finished_s,peer,bytes,tag,stalled\n"
                     "0,allreduce,0,0,1e-6,1,8,0,0\n";
    assert_int_equal(read_text(op, &c, &d), CL_EPARSE);
    assert_non_null(strstr(d.msg, "column 'op' must be one of send,isend"));
}

static void test_kinds_and_terms(void **state)
{
    (void)state;
    for (int k = 0; k < PLOT_KIND_COUNT; k++) {
        assert_int_equal(plot_kind_find(plot_kind_name(k)), k);
        /* The header lists exactly the kind's columns. */
        size_t commas = 0;
        for (const char *p = plot_kind_header(k); *p; p++)
            commas += *p == ',';
        assert_int_equal(commas + 1, (size_t)kinds[k].ncols);
        for (int i = 0; i < kinds[k].ncols; i++)
            assert_non_null(strstr(plot_kind_header(k), kinds[k].cols[i].name));
    }
    assert_int_equal(plot_kind_find("pie"), -1);
    assert_string_equal(plot_kind_name(99), "?");

    unsigned t = 0;
    cl_diag d = {{0}};
    assert_int_equal(plot_terms_parse("png", &t, &d), 0);
    assert_int_equal(t, PLOT_PNG);
    assert_int_equal(plot_terms_parse("svg,dumb", &t, &d), 0);
    assert_int_equal(t, PLOT_SVG | PLOT_DUMB);
    assert_int_equal(plot_terms_parse("all", &t, &d), 0);
    assert_int_equal(t, PLOT_PNG | PLOT_SVG | PLOT_DUMB);
    t = 7;
    assert_int_equal(plot_terms_parse("png,jpeg", &t, &d), CL_EPARSE);
    assert_non_null(strstr(d.msg, "unknown --term 'jpeg'"));
    assert_int_equal(t, 7); /* unchanged on error */
    assert_int_equal(plot_terms_parse("", &t, &d), CL_EPARSE);
    assert_int_equal(plot_terms_parse("png,", &t, &d), CL_EPARSE);
}

/* gnuplot's single-quoted strings: only the quote is special, written twice. */
static void test_gnuplot_quoting(void **state)
{
    (void)state;
    gp_args a = {.used = 0};
    gp_set(&a, "plottitle", "it's @x $y `z` \\n");
    gp_num(&a, "nseries", 3);
    assert_false(a.overflow);
    assert_string_equal(a.buf, "plottitle='it''s @x $y `z` \\n'; nseries=3; ");
    assert_true(has_control("a\nb"));
    assert_false(has_control("plots/out"));
}

/* What a writer wrote into memory; free text. */
typedef struct mem { char *text; size_t len; } mem;

/* Writes with fn into m->text. */
static char *written(int (*fn)(FILE *, const void *), const void *arg, mem *m)
{
    FILE *f = open_memstream(&m->text, &m->len);
    assert_non_null(f);
    assert_int_equal(fn(f, arg), 0);
    fclose(f);
    return m->text;
}

/* The tiers of configs/tiers.yaml. */
static const char course_tiers[] =
    "tiers:\n"
    "  - {name: nvlink, scope: intra-node, alpha: 1us, bandwidth: 300GB/s}\n"
    "  - {name: pcie, scope: intra-node, alpha: 2us, bandwidth: 25GB/s}\n"
    "  - {name: infiniband, scope: inter-node, alpha: 3us, bandwidth: 50GB/s}\n"
    "  - {name: ethernet, scope: inter-node, alpha: 30us, bandwidth: 3.1GB/s}\n";

static int tiers_256mib(FILE *f, const void *arg)
{
    return plot_write_tiers(f, arg, 256u << 20, "one 256 MiB message\n on each tier");
}

static void test_tiers_written_and_read_back(void **state)
{
    (void)state;
    tier_set ts;
    cl_diag d = {{0}};
    assert_int_equal(tier_set_load_string(&ts, "tiers", course_tiers, &d), 0);
    mem m;
    char *text = written(tiers_256mib, &ts, &m);
    plot_csv c;
    assert_int_equal(read_text(text, &c, &d), 0);
    assert_int_equal(c.kind, PLOT_TIERS);
    assert_string_equal(c.title, "one 256 MiB message  on each tier"); /* newline cleaned */
    assert_int_equal(c.rows, 4);
    assert_string_equal(c.series, "nvlink pcie infiniband ethernet");
    /* The course's tier table for 256 MiB (DESIGN.md, "The model"): 0.90 ms
     * NVLink, 10.74 ms PCIe, 5.37 ms InfiniBand, 86.62 ms Ethernet; the
     * ratios 1.0x, 12.0x, 6.0x, 96.7x. */
    static const double want_ms[] = {0.90, 10.74, 5.37, 86.62};
    static const double want_ratio[] = {1.0, 12.0, 6.0, 96.7};
    const char *line = strstr(text, "ratio\n") + 6;
    for (int i = 0; i < 4; i++) {
        double alpha, bw, t, ratio;
        unsigned long long bytes;
        assert_int_equal(sscanf(strchr(strchr(line, ',') + 1, ',') + 1, "%llu,%lf,%lf,%lf,%lf",
                                &bytes, &alpha, &bw, &t, &ratio), 5);
        assert_int_equal(bytes, 256ull << 20);
        assert_near(t * 1e3, want_ms[i], 0.005);
        assert_near(ratio, want_ratio[i], 0.05);
        line = strchr(line, '\n') + 1;
    }
    free(text);
    tier_set_release(&ts);
}

typedef struct sweep_in { const tier_set *ts; const uint64_t *sizes; size_t n; } sweep_in;

static int sweep_write(FILE *f, const void *arg)
{
    const sweep_in *s = arg;
    return plot_write_sweep(f, s->ts, s->sizes, s->n, "sweep");
}

static void test_sweep_written_and_read_back(void **state)
{
    (void)state;
    tier_set ts;
    cl_diag d = {{0}};
    assert_int_equal(tier_set_load_string(&ts, "tiers", course_tiers, &d), 0);
    const uint64_t sizes[] = {8, 1 << 20};
    sweep_in in = {&ts, sizes, 2};
    mem m;
    char *text = written(sweep_write, &in, &m);
    plot_csv c;
    assert_int_equal(read_text(text, &c, &d), 0);
    assert_int_equal(c.kind, PLOT_SWEEP);
    assert_int_equal(c.rows, 8);
    assert_int_equal(c.nseries, 4);
    /* nvlink's crossover n* = 1 us x 300 GB/s = 300000 B: 8 B is below it,
     * 1 MiB above (the same figures `commlab sweep` prints). */
    assert_non_null(strstr(text, "\n8,nvlink,1.00002667e-06,latency,300000,1e-06,3e+11\n"));
    assert_non_null(strstr(text, "\n1048576,nvlink,"));
    assert_non_null(strstr(strstr(text, "\n1048576,nvlink,"), ",bandwidth,300000,"));
    free(text);
    tier_set_release(&ts);
}

static cl_record mk(int rank, int iter, rec_op op, double posted, double started, double fin)
{
    cl_record r = {.posted = posted, .started = started, .finished = fin, .bytes = 8,
                   .rank = rank, .peer = 1 - rank, .tag = 0, .iter = iter, .op = (uint8_t)op,
                   .blocking = 1};
    return r;
}

typedef struct recs_in { const cl_record *v; size_t n; const char *status; } recs_in;

static int timeline_write(FILE *f, const void *arg)
{
    const recs_in *r = arg;
    plot_timeline_meta m = {.title = "pingpong, shm", .side = "shm", .status = r->status};
    return plot_write_timeline(f, r->v, r->n, &m);
}

static int step_write(FILE *f, const void *arg)
{
    static const plot_step_row rows[] = {
        {1, 8, 1, 25.1e-3, 24e-3, 0, 0, 1.1e-3},
        {2, 2, 2, 32.7e-3, 24e-3, 1.7e-3, 6.8e-3, 0.2e-3},
    };
    (void)arg;
    return plot_write_step(f, rows, 2, "layouts");
}

/* The step kind: a row per layout, its key tp.dp.pp, read back whole; a
 * negative wait is refused with its line and column. */
static void test_step_written_and_read_back(void **state)
{
    (void)state;
    mem m;
    char *text = written(step_write, NULL, &m);
    plot_csv c;
    cl_diag d = {{0}};
    assert_int_equal(read_text(text, &c, &d), 0);
    assert_int_equal(c.kind, PLOT_STEP);
    assert_int_equal(c.rows, 2);
    assert_string_equal(c.series, "tp1.dp8.pp1 tp2.dp2.pp2");
    assert_non_null(strstr(text, "tp2.dp2.pp2,0.0327,0.024,0.0017,0.0068,0.0002\n"));
    free(text);
    static const char bad[] = "# commlab-plot: step\n"
                              "layout,step_s,compute_s,tp_wait_s,pp_wait_s,dp_wait_s\n"
                              "tp1.dp8.pp1,0.025,0.024,0,-0.001,0.001\n";
    assert_int_not_equal(read_text(bad, &c, &d), 0);
    assert_non_null(strstr(d.msg, "t.csv:3"));
    assert_non_null(strstr(d.msg, "pp_wait_s"));
}

static void test_timeline_keeps_the_last_iteration(void **state)
{
    (void)state;
    const cl_record recs[] = {
        mk(1, -1, REC_BARRIER, 0.5, 0.5, 0.6),    /* warm-up: left out */
        mk(1, 0, REC_SEND, 10.25, 10.5, 11.0),
        mk(0, 0, REC_RECV, 10.0, 10.5, 11.0),
        mk(0, 0, REC_BARRIER, 9.5, 9.5, 10.0),
        mk(1, 0, REC_RECV, 12.0, 11.0, 12.5),     /* started before posted: clamped */
    };
    recs_in in = {recs, 5, "ok"};
    mem m;
    char *text = written(timeline_write, &in, &m);
    plot_csv c;
    cl_diag d = {{0}};
    assert_int_equal(read_text(text, &c, &d), 0);
    assert_int_equal(c.kind, PLOT_TIMELINE);
    assert_int_equal(c.rows, 4);
    assert_string_equal(c.side, "shm");
    assert_string_equal(c.series, "barrier recv send");
    /* By rank then time, from the iteration's earliest post (9.5 s), which
     * the file gives on the run's clock; the reader keeps it. */
    assert_true(c.origin == 9.5);
    const char *want = "# iteration: 0\n"
                       "# origin_s: 9.5\n"
                       "rank,op,posted_s,started_s,finished_s,peer,bytes,tag,stalled\n"
                       "0,barrier,0,0,0.5,1,8,0,0\n"
                       "0,recv,0.5,1,1.5,1,8,0,0\n"
                       "1,send,0.75,1,1.5,0,8,0,0\n"
                       "1,recv,2.5,2.5,3,0,8,0,0\n";
    if (!strstr(text, want))
        fail_msg("got:\n%s\nwant it to contain:\n%s", text, want);
    free(text);

    /* A run that stalled in its warm-up keeps that iteration. */
    recs_in dl = {recs, 1, "deadlock"};
    text = written(timeline_write, &dl, &m);
    assert_int_equal(read_text(text, &c, &d), 0);
    assert_string_equal(c.status, "deadlock");
    assert_non_null(strstr(text, "# iteration: -1\n"));
    free(text);

    /* A call that never completed is written as stalled. */
    cl_record stalled[] = {mk(0, 0, REC_BARRIER, 0, 0, 1.0), mk(0, 0, REC_SEND, 1.0, 1.0, 1.0)};
    stalled[1].stalled = 1;
    recs_in st = {stalled, 2, "deadlock"};
    text = written(timeline_write, &st, &m);
    assert_int_equal(read_text(text, &c, &d), 0);
    if (!strstr(text, "0,barrier,0,0,1,1,8,0,0\n0,send,1,1,1,1,8,0,1\n"))
        fail_msg("got:\n%s", text);
    free(text);

    cl_record bad = mk(0, 0, REC_SEND, 0, 0, NAN);
    plot_timeline_meta meta = {.title = "t", .side = "sim", .status = "ok"};
    assert_int_equal(plot_write_timeline(stdout, &bad, 1, &meta), CL_EINVAL);
    assert_int_equal(plot_write_timeline(stdout, recs, 0, &meta), CL_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reads_compare),
        cmocka_unit_test(test_title_defaults_and_is_cleaned),
        cmocka_unit_test(test_errors_name_line_and_value),
        cmocka_unit_test(test_row_checks),
        cmocka_unit_test(test_kinds_and_terms),
        cmocka_unit_test(test_gnuplot_quoting),
        cmocka_unit_test(test_tiers_written_and_read_back),
        cmocka_unit_test(test_sweep_written_and_read_back),
        cmocka_unit_test(test_step_written_and_read_back),
        cmocka_unit_test(test_timeline_keeps_the_last_iteration),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
