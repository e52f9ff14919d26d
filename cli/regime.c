/* regime.c - the regime gate (regime.h). */
#include "cli/regime.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/pattern.h"
#include "core/units.h"

regime_gate regime_gate_of(const run_opts *base, double ref, double tol_pct, double budget)
{
    bool on = ref > 0 && budget > 0 && !base->be->join;
    regime_gate g = {.probe = regime_probe_opts(base), .ref = on ? ref : 0, .tol_pct = tol_pct,
                     .budget = budget, .last = NAN};
    g.probe.iters = REGIME_PROBE_ITERS;
    return g;
}

bool regime_within(const regime_gate *g, double t)
{
    return isfinite(t) && fabs(100.0 * (t - g->ref) / g->ref) <= g->tol_pct;
}

run_opts regime_probe_opts(const run_opts *base)
{
    run_opts ro = *base;
    ro.pattern = pattern_find("pingpong");
    ro.ranks = 2;
    ro.warmup = 2;
    ro.args = (cl_args){0};
    ro.fmt = CLI_TEXT;
    ro.timeline = ro.trace = NULL;
    return ro;
}

int regime_probe(regime_gate *g, run_env *env)
{
    run_row row;
    int status = run_size(&g->probe, env, REGIME_PROBE_BYTES, NULL, false, &row);
    if (status)
        return status;
    g->probes++;
    g->last = row.t.median;
    g->last_at = cli_now();
    g->in = regime_within(g, g->last);
    g->outside += !g->in;
    return 0;
}

int regime_confirm(regime_gate *g, run_env *env, bool *prevails)
{
    *prevails = true;
    if (g->ref == 0)
        return 0;
    int in = 0;
    for (int i = 0; i < REGIME_CONFIRM; i++) {
        int rc = regime_probe(g, env);
        if (rc)
            return rc;
        in += g->in;
    }
    *prevails = 2 * in > REGIME_CONFIRM;
    return 0;
}

static void pause_for(double s)
{
    struct timespec ts = {.tv_sec = (time_t)s};
    ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
    nanosleep(&ts, NULL);
}

int regime_enter(regime_gate *g, run_env *env)
{
    if (g->ref == 0) {
        g->in = true;
        return 0;
    }
    if (g->in && cli_now() - g->last_at < REGIME_FRESH)
        return 0;
    int rc = regime_probe(g, env);
    while (!rc && !g->in && g->budget > 0) {
        double pause = g->budget < REGIME_PAUSE ? g->budget : REGIME_PAUSE;
        double t0 = cli_now();
        pause_for(pause);
        double took = cli_now() - t0;
        g->budget -= took;
        g->waited += took;
        rc = regime_probe(g, env);
    }
    return rc;
}

int regime_measure(regime_gate *g, run_env *env, regime_run_fn *fn, void *arg, bool *outside)
{
    *outside = false;
    if (g->ref == 0)
        return fn(arg);
    g->runs++;
    for (int k = 1;; k++) {
        int rc = regime_enter(g, env);
        if (rc)
            return rc;
        bool before = g->in;
        if ((rc = fn(arg)) || (rc = regime_probe(g, env)))
            return rc;
        if (before && g->in)
            return 0;
        if (k == REGIME_TRIES || g->budget <= 0) {
            *outside = true;
            g->kept_outside++;
            return 0;
        }
        g->remeasured++;
    }
}

/* A wait named what ("--regime-wait", or the variable). */
static int parse_wait(const char *what, const char *text, double *out)
{
    cl_diag d = {{0}};
    if (strcmp(text, "0") == 0) {
        *out = 0;
        return 0;
    }
    if (units_parse_time(text, what, out, &d))
        return cli_diag(&d, CLI_EXIT_USAGE);
    if (!(*out > 0 && *out <= 3600))
        return cli_error("%s must be 0 (no gate) or a time up to an hour (3600s), got '%s'",
                         what, text);
    return 0;
}

int regime_parse_wait(const char *text, double *out)
{
    return parse_wait("--regime-wait", text, out);
}

int regime_default_wait(double *out)
{
    const char *v = getenv("COMMLAB_REGIME_WAIT");
    *out = REGIME_WAIT_DEFAULT;
    return v && *v ? parse_wait("COMMLAB_REGIME_WAIT", v, out) : 0;
}

bool regime_mixed(const regime_gate *g)
{
    return 100.0 * g->kept_outside > REGIME_MIXED_PCT * g->runs;
}

void regime_print(FILE *f, const regime_gate *g, const char *prefix)
{
    if (g->probes == 0)
        return;
    char ref[UNITS_BUF];
    fprintf(f, "%seach run between 8 B probes within %.0f %% of the reference's %s: %d "
               "probes (%d read another regime), waited %.1f s, %d runs measured again, %d "
               "of %d kept from another regime\n",
            prefix, g->tol_pct, units_time_digits(ref, g->ref, 4), g->probes, g->outside,
            g->waited, g->remeasured, g->kept_outside, g->runs);
}

void regime_json(json_writer *w, const regime_gate *g)
{
    if (g->ref == 0)
        return;
    json_key(w, "regime");
    json_begin_object(w);
    json_kv_number(w, "reference_s", g->ref);
    json_kv_number(w, "tolerance_pct", g->tol_pct);
    json_kv_uint(w, "probes", (uint64_t)g->probes);
    json_kv_uint(w, "probes_outside", (uint64_t)g->outside);
    json_kv_number(w, "waited_s", g->waited);
    json_kv_uint(w, "runs", (uint64_t)g->runs);
    json_kv_uint(w, "remeasured", (uint64_t)g->remeasured);
    json_kv_uint(w, "kept_outside", (uint64_t)g->kept_outside);
    json_end_object(w);
}
