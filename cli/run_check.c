/* run_check.c - what `commlab run` checks once its options are parsed
 * (run_check.h). */
#include "cli/run_check.h"

#include <stdint.h>
#include <string.h>

#include "core/file.h"

/* --library: the backend library's call for o's collective, as the
 * pattern of a row of its own (after validate's backend lookup). */
static int find_library(run_opts *o)
{
    const collective_info *coll = o->pattern->collective;
    cl_pattern_fn *fn;
    if (!coll)
        return cli_error("--library runs a library's own call for a collective (`commlab "
                         "patterns` lists them): '%s' is not one", o->pattern->name);
    int rc = backend_check_library(o->be, coll->name, &fn);
    if (rc)
        return rc;
    snprintf(o->library_name, sizeof o->library_name, "%s-library", coll->name);
    o->library_pattern = (pattern_info){
        .name = o->library_name, .fn = fn, .chapter = o->pattern->chapter,
        .summary = "the backend library's own call", .min_ranks = o->pattern->min_ranks,
        .time_divisor = 1, .collective = coll, .algo = "library"};
    return 0;
}

const pattern_info *run_algo_at(const run_opts *o, size_t a)
{
    size_t n = 0;
    if (run_all_algos(o))
        while (collective_algo_at(o->coll, n))
            n++;
    else if (!o->library || !o->coll || o->algo)
        n = 1;
    if (a < n)
        return run_all_algos(o) ? collective_algo_at(o->coll, a) : o->pattern;
    return o->library && a == n ? &o->library_pattern : NULL;
}

int run_check(run_opts *o, backend_session **s)
{
    int rc = backend_lookup(o->backend, "run", false, &o->be);
    if (rc || (rc = backend_check_options(o->be, &o->given)))
        return rc;
    if ((rc = backend_check_eager(o->be, o->eager_limit)) ||
        (rc = backend_open(o->be, o, s)))
        return rc;
    if (o->iters == 0)
        o->iters = o->be->iters;
    if (o->warmup < 0)
        o->warmup = o->be->warmup;
    if (o->ranks < o->pattern->min_ranks)
        return cli_error("%s needs at least %d ranks, got -n %d", o->pattern->name,
                         o->pattern->min_ranks, o->ranks);
    if (o->library && (rc = find_library(o)))
        return rc;
    if (o->args.fix) {
        const char *f = o->pattern->fixes;
        size_t len = strlen(o->args.fix);
        const char *hit = f ? strstr(f, o->args.fix) : NULL;
        if (!f)
            return cli_error("--fix applies to the deadlock pattern, not '%s'", o->pattern->name);
        if (!hit || (hit[len] != ',' && hit[len] != 0) || (hit != f && hit[-1] != ','))
            return cli_error("unknown --fix '%s' for %s (%s)", o->args.fix, o->pattern->name, f);
    }
    if ((rc = run_check_pattern_args(o)))
        return rc;
    if (o->sim.tier && o->sim.topology)
        return cli_error("run: give either --tier or --topology, not both");
    if (o->debug && !o->payload)
        return cli_error("--debug checks buffers and a --no-payload run has none: give one "
                         "or the other");
    if (o->trace && o->nsizes > 1)
        return cli_error("--trace records one run: give one size with --bytes");
    if (o->timeline && o->nsizes > 1)
        return cli_error("--timeline records one run: give one size with --bytes");
    if ((o->trace || o->timeline) && run_algo_at(o, 1))
        return cli_error("--%s records one run: give %s", o->trace ? "trace" : "timeline",
                         o->library ? "--library alone, or one --algo without it"
                                    : "one --algo, not all");
    /* A path that would be refused is refused before the run, not after. */
    cl_diag d = {{0}};
    if ((o->trace && file_out_check(o->trace, "trace", &d)) ||
        (o->timeline && file_out_check(o->timeline, "timeline", &d)))
        return cli_diag(&d, CLI_EXIT_USAGE);
    for (size_t i = 0; i < o->nsizes; i++)
        if (o->sizes[i] > SIZE_MAX / 4)
            return cli_error("size %llu is too large", (unsigned long long)o->sizes[i]);
    return 0;
}
