/* units.c - parsing and printing sizes, times and bandwidths. */
#include "core/units.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commlab.h"

typedef struct unit {
    const char *name;
    double scale;
} unit;

static const unit size_units[] = {
    {"B", 1.0},        {"kB", 1e3},           {"KB", 1e3},           {"MB", 1e6},
    {"GB", 1e9},       {"TB", 1e12},          {"KiB", 1024.0},       {"MiB", 1048576.0},
    {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}, {"PiB", 1125899906842624.0},
    {"EiB", 1152921504606846976.0},
    /* One letter, as nccl-tests (-b 8 -e 128M) and the OSU benchmarks
     * (-m 1k:4M) read it: powers of 1024. */
    {"k", 1024.0},     {"K", 1024.0},         {"M", 1048576.0},      {"G", 1073741824.0},
    {"T", 1099511627776.0}, {NULL, 0},
};

static const unit time_units[] = {
    {"s", 1.0}, {"ms", 1e-3}, {"us", 1e-6}, {"\xc2\xb5s", 1e-6}, {"ns", 1e-9}, {NULL, 0},
};

static const unit bandwidth_units[] = {
    {"B/s", 1.0},          {"kB/s", 1e3},          {"KB/s", 1e3},
    {"MB/s", 1e6},         {"GB/s", 1e9},          {"TB/s", 1e12},
    {"KiB/s", 1024.0},     {"MiB/s", 1048576.0},   {"GiB/s", 1073741824.0},
    {"bit/s", 0.125},      {"kbit/s", 125.0},      {"Kbit/s", 125.0},
    {"Mbit/s", 125e3},     {"Gbit/s", 125e6},      {"Tbit/s", 125e9},
    {"Gb/s", 125e6},       {"Mb/s", 125e3},        {"Gbps", 125e6},
    {"Mbps", 125e3},       {NULL, 0},
};

static const unit *find_unit(const unit *table, const char *name)
{
    for (const unit *u = table; u->name; u++)
        if (strcmp(u->name, name) == 0)
            return u;
    return NULL;
}

static size_t digits(const char *s)
{
    size_t n = 0;
    while (s[n] >= '0' && s[n] <= '9')
        n++;
    return n;
}

size_t units_decimal_len(const char *text)
{
    size_t n = digits(text);
    if (text[n] == '.') {
        size_t f = digits(text + n + 1);
        if (n == 0 && f == 0)
            return 0;
        n += 1 + f;
    }
    if (n == 0)
        return 0;
    if (text[n] == 'e' || text[n] == 'E') {
        size_t s = text[n + 1] == '+' || text[n + 1] == '-';
        size_t x = digits(text + n + 1 + s);
        if (x)
            n += 1 + s + x;
    }
    return n;
}

/* Splits "1.5KiB" into a finite non-negative number and its unit text. */
static int parse_number(const char *text, const char *what, const char *kind,
                        double *num, const char **rest, cl_diag *d)
{
    if (!text || !*text)
        return diag_set(d, CL_EPARSE, "%s: empty %s", what, kind);
    const char *p = text;
    while (*p == ' ')
        p++;
    if (*p == '-')
        return diag_set(d, CL_ERANGE, "%s: %s must not be negative, got '%s'", what, kind,
                        text);
    size_t len = units_decimal_len(p);
    if (len == 0)
        return diag_set(d, CL_EPARSE, "%s: cannot parse %s '%s': expected a number", what,
                        kind, text);
    char *end;
    errno = 0;
    double v = strtod(p, &end);
    if (end != p + len) /* strtod read on: "0x10" is hex, not decimal */
        return diag_set(d, CL_EPARSE, "%s: cannot parse %s '%s': write it in decimal", what,
                        kind, text);
    if (errno == ERANGE || !isfinite(v))
        return diag_set(d, CL_ERANGE, "%s: %s '%s' is out of range", what, kind, text);
    while (*end == ' ')
        end++;
    *num = v;
    *rest = end;
    return 0;
}

int units_parse_size(const char *text, const char *what, uint64_t *out, cl_diag *d)
{
    double v;
    const char *u;
    int err = parse_number(text, what, "size", &v, &u, d);
    if (err)
        return err;
    double scale = 1.0;
    if (*u) {
        const unit *k = find_unit(size_units, u);
        if (!k)
            return diag_set(d, CL_EPARSE,
                            "%s: unknown size unit '%s' in '%s' (use B, KB, MB, GB, KiB, "
                            "MiB, GiB, TiB, PiB, EiB; K, M, G, T mean KiB, MiB, GiB, TiB)",
                            what, u, text);
        scale = k->scale;
    }
    /* Whole numbers take the exact path: doubles lose bytes above 2^53
     * ("14568062888070501KiB", as units_size_arg prints, came back wrong). */
    const char *num = text + strspn(text, " ");
    size_t digits = strspn(num, "0123456789");
    if (num[digits] == 0 || num[digits] == ' ' || (num + digits == u && *u)) {
        errno = 0;
        unsigned long long n = strtoull(num, NULL, 10);
        uint64_t k = (uint64_t)scale;
        if (errno == ERANGE || (n && k > UINT64_MAX / n))
            return diag_set(d, CL_ERANGE, "%s: size '%s' is out of range", what, text);
        *out = n * k;
        return 0;
    }
    double bytes = v * scale;
    if (bytes >= 18446744073709551616.0)
        return diag_set(d, CL_ERANGE, "%s: size '%s' is out of range", what, text);
    if (bytes != floor(bytes))
        return diag_set(d, CL_EPARSE, "%s: size '%s' is not a whole number of bytes", what,
                        text);
    *out = (uint64_t)bytes;
    return 0;
}

/* *out = v * scale, a number a parser read and its unit's factor: a
 * product too large for a double ("1e305Gb/s") is out of range. */
static int scaled(double v, double scale, const char *text, const char *what, const char *kind,
                  double *out, cl_diag *d)
{
    double x = v * scale;
    if (!isfinite(x))
        return diag_set(d, CL_ERANGE, "%s: %s '%s' is out of range", what, kind, text);
    *out = x;
    return 0;
}

int units_parse_time(const char *text, const char *what, double *out, cl_diag *d)
{
    double v;
    const char *u;
    int err = parse_number(text, what, "time", &v, &u, d);
    if (err)
        return err;
    if (!*u)
        return diag_set(d, CL_EPARSE, "%s: time '%s' needs a unit (s, ms, us, ns)", what, text);
    const unit *k = find_unit(time_units, u);
    if (!k)
        return diag_set(d, CL_EPARSE, "%s: unknown time unit '%s' in '%s' (use s, ms, us, ns)",
                        what, u, text);
    return scaled(v, k->scale, text, what, "time", out, d);
}

int units_parse_bandwidth(const char *text, const char *what, double *out, cl_diag *d)
{
    double v;
    const char *u;
    int err = parse_number(text, what, "bandwidth", &v, &u, d);
    if (err)
        return err;
    if (!*u)
        return diag_set(d, CL_EPARSE, "%s: bandwidth '%s' needs a unit (GB/s, Gbit/s, ...)",
                        what, text);
    const unit *k = find_unit(bandwidth_units, u);
    if (!k)
        return diag_set(d, CL_EPARSE,
                        "%s: unknown bandwidth unit '%s' in '%s' (use B/s, MB/s, GB/s, "
                        "GiB/s, Mbit/s, Gbit/s)",
                        what, u, text);
    return scaled(v, k->scale, text, what, "bandwidth", out, d);
}

int units_size_range(uint64_t from, uint64_t to, uint64_t factor, const char *what,
                     uint64_t **out, size_t *n, cl_diag *d)
{
    if (factor < 2)
        return diag_set(d, CL_ERANGE, "%s: range factor must be at least 2, got %llu", what,
                        (unsigned long long)factor);
    if (from == 0)
        return diag_set(d, CL_ERANGE, "%s: a geometric range cannot start at 0", what);
    if (from > to) {
        char f[UNITS_BUF], t[UNITS_BUF];
        return diag_set(d, CL_ERANGE, "%s: range start %s is above its end %s: give the "
                        "smaller size first", what, units_size_str(f, from),
                        units_size_str(t, to));
    }
    size_t count = 0;
    for (uint64_t s = from; s <= to; s *= factor) {
        count++;
        if (s > to / factor)
            break;
    }
    uint64_t *v = malloc(count * sizeof *v);
    if (!v)
        return diag_set(d, CL_ENOMEM, "%s: out of memory", what);
    uint64_t s = from;
    for (size_t i = 0; i < count; i++, s *= factor)
        v[i] = s;
    *out = v;
    *n = count;
    return 0;
}

/* Appends one item ("4KiB" or "8:4MiB:x4") of a size list. */
static int parse_size_item(const char *item, const char *what, uint64_t *v, size_t *n,
                           cl_diag *d)
{
    const char *c1 = strchr(item, ':');
    if (!c1) {
        if (*n >= UNITS_MAX_SIZES)
            return diag_set(d, CL_ERANGE, "%s: more than %d sizes", what, UNITS_MAX_SIZES);
        return units_parse_size(item, what, &v[(*n)++], d);
    }
    const char *c2 = strchr(c1 + 1, ':');
    if (!c2 || c2[1] != 'x')
        return diag_set(d, CL_EPARSE, "%s: range '%s' must read FROM:TO:xFACTOR, as 8:4MiB:x4",
                        what, item);
    char from_s[64], to_s[64];
    size_t lf = (size_t)(c1 - item), lt = (size_t)(c2 - c1 - 1);
    if (lf >= sizeof from_s || lt >= sizeof to_s)
        return diag_set(d, CL_EPARSE, "%s: range '%s' is too long", what, item);
    memcpy(from_s, item, lf);
    from_s[lf] = 0;
    memcpy(to_s, c1 + 1, lt);
    to_s[lt] = 0;
    uint64_t from, to, factor;
    int err;
    if ((err = units_parse_size(from_s, what, &from, d)) ||
        (err = units_parse_size(to_s, what, &to, d)) ||
        (err = units_parse_size(c2 + 2, what, &factor, d)))
        return err;
    uint64_t *r;
    size_t rn;
    if ((err = units_size_range(from, to, factor, what, &r, &rn, d)))
        return err;
    if (*n + rn > UNITS_MAX_SIZES) {
        free(r);
        return diag_set(d, CL_ERANGE, "%s: more than %d sizes", what, UNITS_MAX_SIZES);
    }
    memcpy(v + *n, r, rn * sizeof *r);
    *n += rn;
    free(r);
    return 0;
}

int units_parse_sizes(const char *text, const char *what, uint64_t **out, size_t *n,
                      cl_diag *d)
{
    if (!text || !*text)
        return diag_set(d, CL_EPARSE, "%s: empty size list", what);
    uint64_t *v = malloc(UNITS_MAX_SIZES * sizeof *v);
    char *copy = strdup(text);
    if (!v || !copy) {
        free(v);
        free(copy);
        return diag_set(d, CL_ENOMEM, "%s: out of memory", what);
    }
    size_t count = 0;
    int err = 0;
    char *rest = copy, *item;
    while (!err && (item = strsep(&rest, ",")) != NULL)
        err = *item ? parse_size_item(item, what, v, &count, d)
                    : diag_set(d, CL_EPARSE, "%s: empty item in size list '%s'", what, text);
    free(copy);
    if (err) {
        free(v);
        return err;
    }
    *out = v;
    *n = count;
    return 0;
}

/* Prints v with up to 2 decimals, dropping trailing zeros: 1, 1.5, 0.25. */
static void trim_number(char *buf, size_t len, double v, const char *suffix)
{
    snprintf(buf, len, "%.2f", v);
    char *dot = strchr(buf, '.');
    if (dot) {
        char *e = buf + strlen(buf) - 1;
        while (e > dot && *e == '0')
            *e-- = 0;
        if (e == dot)
            *e = 0;
    }
    size_t used = strlen(buf);
    snprintf(buf + used, len - used, "%s", suffix);
}

char *units_size_str(char buf[UNITS_BUF], uint64_t bytes)
{
    static const char *names[] = {" B", " KiB", " MiB", " GiB", " TiB", " PiB", " EiB"};
    double v = (double)bytes;
    int i = 0;
    while (v >= 1024.0 && i < 6) {
        v /= 1024.0;
        i++;
    }
    if (i == 0)
        snprintf(buf, UNITS_BUF, "%llu B", (unsigned long long)bytes);
    else
        trim_number(buf, UNITS_BUF, v, names[i]);
    return buf;
}

char *units_size_arg(char buf[UNITS_BUF], uint64_t bytes)
{
    static const char *names[] = {"", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int i = 0;
    uint64_t v = bytes;
    while (v >= 1024 && v % 1024 == 0 && i < 6) {
        v /= 1024;
        i++;
    }
    snprintf(buf, UNITS_BUF, "%llu%s", (unsigned long long)v, names[i]);
    return buf;
}

char *units_time_digits(char buf[UNITS_BUF], double s, int digits)
{
    double a = fabs(s);
    if (a >= 1.0 || a == 0.0)
        snprintf(buf, UNITS_BUF, "%.*g s", digits, s);
    else if (a >= 1e-3)
        snprintf(buf, UNITS_BUF, "%.*g ms", digits, s * 1e3);
    else if (a >= 1e-6)
        snprintf(buf, UNITS_BUF, "%.*g us", digits, s * 1e6);
    else
        snprintf(buf, UNITS_BUF, "%.*g ns", digits, s * 1e9);
    return buf;
}

char *units_time_str(char buf[UNITS_BUF], double s)
{
    return units_time_digits(buf, s, 3);
}

char *units_bandwidth_str(char buf[UNITS_BUF], double bps)
{
    static const char *names[] = {" B/s", " KB/s", " MB/s", " GB/s", " TB/s"};
    double v = bps;
    int i = 0;
    while (v >= 1000.0 && i < 4) {
        v /= 1000.0;
        i++;
    }
    trim_number(buf, UNITS_BUF, v, names[i]);
    return buf;
}

char *units_rate_str(char buf[UNITS_BUF], double bytes_per_s)
{
    static const char *names[] = {"bit/s", "kbit/s", "Mbit/s", "Gbit/s", "Tbit/s"};
    double v = bytes_per_s * 8;
    int i = 0;
    while (v >= 1000 && i < 4) {
        v /= 1000;
        i++;
    }
    snprintf(buf, UNITS_BUF, "%.4g %s", v, names[i]);
    return buf;
}
