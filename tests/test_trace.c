/* test_trace.c - Perfetto / Chrome trace output from records. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commlab.h"
#include "core/trace.h"
#include "tests/testutil.h"

/* ---- a small JSON checker: one RFC 8259 value, nothing after it ---- */

typedef struct jp { const char *s; } jp;

static void ws(jp *p) { while (*p->s && strchr(" \t\r\n", *p->s)) p->s++; }

static bool jstring(jp *p)
{
    if (*p->s != '"')
        return false;
    for (p->s++; *p->s && *p->s != '"'; p->s++) {
        if ((unsigned char)*p->s < 0x20)
            return false;
        if (*p->s == '\\' && !*++p->s)
            return false;
    }
    return *p->s++ == '"';
}

static bool jvalue(jp *p, int depth)
{
    ws(p);
    if (depth > 64)
        return false;
    char c = *p->s;
    if (c == '{' || c == '[') {
        char close = c == '{' ? '}' : ']';
        p->s++;
        ws(p);
        if (*p->s == close) {
            p->s++;
            return true;
        }
        for (;;) {
            if (c == '{') {
                ws(p);
                if (!jstring(p))
                    return false;
                ws(p);
                if (*p->s++ != ':')
                    return false;
            }
            if (!jvalue(p, depth + 1))
                return false;
            ws(p);
            if (*p->s == ',') {
                p->s++;
                continue;
            }
            return *p->s++ == close;
        }
    }
    if (c == '"')
        return jstring(p);
    if (!strncmp(p->s, "true", 4) || !strncmp(p->s, "null", 4)) {
        p->s += 4;
        return true;
    }
    if (!strncmp(p->s, "false", 5)) {
        p->s += 5;
        return true;
    }
    char *end;
    strtod(p->s, &end);
    if (end == p->s || !strchr("-0123456789", c))
        return false;
    p->s = end;
    return true;
}

static void assert_json(const char *text)
{
    jp p = {text};
    if (!jvalue(&p, 0))
        fail_msg("invalid JSON at offset %td: %.40s", p.s - text, p.s);
    ws(&p);
    assert_int_equal(*p.s, '\0');
}

/* ---- helpers ---- */

static char *write_trace(const cl_record *r, size_t n, const trace_meta *m, int *rc)
{
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    assert_non_null(f);
    *rc = trace_write(f, r, n, m);
    fclose(f);
    return out;
}

/* The line (one event per line) holding every needle; NULL if none. */
static const char *find_line(const char *text, const char *a, const char *b, char *buf,
                             size_t cap)
{
    for (const char *l = text; *l;) {
        const char *e = strchr(l, '\n');
        size_t len = e ? (size_t)(e - l) : strlen(l);
        if (len < cap) {
            memcpy(buf, l, len);
            buf[len] = '\0';
            if (strstr(buf, a) && (!b || strstr(buf, b)))
                return buf;
        }
        if (!e)
            break;
        l = e + 1;
    }
    return NULL;
}

static long long field(const char *line, const char *key)
{
    const char *p = strstr(line, key);
    if (!p)
        fail_msg("no %s in %s", key, line);
    return strtoll(p + strlen(key), NULL, 10);
}

static size_t count(const char *text, const char *needle)
{
    size_t k = 0;
    for (const char *p = text; (p = strstr(p, needle)); p++)
        k++;
    return k;
}

#define US 1e-6
static const trace_meta META = {"pingpong", "sim", 2, 100.0, 0, NULL};

/* 2 ranks, times from origin 100 s: a blocking send/recv pair (msg 1) with
 * a rendezvous wait, two overlapping isends (msg 2, 3) of which only msg 2
 * is received, a wait, and a 1 ns compute. */
static const cl_record RECS[] = {
    {100 + 0 * US, 100 + 0 * US, 100 + 10 * US, 0, 0, 0, -1, 0, 0, REC_ITER, 1, 0},
    {100 + 1 * US, 100 + 2 * US, 100 + 4 * US, 4096, 1, 0, 1, 7, 0, REC_SEND, 1, 0},
    {100 + 5 * US, 100 + 5 * US, 100 + 8 * US, 1024, 2, 0, 1, 8, 0, REC_SEND, 0, 0},
    {100 + 5.5 * US, 100 + 5.5 * US, 100 + 9 * US, 1024, 3, 0, 1, 9, 0, REC_SEND, 0, 0},
    {100 + 6 * US, 100 + 6 * US, 100 + 9 * US, 0, 0, 0, 1, 8, 0, REC_WAIT, 1, 0},
    {100 + 9 * US, 100 + 9 * US, 100 + 10 * US, 0, 0, 0, -1, 0, 0, REC_COMPUTE, 1, 0},
    {100 + 0.5 * US, 100 + 2 * US, 100 + 4 * US, 4096, 1, 1, 0, 7, 0, REC_RECV, 1, 0},
    {100 + 4 * US, 100 + 4 * US, 100 + 4.001 * US, 0, 0, 1, -1, 0, 0, REC_COMPUTE, 1, 0},
    {100 + 4.5 * US, 100 + 6 * US, 100 + 8 * US, 1024, 2, 1, 0, 8, 0, REC_RECV, 1, 0},
};
#define NRECS (sizeof RECS / sizeof RECS[0])

static void test_trace_layout(void **state)
{
    (void)state;
    int rc;
    char *out = write_trace(RECS, NRECS, &META, &rc);
    assert_int_equal(rc, 0);
    assert_json(out);
    assert_non_null(strstr(out, "\"displayTimeUnit\":\"ns\""));
    assert_non_null(strstr(out, "\"traceEvents\":["));
    assert_non_null(strstr(out, "\"name\":\"commlab pingpong (sim)\""));
    char buf[512];
    const char *l;
    assert_non_null(l = find_line(out, "\"thread_name\"", "\"rank 1\"", buf, sizeof buf));
    assert_int_equal(field(l, "\"tid\":"), TRACE_LANE_STRIDE);
    assert_non_null(l = find_line(out, "\"thread_sort_index\"", "\"tid\":64,", buf, sizeof buf));
    assert_int_equal(field(l, "\"sort_index\":"), 64);
    assert_non_null(find_line(out, "\"rank 0 (async 2)\"", NULL, buf, sizeof buf));
    assert_null(find_line(out, "\"rank 0 (async 3)\"", NULL, buf, sizeof buf));

    /* Blocking send: posted..finished on lane 0, transfer nested. */
    assert_non_null(l = find_line(out, "\"name\":\"send\"", NULL, buf, sizeof buf));
    assert_non_null(strstr(l, "\"ph\":\"X\""));
    assert_non_null(strstr(l, "\"tid\":0,\"ts\":1,\"dur\":3,"));
    assert_non_null(strstr(l, "\"peer\":1,\"tag\":7,\"bytes\":4096,\"msg\":1,\"iter\":0"));
    assert_non_null(find_line(out, "\"transfer\"", "\"tid\":0,\"ts\":2,\"dur\":2,", buf,
                              sizeof buf));

    /* The overlapping isends landed on different async lanes of rank 0. */
    long long tid_a, tid_b;
    assert_non_null(l = find_line(out, "\"ph\":\"X\",\"name\":\"isend\"", "\"ts\":5,", buf, sizeof buf));
    assert_non_null(strstr(l, "\"ph\":\"X\""));
    tid_a = field(l, "\"tid\":");
    assert_non_null(l = find_line(out, "\"ph\":\"X\",\"name\":\"isend\"", "\"ts\":5.5,", buf, sizeof buf));
    assert_non_null(strstr(l, "\"ph\":\"X\""));
    tid_b = field(l, "\"tid\":");
    assert_true(tid_a != tid_b);
    assert_true(tid_a > 0 && tid_a < TRACE_LANE_STRIDE);
    assert_true(tid_b > 0 && tid_b < TRACE_LANE_STRIDE);
    /* and their posts are instants on the rank's main track */
    assert_int_equal(count(out, "\"ph\":\"i\",\"name\":\"isend\""), 2);
    assert_non_null(find_line(out, "\"ph\":\"i\"", "\"tid\":0,\"ts\":5.5,", buf, sizeof buf));

    /* Nanosecond spans survive: a 1 ns compute at 4 us on rank 1. */
    assert_non_null(find_line(out, "\"compute\"", "\"tid\":64,\"ts\":4,\"dur\":0.001,", buf,
                              sizeof buf));
    free(out);
}

static void test_trace_flows(void **state)
{
    (void)state;
    int rc;
    char *out = write_trace(RECS, NRECS, &META, &rc);
    assert_int_equal(rc, 0);
    char buf[512];
    const char *l;
    /* msg 1: from the send's start on rank 0 to the receive's end on rank 1 */
    assert_non_null(l = find_line(out, "\"ph\":\"s\"", "\"id\":1,", buf, sizeof buf));
    assert_non_null(strstr(l, "\"tid\":0,\"ts\":2}"));
    assert_non_null(l = find_line(out, "\"ph\":\"f\"", "\"id\":1,", buf, sizeof buf));
    assert_non_null(strstr(l, "\"bp\":\"e\",\"tid\":64,\"ts\":4}"));
    /* msg 2 starts on the isend's async lane */
    long long lane;
    assert_non_null(l = find_line(out, "\"ph\":\"X\",\"name\":\"isend\"", "\"ts\":5,", buf, sizeof buf));
    lane = field(l, "\"tid\":");
    assert_non_null(l = find_line(out, "\"ph\":\"s\"", "\"id\":2,", buf, sizeof buf));
    assert_int_equal(field(l, "\"tid\":"), lane);
    assert_non_null(find_line(out, "\"ph\":\"f\"", "\"id\":2,", buf, sizeof buf));
    /* msg 3 was never received: no arrow at all */
    assert_null(find_line(out, "\"id\":3,", NULL, buf, sizeof buf));
    assert_int_equal(count(out, "\"ph\":\"s\""), 2);
    assert_int_equal(count(out, "\"ph\":\"f\""), 2);
    /* The arrow ending at 4 us comes before the compute starting there, so
     * Perfetto binds it to the receive, still open. */
    const char *f1 = strstr(out, "\"ph\":\"f\",\"name\":\"msg\",\"cat\":\"flow\",\"pid\":0,\"id\":1,");
    const char *c = strstr(out, "\"name\":\"compute\",\"cat\":\"compute\",\"pid\":0,\"tid\":64");
    assert_non_null(f1);
    assert_non_null(c);
    assert_true(f1 < c);
    free(out);
}

static void test_trace_deterministic(void **state)
{
    (void)state;
    int rc1, rc2, rc3;
    char *a = write_trace(RECS, NRECS, &META, &rc1);
    char *b = write_trace(RECS, NRECS, &META, &rc2);
    /* Order of the input does not matter either. */
    cl_record rev[NRECS];
    for (size_t i = 0; i < NRECS; i++)
        rev[i] = RECS[NRECS - 1 - i];
    char *c = write_trace(rev, NRECS, &META, &rc3);
    assert_int_equal(rc1 | rc2 | rc3, 0);
    assert_string_equal(a, b);
    assert_string_equal(a, c);
    free(a);
    free(b);
    free(c);
}

static void test_trace_many_lanes_widen_stride(void **state)
{
    (void)state;
    enum { K = 100 };
    cl_record r[K + 1];
    for (int i = 0; i < K; i++)
        r[i] = (cl_record){.posted = i * 1e-9, .started = i * 1e-9, .finished = 1e-6,
                           .peer = 1, .op = REC_RECV, .blocking = 0};
    r[K] = (cl_record){.rank = 1, .peer = -1, .finished = 1e-6, .op = REC_COMPUTE, .blocking = 1};
    trace_meta m = {"alltoall", "sim", 2, 0, 0, NULL};
    int rc;
    char *out = write_trace(r, K + 1, &m, &rc);
    assert_int_equal(rc, 0);
    assert_json(out);
    char buf[512];
    const char *l;
    assert_non_null(find_line(out, "\"rank 0 (async 100)\"", "\"tid\":100,", buf, sizeof buf));
    /* 101 lanes on rank 0: rank 1 starts after them */
    assert_non_null(l = find_line(out, "\"thread_name\"", "\"rank 1\"", buf, sizeof buf));
    assert_int_equal(field(l, "\"tid\":"), 101);
    free(out);
}

/* Tracks per kind: the caller's record rank is a track, rank t / kinds,
 * kind t % kinds, named after its kind (none for a NULL name); a message
 * between two ranks' tracks of one kind still draws its arrow, and the
 * file says how many ranks ran, not tracks. */
static void test_trace_kinds(void **state)
{
    (void)state;
    static const char *const names[2] = {NULL, "tp"};
    trace_meta m = {"training-step", "sim", 4, 100.0, 2, names};
    cl_record r[] = {
        {100, 100, 100 + 2 * US, 0, 0, 0, -1, 0, 0, REC_COMPUTE, 1, 0},
        {100 + 2 * US, 100 + 2 * US, 100 + 3 * US, 64, 5, 1, 1, 0, 0, REC_SEND, 1, 0},
        {100 + 1 * US, 100 + 2 * US, 100 + 3 * US, 64, 5, 3, 0, 0, 0, REC_RECV, 1, 0},
    };
    int rc;
    char *out = write_trace(r, 3, &m, &rc);
    assert_int_equal(rc, 0);
    assert_json(out);
    char buf[512];
    const char *l;
    assert_non_null(l = find_line(out, "\"thread_name\"", "\"rank 0\"", buf, sizeof buf));
    assert_int_equal(field(l, "\"tid\":"), 0);
    assert_non_null(l = find_line(out, "\"thread_name\"", "\"rank 0 tp\"", buf, sizeof buf));
    assert_int_equal(field(l, "\"tid\":"), TRACE_LANE_STRIDE);
    assert_non_null(l = find_line(out, "\"thread_name\"", "\"rank 1 tp\"", buf, sizeof buf));
    assert_int_equal(field(l, "\"tid\":"), 3 * TRACE_LANE_STRIDE);
    assert_non_null(strstr(out, "\"ranks\":2"));
    assert_int_equal(count(out, "\"ph\":\"s\""), 1);
    assert_int_equal(count(out, "\"ph\":\"f\""), 1);
    free(out);
    m.ranks = 3; /* not a whole number of ranks' tracks */
    out = write_trace(r, 2, &m, &rc);
    assert_int_equal(rc, CL_EINVAL);
    free(out);
}

static void test_trace_empty_and_invalid(void **state)
{
    (void)state;
    int rc;
    char *out = write_trace(NULL, 0, &META, &rc);
    assert_int_equal(rc, 0);
    assert_json(out);
    assert_int_equal(count(out, "\"thread_name\""), 2);
    free(out);

    cl_record bad = RECS[1];
    bad.rank = 2;
    out = write_trace(&bad, 1, &META, &rc);
    assert_int_equal(rc, CL_EINVAL);
    assert_string_equal(out, ""); /* nothing written */
    free(out);
    bad = RECS[1];
    bad.finished = NAN;
    out = write_trace(&bad, 1, &META, &rc);
    assert_int_equal(rc, CL_EINVAL);
    free(out);
    trace_meta m = META;
    m.pattern = NULL;
    out = write_trace(RECS, NRECS, &m, &rc);
    assert_int_equal(rc, CL_EINVAL);
    free(out);
}

static void test_trace_write_file(void **state)
{
    (void)state;
    cl_diag d = {""};
    assert_int_equal(trace_write_file("/nonexistent-dir/t.json", RECS, NRECS, &META, &d), CL_EIO);
    assert_non_null(strstr(d.msg, "'/nonexistent-dir/t.json'"));

    char path[] = "/tmp/commlab-trace-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(trace_write_file(path, RECS, NRECS, &META, &d), 0);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char text[8192];
    size_t len = fread(text, 1, sizeof text - 1, f);
    text[len] = '\0';
    fclose(f);
    int rc;
    char *mem = write_trace(RECS, NRECS, &META, &rc);
    assert_string_equal(text, mem);
    cl_record bad = RECS[0];
    bad.rank = -1;
    assert_int_equal(trace_write_file(path, &bad, 1, &META, &d), CL_EINVAL);
    f = fopen(path, "r"); /* a failed write leaves the file as it was */
    assert_non_null(f);
    len = fread(text, 1, sizeof text - 1, f);
    text[len] = '\0';
    fclose(f);
    assert_string_equal(text, mem);
    free(mem);
    close(fd);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trace_layout),
        cmocka_unit_test(test_trace_flows),
        cmocka_unit_test(test_trace_deterministic),
        cmocka_unit_test(test_trace_many_lanes_widen_stride),
        cmocka_unit_test(test_trace_empty_and_invalid),
        cmocka_unit_test(test_trace_kinds),
        cmocka_unit_test(test_trace_write_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
