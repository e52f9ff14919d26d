/* plot_write.c - the writers of plot CSVs: tiers, sweeps, collectives,
 * validate's rows and a run's timeline (see plot.h). */
#include "cli/plot.h"
#include "cli/plot_impl.h"

#include <math.h>
#include <stdlib.h>

#include "commlab.h"
#include "core/tier.h"

/* ---- writers ---- */

static void write_head(FILE *f, int kind, const char *title)
{
    char t[PLOT_TITLE_MAX];
    plot__clean_copy(t, sizeof t, title ? title : "");
    fprintf(f, "# commlab-plot: %s\n# title: %s\n", plot_kind_name(kind), t);
}

static int write_end(FILE *f)
{
    return fflush(f) != 0 || ferror(f) ? CL_EIO : 0;
}

int plot_write_tiers(FILE *f, const tier_set *ts, uint64_t bytes, const char *title)
{
    double best = INFINITY;
    for (size_t i = 0; i < ts->n; i++)
        best = fmin(best, tier_time(&ts->tiers[i], bytes));
    write_head(f, PLOT_TIERS, title);
    fprintf(f, "%s\n", plot_kind_header(PLOT_TIERS));
    for (size_t i = 0; i < ts->n; i++) {
        const cl_tier *t = &ts->tiers[i];
        double time = tier_time(t, bytes);
        fprintf(f, "%s,%s,%llu,%.9g,%.9g,%.9g,%.6g\n", t->name, t->scope,
                (unsigned long long)bytes, t->alpha, t->bandwidth, time,
                best > 0 ? time / best : 1.0);
    }
    return write_end(f);
}

int plot_write_sweep(FILE *f, const tier_set *ts, const uint64_t *sizes, size_t n,
                     const char *title)
{
    write_head(f, PLOT_SWEEP, title);
    fprintf(f, "%s\n", plot_kind_header(PLOT_SWEEP));
    for (size_t k = 0; k < ts->n; k++) {
        const cl_tier *t = &ts->tiers[k];
        double x = tier_crossover(t);
        for (size_t i = 0; i < n; i++)
            fprintf(f, "%llu,%s,%.9g,%s,%.9g,%.9g,%.9g\n", (unsigned long long)sizes[i], t->name,
                    tier_time(t, sizes[i]), (double)sizes[i] < x ? "latency" : "bandwidth", x,
                    t->alpha, t->bandwidth);
    }
    return write_end(f);
}

int plot_write_collectives(FILE *f, const plot_coll_row *rows, size_t n, const char *title)
{
    write_head(f, PLOT_COLLECTIVES, title);
    fprintf(f, "%s\n", plot_kind_header(PLOT_COLLECTIVES));
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%llu,%s,%.9g,%.9g,%s\n", (unsigned long long)rows[i].bytes, rows[i].algo,
                rows[i].simulated, rows[i].formula, rows[i].best ? "yes" : "no");
    return write_end(f);
}

int plot_write_validate(FILE *f, const plot_validate_row *rows, size_t n, const char *title)
{
    write_head(f, PLOT_VALIDATE, title);
    fprintf(f, "%s\n", plot_kind_header(PLOT_VALIDATE));
    for (size_t i = 0; i < n; i++) {
        const plot_validate_row *r = &rows[i];
        fprintf(f, "%s,%llu,%.9g,%.9g,%.6g\n", r->pattern, (unsigned long long)r->bytes,
                r->modeled, r->measured, 100.0 * (r->modeled - r->measured) / r->measured);
    }
    return write_end(f);
}

int plot_write_step(FILE *f, const plot_step_row *rows, size_t n, const char *title)
{
    write_head(f, PLOT_STEP, title);
    fprintf(f, "%s\n", plot_kind_header(PLOT_STEP));
    for (size_t i = 0; i < n; i++) {
        const plot_step_row *r = &rows[i];
        fprintf(f, "tp%d.dp%d.pp%d,%.9g,%.9g,%.9g,%.9g,%.9g\n", r->tp, r->dp, r->pp, r->step,
                r->compute, r->tp_s, r->pp_s, r->dp_s);
    }
    return write_end(f);
}

/* Rows by rank, then time posted, then their order in the log. */
static int cmp_rec(const void *a, const void *b)
{
    const cl_record *x = *(const cl_record *const *)a, *y = *(const cl_record *const *)b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    if (x->posted != y->posted)
        return x->posted < y->posted ? -1 : 1;
    return (x > y) - (x < y);
}

int plot_write_timeline(FILE *f, const cl_record *recs, size_t n,
                        const plot_timeline_meta *meta)
{
    if (n == 0)
        return CL_EINVAL;
    int32_t iter = recs[0].iter;
    for (size_t i = 0; i < n; i++) {
        const cl_record *r = &recs[i];
        if (!isfinite(r->posted) || !isfinite(r->started) || !isfinite(r->finished) ||
            r->finished < r->posted || r->rank < 0)
            return CL_EINVAL;
        if (r->iter > iter)
            iter = r->iter;
    }
    const cl_record **v = malloc(n * sizeof *v);
    if (!v)
        return CL_ENOMEM;
    size_t m = 0;
    double origin = INFINITY;
    for (size_t i = 0; i < n; i++)
        if (recs[i].iter == iter) {
            v[m++] = &recs[i];
            origin = fmin(origin, recs[i].posted);
        }
    qsort(v, m, sizeof *v, cmp_rec);
    write_head(f, PLOT_TIMELINE, meta->title);
    char side[16], status[32];
    plot__clean_copy(side, sizeof side, meta->side ? meta->side : "");
    plot__clean_copy(status, sizeof status, meta->status ? meta->status : "ok");
    /* The run's clock at time 0, so a figure can name a moment as the
     * run's report does ("deadlock ... at t = 710 ms"). */
    fprintf(f, "# side: %s\n# status: %s\n# iteration: %d\n# origin_s: %.9g\n%s\n", side, status,
            (int)iter, origin, plot_kind_header(PLOT_TIMELINE));
    for (size_t i = 0; i < m; i++) {
        const cl_record *r = v[i];
        /* started is clamped into [posted, finished] as the trace does. */
        double started = fmin(fmax(r->started, r->posted), r->finished);
        fprintf(f, "%d,%s,%.12g,%.12g,%.12g,%d,%llu,%d,%d\n", (int)r->rank,
                rec_op_name(r->op, r->blocking), r->posted - origin, started - origin,
                r->finished - origin, (int)(r->peer < 0 ? -1 : r->peer),
                (unsigned long long)r->bytes, (int)(r->tag < 0 ? -1 : r->tag),
                r->stalled ? 1 : 0);
    }
    free(v);
    return write_end(f);
}
