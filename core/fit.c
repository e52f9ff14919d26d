/* fit.c - weighted least squares lines and their piecewise segmentation. */
#include "core/fit.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "commlab.h"
#include "core/config.h"

/* Residual statistics of the line (a, b) over the points, into s. */
static void score(const double *x, const double *y, size_t n, double a, double b,
                  fit_segment *s)
{
    double sw = 0, swy = 0;
    for (size_t i = 0; i < n; i++) {
        double w = 1.0 / (y[i] * y[i]);
        sw += w;
        swy += w * y[i];
    }
    double ym = swy / sw, sse = 0, sst = 0, worst = 0;
    for (size_t i = 0; i < n; i++) {
        double r = (a + b * x[i] - y[i]) / y[i];
        double dev = (y[i] - ym) / y[i];
        sse += r * r;
        sst += dev * dev;
        if (fabs(r) > worst)
            worst = fabs(r);
    }
    s->n = n;
    s->alpha = a;
    s->beta = b;
    s->sse = sse;
    s->max_residual = worst;
    s->rms_residual = sqrt(sse / (double)n);
    /* sst is 0 only when every y is equal: a constant fits them exactly. */
    s->r2 = sst > 0 ? 1.0 - sse / sst : 1.0;
}

/* The constrained fit itself; the points are known to be valid. */
static void line(const double *x, const double *y, size_t n, fit_segment *s)
{
    /* Weighted means first, then centred sums: the sizes reach 2^26 and
     * their squares would swamp the raw normal equations. */
    double sw = 0, sx = 0, sy = 0;
    for (size_t i = 0; i < n; i++) {
        double w = 1.0 / (y[i] * y[i]);
        sw += w;
        sx += w * x[i];
        sy += w * y[i];
    }
    double xm = sx / sw, ym = sy / sw, sxx = 0, sxy = 0;
    for (size_t i = 0; i < n; i++) {
        double w = 1.0 / (y[i] * y[i]);
        sxx += w * (x[i] - xm) * (x[i] - xm);
        sxy += w * (x[i] - xm) * (y[i] - ym);
    }
    double b = sxx > 0 ? sxy / sxx : 0, a = ym - b * xm;
    if (b < 0) {
        /* Times that do not grow with size: the best constant. */
        b = 0;
        a = ym;
    } else if (a < 0) {
        /* A line through the origin: minimizes sum w (y - b x)^2. */
        double num = 0, den = 0;
        for (size_t i = 0; i < n; i++) {
            double w = 1.0 / (y[i] * y[i]);
            num += w * x[i] * y[i];
            den += w * x[i] * x[i];
        }
        a = 0;
        b = den > 0 ? num / den : 0;
    }
    score(x, y, n, a, b, s);
}

static int check_points(const double *x, const double *y, size_t n, bool increasing,
                        cl_diag *d)
{
    if (n < 2)
        return diag_set(d, CL_EINVAL, "a fit needs at least 2 points, got %zu", n);
    if (n > FIT_MAX_POINTS)
        return diag_set(d, CL_EINVAL, "a fit takes at most %d points, got %zu", FIT_MAX_POINTS,
                        n);
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(x[i]) || x[i] < 0)
            return diag_set(d, CL_EINVAL, "point %zu: size must be finite and >= 0, got %g", i,
                            x[i]);
        if (!isfinite(y[i]) || !(y[i] > 0))
            return diag_set(d, CL_EINVAL, "point %zu: time must be finite and > 0, got %g", i,
                            y[i]);
        if (increasing && i > 0 && !(x[i] > x[i - 1]))
            return diag_set(d, CL_EINVAL,
                            "point %zu: sizes must increase, got %g after %g", i, x[i],
                            x[i - 1]);
    }
    return 0;
}

int fit_line(const double *x, const double *y, size_t n, fit_segment *out, cl_diag *d)
{
    int err = check_points(x, y, n, false, d);
    if (err)
        return err;
    fit_segment s = {0};
    line(x, y, n, &s);
    *out = s;
    return 0;
}

/* The best split of segment s: the index k (first point of the right half)
 * minimizing the halves' summed sse; false when none keeps min_points a
 * side. */
static bool best_split(const double *x, const double *y, const fit_segment *s, size_t min_points,
                       fit_segment *left, fit_segment *right)
{
    bool found = false;
    double best = INFINITY;
    for (size_t k = min_points; k + min_points <= s->n; k++) {
        fit_segment l, r;
        line(x + s->first, y + s->first, k, &l);
        line(x + s->first + k, y + s->first + k, s->n - k, &r);
        if (l.sse + r.sse < best) {
            best = l.sse + r.sse;
            l.first = s->first;
            r.first = s->first + k;
            *left = l;
            *right = r;
            found = true;
        }
    }
    return found;
}

int fit_piecewise(const double *x, const double *y, size_t n, const double *breaks,
                  size_t nbreaks, const fit_opts *o, fit_result *out, cl_diag *d)
{
    int err = check_points(x, y, n, true, d);
    if (err)
        return err;
    if (o->min_points < 2 || o->max_segments < 1 || o->max_segments > FIT_MAX_SEGMENTS)
        return diag_set(d, CL_EINVAL, "fit: min_points must be >= 2 and max_segments in 1..%d",
                        FIT_MAX_SEGMENTS);
    fit_result r = {.n = 0};
    /* Forced pieces: cut after the last point <= each break, in order. */
    size_t start = 0;
    for (size_t b = 0; b <= nbreaks && start < n && r.n < o->max_segments; b++) {
        size_t end = n;
        if (b < nbreaks && r.n + 1 < o->max_segments) {
            end = start;
            while (end < n && x[end] <= breaks[b])
                end++;
        }
        if (end - start < 2 && end < n)
            continue; /* too few: the points join the next piece */
        if (end - start < 2 && r.n > 0) {
            r.seg[r.n - 1].n += end - start; /* too few at the end: join the last */
            start = end;
            continue;
        }
        r.seg[r.n].first = start;
        r.seg[r.n].n = end - start;
        r.n++;
        start = end;
    }
    for (size_t i = 0; i < r.n; i++) {
        size_t first = r.seg[i].first;
        line(x + first, y + first, r.seg[i].n, &r.seg[i]);
        r.seg[i].first = first;
    }
    /* Split the worst segment while a split pays. */
    while (r.n < o->max_segments) {
        size_t pick = r.n;
        fit_segment left = {0}, right = {0};
        double gain = 0;
        for (size_t i = 0; i < r.n; i++) {
            fit_segment l = {0}, rt = {0};
            if (r.seg[i].max_residual > o->split_above &&
                best_split(x, y, &r.seg[i], o->min_points, &l, &rt) &&
                l.sse + rt.sse <= o->min_gain * r.seg[i].sse &&
                r.seg[i].sse - (l.sse + rt.sse) > gain) {
                gain = r.seg[i].sse - (l.sse + rt.sse);
                pick = i;
                left = l;
                right = rt;
            }
        }
        if (pick == r.n)
            break;
        memmove(&r.seg[pick + 2], &r.seg[pick + 1], (r.n - pick - 1) * sizeof r.seg[0]);
        r.seg[pick] = left;
        r.seg[pick + 1] = right;
        r.n++;
    }
    *out = r;
    return 0;
}

const fit_segment *fit_segment_of(const fit_result *r, size_t i)
{
    for (size_t s = 0; s + 1 < r->n; s++)
        if (i < r->seg[s].first + r->seg[s].n)
            return &r->seg[s];
    return &r->seg[r->n - 1];
}

size_t fit_gap(const double *x, const double *gaps, size_t n, fit_segment *out)
{
    double gx[FIT_MAX_POINTS], gy[FIT_MAX_POINTS];
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (gaps[i] > 0 && isfinite(gaps[i]) && isfinite(x[i]) && x[i] >= 0 &&
            k < FIT_MAX_POINTS) {
            gx[k] = x[i];
            gy[k++] = gaps[i];
        }
    if (k == 0)
        return 0;
    fit_segment s = {0};
    if (k == 1)
        score(gx, gy, 1, gy[0], 0, &s);
    else
        line(gx, gy, k, &s);
    *out = s;
    return k;
}

bool fit_segment_usable(const fit_segment *s)
{
    return isfinite(s->alpha) && isfinite(s->beta) &&
           (s->r2 >= FIT_MIN_R2 || s->max_residual <= FIT_LOOSE_RESIDUAL);
}

double fit_bandwidth(double beta)
{
    return beta > 1.0 / CFG_BANDWIDTH_MAX ? 1.0 / beta : INFINITY;
}
