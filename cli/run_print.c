/* run_print.c - the text table, CSV and JSON of `commlab run` (run_print.h). */
#include "cli/run_print.h"

#include <stdio.h>
#include <string.h>

#include "core/json.h"
#include "core/table.h"
#include "core/units.h"

/* Whether line l moved bytes: a pattern that sends nothing has no rate,
 * however fast it was.  The library's messages are its own, never
 * counted, so its rows always have one. */
static bool moved_bytes(const run_opts *o, const run_algo_row *l)
{
    return l->row.bytes && (l->row.messages || l->p == &o->library_pattern);
}

/* nccl-tests' algbw and busbw of line l (0 when it moved nothing); true
 * when its collective has a bus factor. */
static bool bus_of(const run_opts *o, const run_algo_row *l, double *algbw, double *busbw)
{
    pattern_bus bus = l->p->collective ? l->p->collective->bus : BUS_NONE;
    *algbw = moved_bytes(o, l) ? l->row.bandwidth : 0;
    *busbw = *algbw * pattern_bus_factor(bus, o->ranks);
    return bus != BUS_NONE;
}

/* What the run is called: the pattern, or its collective when several
 * algorithms stand side by side. */
static const char *run_name(const run_opts *o, bool side_by_side)
{
    return side_by_side ? o->pattern->collective->name : o->pattern->name;
}

/* A start skew worth a line: a tenth of the iteration's median or more. */
static bool skew_shows(const run_algo_row *l)
{
    const run_row *r = &l->row;
    return r->skew.n && r->skew.median >= 0.1 * r->t.median * l->p->time_divisor;
}

/* Under the header, the start skew of the sizes where it is not small
 * next to the figures, and what it costs when ranks outnumber cores. */
static void print_skew(const run_opts *o, const run_env *env, const run_algo_row *lines,
                       size_t n)
{
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        const run_row *r = &lines[i].row;
        if (!skew_shows(&lines[i]))
            continue;
        char b[UNITS_BUF], m[UNITS_BUF], hi[UNITS_BUF];
        printf("%s%s %s", any ? ", " : "start skew (spread of the ranks' starts, median, max): ",
               units_size_str(b, r->bytes), units_time_digits(m, r->skew.median, 3));
        printf(" (%s)", units_time_digits(hi, r->skew.max, 3));
        any = true;
    }
    if (any)
        putchar('\n');
    if (any && o->ranks > env->cores)
        printf("%d ranks on %d cores: ranks take turns on a core, so they reach a common start "
               "apart, and the wait for it sleeps then yields its core\n",
               o->ranks, env->cores);
}

/* A reduction's line under the header: its operator and type, and what
 * reducing costs a modeled rank. */
static void print_reducing(const run_opts *o, const backend_desc *desc)
{
    if (!run_reduces(o))
        return;
    printf("reducing: %s of %s elements", cl_op_name(o->args.op), cl_dtype_name(o->args.dtype));
    char bw[UNITS_BUF];
    if (desc->reduce && desc->gamma > 0)
        printf(" at %s a rank", units_bandwidth_str(bw, 1 / desc->gamma));
    else if (desc->reduce)
        printf(", free (reduce_bandwidth inf)");
    putchar('\n');
}

/* The lines above the table: where the run ran and how (the backend's
 * words), the reduction's line and the start skew's. */
static void print_header(const run_opts *o, const run_env *env, const backend_desc *desc,
                         const run_algo_row *lines, size_t n, bool all)
{
    char el[UNITS_BUF];
    printf("%s on %s%s: %d ranks, %s, eager limit %s, %d iteration%s%s\n", run_name(o, all),
           o->backend, desc->on, o->ranks, desc->where, units_size_str(el, o->eager_limit),
           o->iters, o->iters == 1 ? "" : "s", desc->how);
    print_reducing(o, desc);
    if (desc->skew)
        print_skew(o, env, lines, n);
    putchar('\n');
}

static void print_text(const run_opts *o, const run_env *env, const backend_desc *desc,
                       const run_algo_row *lines, size_t n, bool all)
{
    print_header(o, env, desc, lines, n, all);
    double algbw, busbw;
    bool bus = n > 0 && bus_of(o, &lines[0], &algbw, &busbw);
    const char *h[8];
    size_t nh = 0;
    h[nh++] = "size";
    if (all)
        h[nh++] = "algorithm";
    h[nh++] = "time (median)";
    h[nh++] = "min";
    h[nh++] = "max";
    if (bus) {
        h[nh++] = "algbw";
        h[nh++] = "busbw";
    } else {
        h[nh++] = "bandwidth";
    }
    h[nh++] = "messages";
    table t;
    if (table_init(&t, nh, h))
        return;
    for (size_t i = 0; i < n; i++) {
        const run_row *r = &lines[i].row;
        char b[UNITS_BUF], m[UNITS_BUF], lo[UNITS_BUF], hi[UNITS_BUF], bw[UNITS_BUF];
        char bb[UNITS_BUF];
        table_add(&t, "%s", units_size_str(b, r->bytes));
        if (all)
            table_add(&t, "%s", lines[i].p->algo);
        table_add(&t, "%s", units_time_digits(m, r->t.median, 4));
        table_add(&t, "%s", units_time_digits(lo, r->t.min, 4));
        table_add(&t, "%s", units_time_digits(hi, r->t.max, 4));
        bus_of(o, &lines[i], &algbw, &busbw);
        bool library = lines[i].p == &o->library_pattern, moved = moved_bytes(o, &lines[i]);
        table_add(&t, "%s", moved ? units_bandwidth_str(bw, algbw) : "-");
        if (bus)
            table_add(&t, "%s", moved ? units_bandwidth_str(bb, busbw) : "-");
        if (library)
            table_add(&t, "-");
        else
            table_add(&t, "%llu", (unsigned long long)r->messages);
    }
    table_print(&t, stdout, 0);
    table_release(&t);
    /* A pattern that makes its groups in every iteration pays for them in
     * its time: nothing on the other backends, a collective of the
     * library's own on mpi. */
    for (size_t i = 0; i < n; i++)
        if (lines[i].p->makes_groups && strcmp(o->backend, "mpi") == 0) {
            printf("\n%s makes its groups (cl_group) in every iteration, and on mpi each one "
                   "is an MPI_Comm_split and an MPI_Comm_dup over its parent: collectives of "
                   "their own, tens to hundreds of microseconds on one host, timed with it "
                   "(on sim, shm, tcp and rdma a group costs nothing)\n",
                   lines[i].p->algo ? lines[i].p->algo : lines[i].p->name);
            break;
        }
}

static void print_csv(const run_opts *o, const run_algo_row *lines, size_t n)
{
    double algbw, busbw;
    bool bus = n > 0 && bus_of(o, &lines[0], &algbw, &busbw);
    bool skew = n > 0 && lines[0].row.skew.n;
    const char *h[12] = {"bytes", "iters", "time_median_s", "time_min_s", "time_max_s",
                         "bandwidth_Bps", "messages"};
    int cols = 7;
    if (bus) {
        h[cols++] = "algorithm";
        h[cols++] = "algbw_Bps";
        h[cols++] = "busbw_Bps";
    }
    if (skew) { /* measured, started together: the spread of the starts */
        h[cols++] = "start_skew_median_s";
        h[cols++] = "start_skew_max_s";
    }
    table t;
    if (table_init(&t, cols, h))
        return;
    for (size_t i = 0; i < n; i++) {
        const run_row *r = &lines[i].row;
        table_add(&t, "%llu", (unsigned long long)r->bytes);
        table_add(&t, "%zu", r->t.n);
        table_add(&t, "%.12g", r->t.median);
        table_add(&t, "%.12g", r->t.min);
        table_add(&t, "%.12g", r->t.max);
        bus_of(o, &lines[i], &algbw, &busbw);
        table_add(&t, "%.12g", algbw);
        table_add(&t, "%llu", (unsigned long long)r->messages);
        if (bus) {
            table_add(&t, "%s", lines[i].p->algo);
            table_add(&t, "%.12g", algbw);
            table_add(&t, "%.12g", busbw);
        }
        if (skew) {
            table_add(&t, "%.12g", r->skew.median);
            table_add(&t, "%.12g", r->skew.max);
        }
    }
    table_print_csv(&t, stdout);
    table_release(&t);
}

static void print_json(const run_opts *o, const backend_desc *desc, const run_algo_row *lines,
                       size_t n, bool all, int status)
{
    json_writer w;
    json_init(&w, stdout, true);
    json_begin_object(&w);
    json_kv_string(&w, "command", "run");
    json_kv_string(&w, "pattern", run_name(o, all));
    if (o->pattern->collective)
        json_kv_string(&w, "collective", o->pattern->collective->name);
    json_kv_string(&w, "backend", o->backend);
    json_kv_uint(&w, "ranks", (uint64_t)o->ranks);
    backend_desc_json(&w, desc);
    json_kv_uint(&w, "eager_limit_bytes", o->eager_limit);
    if (run_reduces(o)) {
        json_kv_string(&w, "op", cl_op_name(o->args.op));
        json_kv_string(&w, "dtype", cl_dtype_name(o->args.dtype));
        if (desc->reduce)
            json_kv_number(&w, "gamma_s_per_byte", desc->gamma);
    }
    json_kv_string(&w, "status", status == 0 ? "ok" : cl_errname(status));
    json_key(&w, "results");
    json_begin_array(&w);
    for (size_t i = 0; i < n; i++) {
        const run_row *r = &lines[i].row;
        double algbw, busbw;
        json_begin_object(&w);
        json_kv_uint(&w, "bytes", r->bytes);
        if (lines[i].p->collective)
            json_kv_string(&w, "algorithm", lines[i].p->algo);
        json_kv_uint(&w, "iters", r->t.n);
        json_key(&w, "time_s");
        json_begin_object(&w);
        json_kv_number(&w, "median", r->t.median);
        json_kv_number(&w, "min", r->t.min);
        json_kv_number(&w, "max", r->t.max);
        json_end_object(&w);
        bool bus = bus_of(o, &lines[i], &algbw, &busbw);
        json_kv_number(&w, "bandwidth_Bps", algbw);
        if (r->skew.n) {
            json_key(&w, "start_skew_s");
            json_begin_object(&w);
            json_kv_number(&w, "median", r->skew.median);
            json_kv_number(&w, "max", r->skew.max);
            json_end_object(&w);
        }
        if (bus) {
            json_kv_number(&w, "algbw_Bps", algbw);
            json_kv_number(&w, "busbw_Bps", busbw);
        }
        if (lines[i].p != &o->library_pattern)
            json_kv_uint(&w, "messages", r->messages);
        json_end_object(&w);
    }
    json_finish(&w);
}

void run_print(const run_opts *o, const run_env *env, const backend_desc *desc,
               const run_algo_row *lines, size_t n, bool all, int status)
{
    if (o->fmt == CLI_JSON)
        print_json(o, desc, lines, n, all, status);
    else if (o->fmt == CLI_CSV)
        print_csv(o, lines, n);
    else if (n > 0)
        print_text(o, env, desc, lines, n, all);
}
