/* bench_parse.c - the figures `commlab bench` reads back from the programs
 * it runs: a line of the reference ping-pong (real/mpi/mpi_pingpong.c) and
 * a row of `run --csv`.
 *
 * Strict on purpose: a figure that is missing, renamed, not a number, zero
 * or out of order would otherwise enter a table, or a ratio's divisor, as a
 * figure.  Only libcommlab's own code is used, so a test compiles this file
 * in (cli/ is not part of libcommlab.a). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/bench.h"

/* Moves *p past the text s where it starts there. */
static bool literal(const char **p, const char *s)
{
    size_t n = strlen(s);
    if (strncmp(*p, s, n) != 0)
        return false;
    *p += n;
    return true;
}

/* A whole decimal number above 0 at *p, digits only, moving *p past it. */
static bool count(const char **p, uint64_t *v)
{
    if (!isdigit((unsigned char)**p))
        return false; /* strtoull would take a sign or spaces */
    char *end;
    errno = 0;
    unsigned long long x = strtoull(*p, &end, 10);
    if (errno || x == 0)
        return false;
    *v = x;
    *p = end;
    return true;
}

/* A finite number above 0 at *p, moving *p past it: a time or a rate
 * (zero would be a divisor, and is no measurement). */
static bool positive(const char **p, double *v)
{
    if (!isdigit((unsigned char)**p))
        return false; /* strtod would take a sign, spaces, "nan" or "inf" */
    char *end;
    errno = 0;
    double x = strtod(*p, &end);
    if (errno || !isfinite(x) || x <= 0)
        return false;
    *v = x;
    *p = end;
    return true;
}

/* The end of the line: nothing, or its newline alone. */
static bool line_end(const char *p)
{
    return *p == 0 || (p[0] == '\n' && p[1] == 0);
}

/* Statistics from median, min and max times scale; false when they are
 * out of order. */
static bool ordered(const double v[3], double scale, cl_stats *out)
{
    if (v[1] > v[0] || v[0] > v[2])
        return false;
    *out = (cl_stats){.median = v[0] * scale, .min = v[1] * scale, .max = v[2] * scale};
    return true;
}

int bench_pingpong_parse(const char *line, uint64_t *bytes, bench_point *out)
{
    static const char *const key[6] = {" lat_us_median=", " lat_us_min=", " lat_us_max=",
                                       " bw_Bps_median=", " bw_Bps_min=", " bw_Bps_max="};
    const char *p = line;
    uint64_t b;
    double v[6];
    if (!literal(&p, "size=") || !count(&p, &b))
        return CL_EPARSE;
    for (int i = 0; i < 6; i++)
        if (!literal(&p, key[i]) || !positive(&p, &v[i]))
            return CL_EPARSE;
    bench_point pt = {.ok = true};
    if (!line_end(p) || !ordered(v, 1e-6, &pt.lat) || !ordered(v + 3, 1, &pt.bw))
        return CL_EPARSE;
    *bytes = b;
    *out = pt;
    return 0;
}

int bench_csv_parse(const char *line, uint64_t *bytes, cl_stats *time)
{
    const char *p = line;
    uint64_t b, iters;
    double v[3];
    if (!count(&p, &b) || !literal(&p, ",") || !count(&p, &iters))
        return CL_EPARSE;
    for (int i = 0; i < 3; i++)
        if (!literal(&p, ",") || !positive(&p, &v[i]))
            return CL_EPARSE;
    cl_stats s;
    if (!(*p == ',' || line_end(p)) || !ordered(v, 1, &s))
        return CL_EPARSE;
    s.n = (size_t)iters;
    *bytes = b;
    *time = s;
    return 0;
}
