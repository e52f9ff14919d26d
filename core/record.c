/* record.c - the record log and statistics over samples. */
#include "core/record.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "commlab.h"

const char *rec_op_name(int op, int blocking)
{
    switch (op) {
    case REC_SEND:
        return blocking ? "send" : "isend";
    case REC_RECV:
        return blocking ? "recv" : "irecv";
    case REC_WAIT:
        return "wait";
    case REC_COMPUTE:
        return "compute";
    case REC_BARRIER:
        return "barrier";
    case REC_ITER:
        return "iter";
    }
    return "?";
}

void rec_log_init(rec_log *l, size_t limit)
{
    l->v = NULL;
    l->n = 0;
    l->cap = 0;
    l->limit = limit;
    l->dropped = 0;
}

int rec_log_add(rec_log *l, const cl_record *r)
{
    if (l->limit && l->n >= l->limit) {
        l->dropped++;
        return 0;
    }
    if (l->n == l->cap) {
        /* Double from 256 records (10 KiB), but never past the limit: a
         * capped log never allocates more than it may keep. */
        size_t cap = l->cap ? l->cap * 2 : 256;
        if (cap < l->cap || cap > SIZE_MAX / sizeof *l->v)
            return CL_ENOMEM;
        if (l->limit && cap > l->limit)
            cap = l->limit;
        cl_record *v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return CL_ENOMEM;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = *r;
    return 0;
}

int rec_log_stalled(rec_log *l, const cl_record *call, double since, double until)
{
    cl_record r = {
        .posted = since, .started = until, .finished = until, .bytes = call->bytes,
        .rank = call->rank, .peer = call->peer, .tag = call->tag, .iter = call->iter,
        .op = call->op, .blocking = 1, .stalled = 1,
    };
    return rec_log_add(l, &r);
}

void rec_log_release(rec_log *l)
{
    free(l->v);
    rec_log_init(l, l->limit);
}

bool rec_log_check(const rec_log *l)
{
    if (l->n > l->cap)
        return false;
    if (l->limit && l->n > l->limit)
        return false;
    if (!l->v && l->cap)
        return false;
    return true;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The p-quantile of sorted s[0..n), n >= 1: linear between the order
 * statistics around rank p (n - 1) (type 7 of Hyndman and Fan, 1996). */
static double quantile(const double *s, size_t n, double p)
{
    double h = p * (double)(n - 1);
    size_t i = (size_t)h;
    if (i + 1 >= n)
        return s[n - 1];
    return s[i] + (h - (double)i) * (s[i + 1] - s[i]);
}

int stats_compute(const double *samples, size_t n, cl_stats *out)
{
    if (!samples || n == 0)
        return CL_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(samples[i]))
            return CL_EINVAL;
    if (n > SIZE_MAX / sizeof(double))
        return CL_ENOMEM;
    double *s = malloc(n * sizeof *s);
    if (!s)
        return CL_ENOMEM;
    memcpy(s, samples, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_double);

    /* A running mean cannot overflow where a plain sum of large samples
     * could; the order is fixed (sorted), so the result is reproducible. */
    double mean = 0;
    for (size_t i = 0; i < n; i++)
        mean += (s[i] - mean) / (double)(i + 1);
    double lo = s[(n - 1) / 2], hi = s[n / 2];
    out->median = lo + (hi - lo) / 2;
    out->min = s[0];
    out->max = s[n - 1];
    out->mean = mean;
    out->n = n;
    out->q1 = quantile(s, n, 0.25);
    out->q3 = quantile(s, n, 0.75);
    free(s);
    return 0;
}
