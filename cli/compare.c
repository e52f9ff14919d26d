/* compare.c - a pattern measured next to its calibrated model (see
 * compare.h): the session (machine file, netlab, mesh, drift), a size
 * modeled, every size measured. */
#include "cli/compare.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/rows.h"
#include "core/config.h"
#include "core/units.h"

/* Timed iterations for a size whose modeled iteration takes t seconds:
 * calibrate's budget (0.2 s), so both measure the same steady state (the
 * first tens of round trips of 2-32 KiB messages run 2-3x slower than the
 * rest), or co's own. */
static int planned_iters(const compare_opts *co, double t)
{
    double it = (co->budget > 0 ? co->budget : 0.2) / (t + 2e-6);
    int hi = co->max_iters > 10 ? co->max_iters : co->max_iters ? 10 : 1000;
    return it < 10 ? 10 : it > hi ? hi : (int)it;
}

/* The machine file: --model, or this host's; calibrated now when this
 * host's is missing, or with --recalibrate. */
static int get_machine(const compare_opts *co, machine *m, char *path, size_t len)
{
    const run_opts *o = &co->run;
    cl_diag d = {{0}};
    char provider[32];
    int rc = calibrate_provider(o->be, o->real.provider, provider, sizeof provider);
    if (rc)
        return rc;
    if (co->model)
        snprintf(path, len, "%s", co->model);
    else if ((rc = calibrate_default_path(path, len, o->backend, provider, o->real.netlab)))
        return rc;
    bool missing = !co->model && access(path, F_OK) != 0;
    if (missing || co->recalibrate) {
        if (missing)
            fprintf(stderr, "commlab: no machine file for this host and %s at %s: calibrating "
                            "first%s\n", o->backend, path, co->quick ? " (--quick)" : "");
        else
            fprintf(stderr, "commlab: --recalibrate: calibrating %s into %s%s\n", o->backend,
                    path, co->quick ? " (--quick)" : "");
        calib_opts cal = {.backend = o->backend, .be = o->be, .provider = o->real.provider,
                          .eager_limit = o->eager_limit ? o->eager_limit : RUN_EAGER_LIMIT,
                          .quick = co->quick, .bind = o->real.bind, .listen = o->real.listen,
                          .netlab = o->real.netlab, .lab = o->real.lab, .progress = isatty(2),
                          .cache = o->real.cache, .regime_wait = co->regime_wait};
        calib_result r;
        rc = calibrate_measure(&cal, &r);
        if (rc == CLI_EXIT_OK && machine_save(&r.m, path, &d))
            rc = cli_diag(&d, CLI_EXIT_USAGE);
        calibrate_release(&r);
        if (rc)
            return rc;
    }
    if (machine_load(m, path, &d))
        return cli_diag(&d, CLI_EXIT_USAGE);
    char host[256];
    calibrate_hostname(host, sizeof host);
    char mwhat[80], owhat[80];
    snprintf(mwhat, sizeof mwhat, "%s%s%s", m->backend, *m->provider ? "/" : "", m->provider);
    snprintf(owhat, sizeof owhat, "%s%s%s", o->backend, *provider ? "/" : "", provider);
    if (strcmp(mwhat, owhat) != 0 || strcmp(m->host, host) != 0)
        fprintf(stderr, "commlab: note: %s was calibrated for %s on %s; measuring %s on %s\n",
                path, mwhat, m->host, owhat, host);
    if (m->netlab != o->real.netlab) {
        char was[UNITS_BUF] = "no netlab", now[UNITS_BUF] = "no netlab";
        if (m->netlab > 0)
            units_rate_str(was, m->netlab);
        if (o->real.netlab > 0)
            units_rate_str(now, o->real.netlab);
        fprintf(stderr, "commlab: note: %s was calibrated over %s%s; measuring over %s%s\n",
                path, m->netlab > 0 ? "a netlab of " : "", was, o->real.netlab > 0 ? "a netlab of "
                : "", now);
    }
    return 0;
}

void compare_cache_words(char *buf, size_t len, const compare_opts *co, const machine *m)
{
    cli_textf(buf, len, "measured %s, model %s%s", cache_mode_name(co->run.real.cache),
              cache_mode_name(m->cache), m->cache_recorded ? "" : " (no cache key)");
}

/* A model calibrated in another --cache mode than the measurement's:
 * refused (0 when they agree), or with co->mixed_cache noted once here and
 * on every row by the caller. */
static int check_cache(const compare_opts *co, const machine *m, const char *path)
{
    const char *now = cache_mode_name(co->run.real.cache), *was = cache_mode_name(m->cache);
    const char *why = m->cache_recorded ? "" : " (it records no cache mode: it was written "
                                               "before --cache existed, when every run left "
                                               "its buffers warm)";
    if (m->cache == co->run.real.cache)
        return 0;
    if (co->mixed_cache) {
        fprintf(stderr, "commlab: note: --mixed-cache: %s was calibrated with --cache %s%s, "
                        "measuring --cache %s: every row says so\n", path, was, why, now);
        return 0;
    }
    return cli_error("%s was calibrated with --cache %s%s, and this measures --cache %s: the "
                     "two time different states of the caches (chapter 06, \"The cache\"); "
                     "measure with --cache %s, calibrate in this mode (--recalibrate), or "
                     "give --mixed-cache to set them side by side anyway", path, was, why,
                     now, was);
}

/* The network a size is modeled on over a netlab: one switch of ranks
 * ports, every link half of the calibrated ping-pong segment's alpha at
 * that size and its bandwidth, so that a message alone costs alpha +
 * n/bandwidth, the calibrated time, and messages that cross one port at
 * once share it (max-min).  A segment without a per-byte cost gets the
 * fastest bandwidth a topology takes (CFG_BANDWIDTH_MAX, a petabyte a
 * second: 4 MiB in 4 ns), the topology file having no infinity.  0, or
 * the exit status after saying why. */
static int switch_net(const machine *m, int ranks, uint64_t bytes, struct sim_net **out)
{
    const machine_segment *seg = machine_segment_of(m, bytes);
    double bw = seg->bandwidth < CFG_BANDWIDTH_MAX ? seg->bandwidth : CFG_BANDWIDTH_MAX;
    char yaml[256];
    snprintf(yaml, sizeof yaml, "topology: [Switch]\nnpus_count: [%d]\nbandwidth: [%.17gB/s]\n"
             "latency: [%.17gs]\n", ranks, bw, seg->alpha / 2);
    cl_diag d = {{0}};
    if (row_sim_net_yaml(out, m->path, yaml, &d))
        return cli_diag(&d, CLI_EXIT_USAGE);
    return 0;
}

int compare_model_size(const compare_opts *co, compare_session *s, const run_opts *sim,
                       uint64_t bytes, run_row *row)
{
    if (!co->run.real.netlab)
        return row_sim_size_on(sim, s->net, bytes, NULL, row);
    struct sim_net *on = NULL;
    if (switch_net(co->m, sim->ranks, bytes, &on))
        return CL_ECONFIG;
    int status = row_sim_size_on(sim, on, bytes, NULL, row);
    row_sim_net_destroy(on);
    return status;
}

double compare_median_abs_error(const compare_row *rows, size_t n)
{
    double *e = malloc(n * sizeof *e);
    cl_stats s = {0};
    if (!e)
        return NAN;
    for (size_t i = 0; i < n; i++)
        e[i] = fabs(compare_error_pct(&rows[i]));
    if (stats_compute(e, n, &s))
        s.median = NAN;
    free(e);
    return s.median;
}

int compare_probe(const compare_opts *co, compare_session *s, bool after)
{
    compare_drift *dr = &s->dr;
    if (dr->n == 0)
        return CLI_EXIT_OK;
    machine_ref now[CALIB_NREF];
    run_opts o = co->run;
    o.real.cache = s->m.cache; /* the reference's own mode */
    int rc = calibrate_probe(&o, &s->env, now);
    if (rc)
        return rc;
    for (size_t i = 0; i < dr->n; i++) {
        double t = NAN;
        for (size_t k = 0; k < CALIB_NREF; k++)
            if (now[k].bytes == dr->cal[i].bytes)
                t = now[k].time;
        (after ? dr->after : dr->before)[i] = t;
    }
    return CLI_EXIT_OK;
}

/* The threshold at each reference size: the model's claimed residual
 * there (its segment's max residual), at least DRIFT_FLOOR_PCT. */
static void drift_init(compare_drift *dr, const machine *m)
{
    memset(dr, 0, sizeof *dr);
    dr->n = m->nref;
    for (size_t i = 0; i < dr->n; i++) {
        dr->cal[i] = m->ref[i];
        dr->before[i] = dr->after[i] = NAN;
        double claim = machine_segment_of(m, m->ref[i].bytes)->max_residual_pct;
        dr->threshold_pct[i] = isnan(claim) || claim < DRIFT_FLOOR_PCT ? DRIFT_FLOOR_PCT : claim;
    }
}

static double moved_pct(double now, double cal)
{
    return 100.0 * (now - cal) / cal;
}

void compare_drift_judge(compare_drift *dr)
{
    for (size_t i = 0; i < dr->n; i++) {
        double c = dr->cal[i].time;
        dr->moved[i] = fabs(moved_pct(dr->before[i], c)) > dr->threshold_pct[i] ||
                       fabs(moved_pct(dr->after[i], c)) > dr->threshold_pct[i];
        dr->any = dr->any || dr->moved[i];
    }
}

void compare_drift_print(FILE *f, const compare_drift *dr, const char *prefix)
{
    if (!dr->any)
        return;
    fputs(prefix, f);
    bool first = true;
    for (size_t i = 0; i < dr->n; i++) {
        if (!dr->moved[i])
            continue;
        char b[UNITS_BUF], t0[UNITS_BUF], t1[UNITS_BUF], tc[UNITS_BUF];
        fprintf(f, "%sthe %s reference took %s before and %s after the measurements, %s at "
                   "calibration", first ? "" : "; ", units_size_str(b, dr->cal[i].bytes),
                units_time_digits(t0, dr->before[i], 4), units_time_digits(t1, dr->after[i], 4),
                units_time_digits(tc, dr->cal[i].time, 4));
        first = false;
    }
    fputs(": the machine changed since calibration (by more than the model's claimed "
          "residual and the probe's own spread); the errors reflect that (--recalibrate "
          "measures the model again)\n", f);
}

void compare_drift_json(json_writer *w, const compare_drift *dr)
{
    if (dr->n == 0)
        return;
    json_key(w, "drift");
    json_bool(w, dr->any);
    json_key(w, "reference");
    json_begin_array(w);
    for (size_t i = 0; i < dr->n; i++) {
        json_begin_object(w);
        json_kv_uint(w, "bytes", dr->cal[i].bytes);
        json_kv_number(w, "calibrated_s", dr->cal[i].time);
        if (!isnan(dr->before[i]))
            json_kv_number(w, "before_s", dr->before[i]);
        if (!isnan(dr->after[i]))
            json_kv_number(w, "after_s", dr->after[i]);
        json_kv_number(w, "threshold_pct", dr->threshold_pct[i]);
        json_key(w, "moved");
        json_bool(w, dr->moved[i]);
        json_end_object(w);
    }
    json_end_array(w);
}

run_opts compare_sim_opts(const compare_opts *co)
{
    /* A machine mesh is priced alone (its calibration holds what the
     * transport shares); a netlab's switch shares its ports. */
    run_opts sim = co->run;
    sim.sim.sharing = co->run.real.netlab ? RUN_SHARE_MAXMIN : RUN_SHARE_NONE;
    sim.iters = 1;
    sim.warmup = 0;
    return sim;
}

size_t compare_rows_outside(const compare_row *rows, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += rows[i].outside;
    return k;
}

void compare_row_json(json_writer *w, const compare_row *r)
{
    json_kv_uint(w, "bytes", r->bytes);
    json_kv_uint(w, "iters", r->measured.n);
    json_kv_number(w, "modeled_s", r->modeled);
    json_key(w, "measured_s");
    json_begin_object(w);
    json_kv_number(w, "median", r->measured.median);
    json_kv_number(w, "min", r->measured.min);
    json_kv_number(w, "max", r->measured.max);
    json_end_object(w);
    json_kv_number(w, "error_pct", compare_error_pct(r));
    json_key(w, "other_regime");
    json_bool(w, r->outside);
}

/* One size's run, for regime_measure. */
typedef struct size_run {
    const run_opts *o;
    run_env *env;
    uint64_t bytes;
    bool first;
    run_row *row;
} size_run;

static int run_one_size(void *arg)
{
    size_run *r = arg;
    int status = run_size(r->o, r->env, r->bytes, NULL, r->first, r->row);
    r->first = false;
    return status;
}

int compare_measure(compare_opts *co, compare_session *s, bool first, compare_row *rows,
                    size_t *done)
{
    run_opts *o = &co->run;
    run_opts sim = compare_sim_opts(co);
    bool fixed = o->iters > 0;
    int status = 0;
    for (*done = 0; *done < o->nsizes; (*done)++) {
        size_t i = *done;
        run_row measured, modeled;
        if ((status = compare_model_size(co, s, &sim, o->sizes[i], &modeled)))
            break;
        run_opts real = *o;
        if (!fixed)
            real.iters = planned_iters(co, modeled.t.median * o->pattern->time_divisor);
        bool none_yet = first && i == 0;
        co->lo_iters = none_yet || real.iters < co->lo_iters ? real.iters : co->lo_iters;
        co->hi_iters = none_yet || real.iters > co->hi_iters ? real.iters : co->hi_iters;
        size_run one = {&real, &s->env, o->sizes[i], none_yet, &measured};
        bool outside;
        if ((status = regime_measure(&s->gate, &s->env, run_one_size, &one, &outside)))
            break;
        rows[i] = (compare_row){o->sizes[i], modeled.t.median, measured.t, outside};
    }
    return status;
}

int compare_open(compare_opts *co, compare_session *s)
{
    run_opts *o = &co->run;
    cl_diag d = {{0}};
    int rc;
    if (!o->lines) {
        if (!(s->lines = fopen("/dev/null", "w")))
            return cli_error("cannot open /dev/null: %s", strerror(errno));
        o->lines = s->lines;
    }
    /* One netlab for every run: calibration, probes and measurements
     * (the caller's, when it opened one into s). */
    if (o->real.netlab && !s->lab.nl &&
        (rc = run_lab_open(&s->lab, o->ranks > 2 ? o->ranks : 2, o->real.netlab)))
        return rc;
    o->real.lab = s->lab.nl;
    if ((rc = get_machine(co, &s->m, s->path, sizeof s->path)) ||
        (rc = check_cache(co, &s->m, s->path)))
        return rc;
    s->mismatch = s->m.cache != o->real.cache;
    co->m = &s->m;
    if (!o->real.netlab && row_sim_net_machine(&s->net, &s->m, o->ranks, &d))
        return cli_diag(&d, CLI_EXIT_USAGE);
    o->eager_limit = s->m.eager_limit;
    drift_init(&s->dr, &s->m);
    /* The gate: the reference's 8 B figure and threshold, probed in the
     * reference's own --cache mode as compare_probe does. */
    double ref = 0, tol = REGIME_TOL_PCT;
    for (size_t i = 0; i < s->dr.n; i++)
        if (s->dr.cal[i].bytes == REGIME_PROBE_BYTES) {
            ref = s->dr.cal[i].time;
            tol = s->dr.threshold_pct[i];
        }
    run_opts probe = *o;
    probe.real.cache = s->m.cache;
    s->gate = regime_gate_of(&probe, ref, tol, co->regime_wait);
    if (s->dr.n == 0)
        fprintf(stderr, "commlab: note: %s records no reference probe (calibrated before "
                        "commlab kept one), so a changed machine cannot be told from a wrong "
                        "model; --recalibrate writes one\n", s->path);
    return 0;
}

int compare_close(compare_session *s, int rc)
{
    int lab_rc = run_lab_close(&s->lab);
    row_sim_net_destroy(s->net);
    s->net = NULL;
    if (s->lines)
        fclose(s->lines);
    s->lines = NULL;
    return rc == CLI_EXIT_OK ? lab_rc : rc;
}
