/* run_size.c - one size of a pattern, modeled or measured (moved here from
 * cmd_run.c so that run and compare share it). */
#include "cli/run_size.h"

#include <stdio.h>
#include <string.h>

#include "core/units.h"
#include "sim/engine.h"

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

static void fill_row(const run_opts *o, uint64_t bytes, double *iter_time, int iters,
                     uint64_t messages, run_row *row)
{
    for (int i = 0; i < iters; i++)
        iter_time[i] /= o->pattern->time_divisor;
    stats_compute(iter_time, (size_t)iters, &row->t);
    row->bytes = bytes;
    row->bandwidth = row->t.median > 0 ? (double)bytes / row->t.median : 0;
    row->messages = messages / (uint64_t)(o->iters + o->warmup);
}

/* What a backend's run of one size comes to: err (the run could not be
 * carried out) or status (the pattern's outcome) is reported, else row is
 * filled.  Returns the status to carry on with. */
static int size_outcome(const run_opts *o, uint64_t bytes, int err, int status,
                        const cl_diag *diag, double *iter_time, int iters, uint64_t messages,
                        run_row *row)
{
    if (err) {
        cli_diag(diag, 0);
        return err;
    }
    if (status)
        fprintf(stderr, "commlab: %s\n", diag->msg);
    else
        fill_row(o, bytes, iter_time, iters, messages, row);
    return status;
}

/* Where a pattern's cl_printf lines go: stdout beside a table, stderr when
 * stdout carries CSV or JSON that a program reads. */
static FILE *pattern_out(const run_opts *o)
{
    return o->fmt == CLI_TEXT ? stdout : stderr;
}

/* Runs one size modeled; fills row.  Returns the run's status (0, CL_E*). */
int run_size_sim(const run_opts *o, run_env *env, uint64_t bytes, rec_log *log, run_row *row)
{
    sim_opts so = {
        .nranks = o->ranks, .net = env->net, .eager_limit = o->eager_limit,
        .handshake = o->handshake, .payload = o->payload, .stack_bytes = (size_t)o->stack,
        .warmup = o->warmup, .iters = o->iters, .records = log, .out = pattern_out(o),
        .report = stderr, .debug = o->debug,
    };
    cl_args a = o->args;
    a.bytes = (size_t)bytes;
    sim_result res;
    int err = sim_run(&so, o->pattern->fn, &a, &res);
    int status = size_outcome(o, bytes, err, res.status, &res.diag, res.iter_time, res.iters,
                              res.messages, row);
    sim_result_release(&res);
    return status;
}

/* Runs one size measured; fills row. */
int run_size_real(const run_opts *o, run_env *env, uint64_t bytes, rec_log *log, bool first,
                  run_row *row)
{
    real_opts ro = {
        .backend = o->backend, .nranks = o->ranks, .warmup = o->warmup, .iters = o->iters,
        .eager_limit = o->eager_limit, .check = o->check, .bind = o->bind, .copy = o->copy,
        .listen = o->listen, .provider = o->provider, .netlab_rate = o->netlab,
        .deadlock_timeout = o->deadlock_timeout, .records = log,
        .report = stderr, .warn = first ? stderr : NULL, .out = pattern_out(o), .boot = o->boot,
        .debug = o->debug,
    };
    cl_args a = o->args;
    a.bytes = (size_t)bytes;
    real_result res;
    int err = real_run(&ro, o->pattern->fn, &a, &res);
    snprintf(env->binding, sizeof env->binding, "%s", res.binding);
    env->cores = res.cores;
    env->signal = res.signal;
    if (res.told) {
        /* Rank 0's process reports this failure: this one only exits with it. */
        int told = res.status;
        real_result_release(&res);
        return told;
    }
    int status = size_outcome(o, bytes, err, res.status, &res.diag, res.iter_time, res.iters,
                              res.messages, row);
    real_result_release(&res);
    return status;
}

int run_find_pattern(run_opts *o, const char *name)
{
    o->pattern = patterns_find(name);
    if (!o->pattern && student_is_file(name)) {
        int rc = student_load(&o->student, name);
        if (rc)
            return rc;
        o->pattern = &o->student.info;
    }
    if (!o->pattern)
        return cli_error("unknown pattern '%s' (`commlab patterns` lists them)", name);
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
    if (units_parse_size(text, "--chunk", &v, &d))
        return cli_diag(&d, CLI_EXIT_USAGE);
    if (v == 0)
        return cli_error("--chunk must be at least 1 byte");
    a->chunk = (size_t)v;
    return 0;
}
