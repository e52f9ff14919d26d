/* run_size.c - one size of a pattern on a backend: the options become
 * core/run.h's job, the backend runs it, the result becomes a row. */
#include "cli/run_size.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/near.h"
#include "core/reduce.h"
#include "core/units.h"

int run_exit_code(int status, const run_env *env)
{
    if (env->signal)
        return 128 + env->signal;
    switch (status) {
    case 0: return CLI_EXIT_OK;
    case CL_ECHECK: return CLI_EXIT_CHECK;
    case CL_EDEADLOCK: return CLI_EXIT_DEADLOCK;
    case CL_ENOSYS: return CLI_EXIT_USAGE; /* this machine cannot (--netlab without root) */
    default: return CLI_EXIT_FAILED;
    }
}

/* Where a pattern's cl_printf lines go: stdout beside a table, stderr when
 * stdout carries CSV or JSON that a program reads. */
static FILE *pattern_out(const run_opts *o)
{
    return o->quiet ? o->quiet : o->lines ? o->lines : o->fmt == CLI_TEXT ? stdout : stderr;
}

/* Where a run's errors and reports go: stderr, or o->quiet. */
static FILE *report_out(const run_opts *o)
{
    return o->quiet ? o->quiet : stderr;
}

/* The job of one size of o. */
run_job run_job_of(const run_opts *o, uint64_t bytes, rec_log *log)
{
    run_job j = {
        .fn = o->pattern->fn, .args = o->args, .nranks = o->ranks, .warmup = o->warmup,
        .iters = o->iters, .eager_limit = o->eager_limit, .payload = o->payload,
        .check = o->check, .check_warmup = o->check_warmup, .debug = o->debug,
        .sync = o->real.sync, .cache = o->real.cache,
        .timeout = o->timeout,
        .records = log,
        .out = pattern_out(o), .report = report_out(o),
    };
    j.args.bytes = (size_t)bytes;
    return j;
}

int run_parse_sync(const char *text, run_sync *out)
{
    if (strcmp(text, "window") == 0)
        *out = RUN_SYNC_WINDOW;
    else if (strcmp(text, "barrier") == 0)
        *out = RUN_SYNC_BARRIER;
    else
        return cli_error("--sync must be window or barrier, got '%s'", text);
    return 0;
}

int run_parse_cache(const char *text, cache_mode *out)
{
    if (cache_mode_parse(text, out))
        return cli_error("--cache must be fresh, warm or cold, got '%s'", text);
    if (*out == CACHE_COLD && !cache_cold_supported())
        return cli_error("--cache cold flushes lines with clflush (x86-64) or dc civac "
                         "(arm64): this build has neither; use fresh or warm");
    return 0;
}

const char *run_cache_words(cache_mode m)
{
    switch (m) {
    case CACHE_FRESH: return "buffers written just before (--cache fresh)";
    case CACHE_WARM: return "buffers left as the last iteration left them (--cache warm)";
    case CACHE_COLD: return "buffers flushed from the caches (--cache cold)";
    }
    return "?";
}

/* Every course pattern holds at least one buffer of the message size per
 * rank, so ranks x bytes above the memory available would end in the
 * kernel's out-of-memory killer, which says nothing.  A student's pattern
 * may hold less, so it is left to try. */
int run_check_memory(const run_opts *o, uint64_t bytes, const char *hint)
{
    uint64_t avail;
    if (!o->payload || o->quiet || o->pattern == &o->student.info || cli_mem_available(&avail))
        return 0;
    double need = (double)o->ranks * (double)bytes;
    if (need <= (double)avail)
        return 0;
    char sz[UNITS_BUF], n[UNITS_BUF], a[UNITS_BUF];
    fprintf(stderr, "commlab: %d ranks of %s need at least %s of buffers (one message "
            "each), more than the %s of memory available\n", o->ranks,
            units_size_str(sz, bytes), units_size_str(n, (uint64_t)need),
            units_size_str(a, avail));
    if (hint)
        fputs(hint, stderr);
    return CL_ENOSYS;
}

int run_size_outcome(const run_opts *o, uint64_t bytes, int err, run_result *res,
                     run_row *row, const char *hint)
{
    FILE *f = report_out(o);
    if (err) {
        fprintf(f, "commlab: %s\n", res->diag.msg[0] ? res->diag.msg : cl_strerror(err));
        return err;
    }
    if (res->status) {
        fprintf(f, "commlab: %s\n", res->diag.msg);
        if (res->status == CL_ENOMEM && !o->quiet && hint)
            fputs(hint, stderr);
        return res->status;
    }
    if ((err = run_row_fill(row, res, o->pattern, bytes, o->iters + o->warmup))) {
        fprintf(f, "commlab: %s\n", cl_strerror(err));
        return err;
    }
    return 0;
}

int run_parse_netlab(const char *text, double *out)
{
    cl_diag d = {{0}};
    if (units_parse_bandwidth(text, "--netlab", out, &d))
        return cli_diag(&d, CLI_EXIT_USAGE);
    if (!(*out >= 1000))
        return cli_error("--netlab needs a rate of at least 8kbit/s, got '%s'", text);
    return 0;
}

int run_parse_timeout(const char *text, double *out)
{
    cl_diag d = {{0}};
    if (strcmp(text, "0") == 0 || strcmp(text, "none") == 0) {
        *out = 0;
        return 0;
    }
    if (units_parse_time(text, "--timeout", out, &d))
        return cli_diag(&d, CLI_EXIT_USAGE);
    if (!(*out >= 0.01 && *out <= 7 * 86400.0))
        return cli_error("--timeout must be between 10ms and a week (604800s), or 0 for no "
                         "limit, got '%s'", text);
    return 0;
}

int run_parse_reduce_bandwidth(const char *text, double *out)
{
    cl_diag d = {{0}};
    if (strcmp(text, "inf") == 0) {
        *out = INFINITY;
        return 0;
    }
    if (units_parse_bandwidth(text, "--reduce-bandwidth", out, &d))
        return cli_diag(&d, CLI_EXIT_USAGE);
    if (!(*out > 0))
        return cli_error("--reduce-bandwidth must be > 0 (or inf: free), got '%s'", text);
    return 0;
}

int run_parse_sharing(const char *text, run_opts *o)
{
    o->sim.sharing_given = true;
    if (strcmp(text, "maxmin") == 0)
        o->sim.sharing = RUN_SHARE_MAXMIN;
    else if (strcmp(text, "none") == 0)
        o->sim.sharing = RUN_SHARE_NONE;
    else
        return cli_error("--sharing must be maxmin or none, got '%s'", text);
    return 0;
}

const char *run_sharing_name(run_sharing s, bool text)
{
    return s == RUN_SHARE_NONE ? "none" : text ? "max-min" : "maxmin";
}

int run_parse_copy(const char *text, run_copy *out)
{
    if (strcmp(text, "auto") == 0)
        *out = RUN_COPY_AUTO;
    else if (strcmp(text, "cma") == 0)
        *out = RUN_COPY_CMA;
    else if (strcmp(text, "staging") == 0)
        *out = RUN_COPY_STAGING;
    else
        return cli_error("--shm-copy must be auto, cma or staging, got '%s'", text);
    return 0;
}

const char *run_copy_name(run_copy c)
{
    return c == RUN_COPY_CMA ? "cma" : c == RUN_COPY_STAGING ? "staging" : "auto";
}

/* o->pattern for collective c and o->algo. */
static int find_algo(run_opts *o, const collective_info *c)
{
    char list[256];
    o->coll = c;
    if (!o->algo || strcmp(o->algo, "all") == 0)
        o->pattern = collective_algo(c, o->algo ? collective_algo_at(c, 0)->algo : c->algo);
    else
        o->pattern = collective_algo(c, o->algo);
    if (!o->pattern)
        return cli_error("unknown --algo '%s' for %s (%s, or all)", o->algo, c->name,
                         collective_algo_list(c, list, sizeof list));
    return 0;
}

int run_find_pattern(run_opts *o, const char *name)
{
    const collective_info *c = collective_find(name);
    if (c)
        return find_algo(o, c);
    o->pattern = pattern_find(name);
    if (o->pattern && o->algo) {
        if (o->pattern->collective)
            return cli_error("'%s' is one algorithm of %s: run %s --algo %s", name,
                             o->pattern->collective->name, o->pattern->collective->name,
                             o->algo);
        return cli_error("--algo picks an algorithm of a collective (`commlab patterns` lists "
                         "them), not of '%s'", name);
    }
    if (!o->pattern && student_is_file(name)) {
        int rc = student_load(&o->student, name);
        if (rc)
            return rc;
        o->pattern = &o->student.info;
    }
    if (!o->pattern) {
        cli_near near;
        cli_near_init(&near, name);
        for (size_t i = 0; pattern_at(i); i++)
            cli_near_add(&near, pattern_at(i)->name);
        if (near.best)
            return cli_error("unknown pattern '%s'; did you mean '%s'? (`commlab patterns` "
                             "lists them)", name, near.best);
        return cli_error("unknown pattern '%s' (`commlab patterns` lists them)", name);
    }
    return 0;
}

static int check_schedule(const run_opts *o)
{
    const char *want = o->args.schedule, *list = o->pattern->schedules;
    if (!want)
        return 0;
    if (!list)
        return cli_error("--schedule applies to the pipeline pattern, not '%s'",
                         o->pattern->name);
    char names[8][32]; /* cli_near keeps a pointer to the nearest */
    cli_near near;
    cli_near_init(&near, want);
    for (int n = 0; *list && n < 8; n++) {
        size_t len = strcspn(list, ",");
        cli_textf(names[n], sizeof names[n], "%.*s", (int)len, list);
        if (strcmp(names[n], want) == 0)
            return 0;
        cli_near_add(&near, names[n]);
        list += len + (list[len] == ',');
    }
    list = o->pattern->schedules;
    if (near.best)
        return cli_error("unknown --schedule '%s' for %s; did you mean '%s'? (%s)", want,
                         o->pattern->name, near.best, list);
    return cli_error("unknown --schedule '%s' for %s (%s)", want, o->pattern->name, list);
}

int run_parse_reduction(run_opts *o, const char *name, const char *text)
{
    o->op_given = true;
    if (strcmp(name, "op") == 0) {
        if (reduce_op_parse(text, &o->args.op))
            return cli_error("unknown --op '%s' (%s)", text, reduce_op_list());
    } else if (reduce_dtype_parse(text, &o->args.dtype)) {
        return cli_error("unknown --dtype '%s' (%s)", text, reduce_dtype_list());
    }
    return 0;
}

bool run_reduces(const run_opts *o)
{
    const collective_info *c = o->pattern->collective;
    return c ? c->reduces : o->pattern == &o->student.info && o->op_given;
}

static int check_reduction(const run_opts *o)
{
    const pattern_info *p = o->pattern;
    char why[96];
    if (!o->op_given)
        return 0;
    if (!run_reduces(o))
        return cli_error("--op and --dtype apply to the reductions (reduce, allreduce, "
                         "reducescatter) and your own FILE.c, not '%s'", p->name);
    if (reduce_valid(o->args.dtype, o->args.op, why, sizeof why))
        return cli_error("--op %s: %s: give --dtype i32 or i64", cl_op_name(o->args.op), why);
    return 0;
}

int run_check_pattern_args(const run_opts *o)
{
    if (o->pattern->from_step_file && !o->args.step)
        return cli_error("%s runs from a step file: commlab step FILE.yaml (configs/steps/ "
                         "has examples)", o->pattern->name);
    int rc = check_schedule(o);
    if (rc || (rc = check_reduction(o)))
        return rc;
    int g = o->args.group ? o->args.group : o->sim.topology ? 0 : 2;
    if (o->pattern->group_divides && g && o->ranks % g != 0)
        return cli_error("%s: -n %d does not split into groups of %d: give -n a multiple of "
                         "--group", o->pattern->name, o->ranks, g);
    for (size_t i = 0; o->pattern->max_pieces && o->args.chunk && i < o->nsizes; i++)
        if ((o->sizes[i] + o->args.chunk - 1) / o->args.chunk > (uint64_t)o->pattern->max_pieces)
            return cli_error("%s: --chunk %zu cuts %llu bytes into more than %d pieces: raise "
                             "--chunk", o->pattern->name, o->args.chunk,
                             (unsigned long long)o->sizes[i], o->pattern->max_pieces);
    return 0;
}

int run_pattern_option(const char *name, const char *text, cl_args *a)
{
    cl_diag d = {{0}};
    uint64_t v;
    if (strcmp(name, "microbatches") == 0)
        return cli_parse_int("--microbatches", text, 1, 1000000, &a->microbatches);
    if (strcmp(name, "compute") == 0)
        return units_parse_time(text, "--compute", &a->compute, &d) ? cli_diag(&d, CLI_EXIT_USAGE)
                                                                     : 0;
    if (strcmp(name, "group") == 0)
        return cli_parse_int("--group", text, 1, 1 << 24, &a->group);
    if (strcmp(name, "pieces") == 0)
        return cli_parse_int("--pieces", text, 1, 1 << 20, &a->pieces);
    if (units_parse_size(text, "--chunk", &v, &d))
        return cli_diag(&d, CLI_EXIT_USAGE);
    if (v == 0)
        return cli_error("--chunk must be at least 1 byte");
    a->chunk = (size_t)v;
    return 0;
}
