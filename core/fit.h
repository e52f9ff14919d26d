/*
 * fit.h - fitting the alpha-beta model T(n) = alpha + beta n to measured
 * times, piecewise over message sizes.
 *
 * One line: weighted least squares with weights 1 / y^2, i.e. it minimizes
 * the sum of squared *relative* residuals (fit - y) / y.  Measured times
 * span six orders of magnitude from 1 B to 64 MiB; plain least squares
 * would let the largest sizes decide alpha alone.  The line is constrained
 * to alpha >= 0 and beta >= 0 (a time cannot shrink as messages grow, and
 * a message cannot cost less than nothing): when the unconstrained optimum
 * breaks one, the best line on that boundary is taken.
 *
 * Piecewise (the way SimGrid's SMPI calibrates its piecewise factors):
 * the points are first cut at the forced breakpoints (the eager limit:
 * eager and rendezvous are different protocols).  Then, repeatedly, each
 * segment that leaves a relative residual above opts.split_above finds the
 * cut where its two halves' summed squared residuals are smallest; a cut
 * counts if it brings them to at most opts.min_gain of the segment's and
 * each half keeps opts.min_points points; the cut that removes the most
 * squared residual is made.  This stops when no cut counts or at
 * opts.max_segments.  Everything is
 * deterministic: ties go to the lowest index.
 *
 * A segment's R^2 is that of the weighted fit: 1 - sum(r^2) / sum(w (y -
 * ybar_w)^2), r the relative residuals; 1 for a segment whose points all
 * lie on its line (two points always do).
 *
 * Nothing here allocates; a fit_result is a plain value.
 */
#ifndef CL_FIT_H
#define CL_FIT_H

#include <stdbool.h>
#include <stddef.h>

#include "core/diag.h"

#define FIT_MAX_SEGMENTS 16
#define FIT_MAX_POINTS 4096

typedef struct fit_segment {
    size_t first, n;     /* the points x[first .. first + n - 1] */
    double alpha;        /* seconds: the line at 0 bytes, >= 0 */
    double beta;         /* seconds per byte, >= 0; bandwidth = 1 / beta */
    double r2;           /* weighted coefficient of determination, <= 1 */
    double max_residual; /* largest |fit - y| / y over its points */
    double rms_residual; /* root mean square of (fit - y) / y */
    double sse;          /* sum of squared relative residuals */
} fit_segment;

typedef struct fit_opts {
    double split_above; /* split a segment whose max relative residual exceeds this */
    double min_gain;    /* ... if the halves' sse <= min_gain * the segment's */
    size_t min_points;  /* fewest points of a segment made by a split, >= 2 */
    size_t max_segments; /* 1..FIT_MAX_SEGMENTS */
} fit_opts;

/* 5 % residuals, a split must at least halve the squared residuals, 3
 * points a side, 8 segments at most. */
#define FIT_OPTS_DEFAULT ((fit_opts){0.05, 0.5, 3, 8})

typedef struct fit_result {
    fit_segment seg[FIT_MAX_SEGMENTS]; /* in increasing size order */
    size_t n;                          /* segments */
} fit_result;

/* Fits one line to x[0..n) (bytes) and y[0..n) (seconds) into *out with
 * out->first = 0.  CL_EINVAL with d saying why when n < 2, a y is not > 0
 * or a value is not finite; *out is unchanged then. */
int fit_line(const double *x, const double *y, size_t n, fit_segment *out, cl_diag *d);

/* Fits the piecewise model: x strictly increasing (>= 0), y > 0, n in
 * 2..FIT_MAX_POINTS; breaks[0..nbreaks) the forced breakpoints in bytes (a
 * segment ends at the last x <= break; a piece of fewer than 2 points is
 * joined to its neighbour).  CL_EINVAL with d saying why; *out is
 * unchanged on error. */
int fit_piecewise(const double *x, const double *y, size_t n, const double *breaks,
                  size_t nbreaks, const fit_opts *o, fit_result *out, cl_diag *d);

/* The gap of a stream (LogGP's g + n G): gaps[i] is the time each further
 * message of x[i] bytes adds to a back-to-back stream, as calibrate works
 * it out from its windows (cli/calibrate.h).  A line is fitted (fit_line)
 * to the points whose gap is > 0 and finite (one at or below zero is
 * noise: the longer window ran no slower) into *out, out->alpha the gap g
 * and out->beta G; with one such point, out is that constant.  Returns the
 * points used; 0 (out unchanged) when none is.  Cannot fail otherwise. */
size_t fit_gap(const double *x, const double *gaps, size_t n, fit_segment *out);

/* Whether a segment is fit to be written into a model: its alpha and beta
 * are finite (a bandwidth of 0 never is) and its line either explains the
 * variation of its points (R^2 >= FIT_MIN_R2) or lies close to every one
 * of them (worst relative residual <= FIT_LOOSE_RESIDUAL).  A flat segment
 * of tiny messages, whose time does not depend on their size, has an R^2
 * near 0 and points within a few % of its line: a fit.  One with both a
 * low R^2 and a point far off is the mark of a measurement bent by a slow
 * spell (`commlab calibrate` measures such a segment again).  Cannot fail. */
#define FIT_MIN_R2 0.9
#define FIT_LOOSE_RESIDUAL 0.10
bool fit_segment_usable(const fit_segment *s);

/* The segment of r that covers point index i (cannot fail for i < the
 * points fitted). */
const fit_segment *fit_segment_of(const fit_result *r, size_t i);

/* The bandwidth, bytes/s, of a fit's slope beta (seconds a byte): INFINITY
 * (no cost per byte the measurements show, `inf` in a machine file) when
 * the slope is 0, or so close to it that the bandwidth is beyond any
 * link's, which a machine file refuses (CFG_BANDWIDTH_MAX): written as
 * it is, such a slope would make a file its own loader refuses.  Cannot
 * fail. */
double fit_bandwidth(double beta);

#endif
