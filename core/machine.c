/* machine.c - loading, writing and pricing calibrated machine models. */
#include "core/machine.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commlab.h"
#include "core/config.h"
#include "core/file.h"

static int text_key(cfg_doc *c, yaml_node_t *root, const char *key, bool required, char *buf,
                    size_t len, cl_diag *d)
{
    yaml_node_t *v;
    const char *s;
    int err;
    if ((err = cfg_get(c, root, key, required, &v, d)) || !v)
        return err;
    if ((err = cfg_string(c, v, key, &s, d)))
        return err;
    if (required && !*s)
        return cfg_error(c, v, d, "'%s' must not be empty", key);
    if (strlen(s) >= len)
        return cfg_error(c, v, d, "'%s' is longer than %zu characters", key, len - 1);
    snprintf(buf, len, "%s", s);
    return 0;
}

/* An optional plain number (r2, max_residual_pct); NAN when absent. */
static int number_key(cfg_doc *c, yaml_node_t *map, const char *key, double *out, cl_diag *d)
{
    yaml_node_t *v;
    int err;
    *out = NAN;
    if ((err = cfg_get(c, map, key, false, &v, d)) || !v)
        return err;
    return cfg_number(c, v, key, out, d);
}

/* A bandwidth, or `inf` for none per byte. */
static int bandwidth_or_inf(cfg_doc *c, yaml_node_t *v, const char *key, double *out,
                            cl_diag *d)
{
    const char *text;
    int err = cfg_string(c, v, key, &text, d);
    if (err)
        return err;
    if (strcmp(text, "inf") == 0) {
        *out = INFINITY;
        return 0;
    }
    return cfg_bandwidth(c, v, key, out, d);
}

/* The optional pair gap_key, bw_key of node into *gap (NAN: absent) and
 * *bw (INFINITY: absent); bw_key without gap_key is an error. */
static int load_gap(cfg_doc *c, yaml_node_t *node, const char *gap_key, const char *bw_key,
                    double *gap, double *bw, cl_diag *d)
{
    yaml_node_t *g = NULL, *gb = NULL;
    int err;
    *gap = NAN;
    *bw = INFINITY;
    if ((err = cfg_get(c, node, gap_key, false, &g, d)) ||
        (err = cfg_get(c, node, bw_key, false, &gb, d)))
        return err;
    if (gb && !g)
        return cfg_error(c, gb, d, "'%s' needs a '%s' in the same segment", bw_key, gap_key);
    if ((g && (err = cfg_time(c, g, gap_key, gap, d))) ||
        (gb && (err = bandwidth_or_inf(c, gb, bw_key, bw, d))))
        return err;
    return 0;
}

/* One segment; `what` names its list ("segments" or "duplex") in errors;
 * duplex segments take no gap. */
static int load_segment(cfg_doc *c, yaml_node_t *node, const char *what, machine_segment *s,
                        cl_diag *d)
{
    static const char *const keys[] = {"upto", "alpha", "bandwidth", "r2", "max_residual_pct",
                                       "gap", "gap_bandwidth", "posted_gap",
                                       "posted_gap_bandwidth", NULL};
    static const char *const duplex_keys[] = {"upto", "alpha", "bandwidth", "r2",
                                              "max_residual_pct", NULL};
    bool gaps = strcmp(what, "segments") == 0;
    char item[32];
    snprintf(item, sizeof item, "%s[]", what);
    yaml_node_t *v;
    int err;
    s->gap = s->posted_gap = NAN;
    s->gap_bandwidth = s->posted_gap_bandwidth = INFINITY;
    if ((err = cfg_expect_map(c, node, item, d)) ||
        (err = cfg_known_keys(c, node, gaps ? keys : duplex_keys,
                          gaps ? "a segment" : "a duplex segment", d)) ||
        (err = cfg_get(c, node, "upto", true, &v, d)) ||
        (err = cfg_size(c, v, "upto", &s->upto, d)) ||
        (err = cfg_get(c, node, "alpha", true, &v, d)) ||
        (err = cfg_time(c, v, "alpha", &s->alpha, d)) ||
        (err = cfg_get(c, node, "bandwidth", true, &v, d)) ||
        (err = bandwidth_or_inf(c, v, "bandwidth", &s->bandwidth, d)) ||
        (err = number_key(c, node, "r2", &s->r2, d)) ||
        (err = number_key(c, node, "max_residual_pct", &s->max_residual_pct, d)) ||
        (gaps && (err = load_gap(c, node, "gap", "gap_bandwidth", &s->gap, &s->gap_bandwidth,
                                 d))) ||
        (gaps && (err = load_gap(c, node, "posted_gap", "posted_gap_bandwidth", &s->posted_gap,
                                 &s->posted_gap_bandwidth, d))))
        return err;
    if (!isnan(s->posted_gap) && isnan(s->gap)) {
        cfg_get(c, node, "posted_gap", false, &v, d);
        return cfg_error(c, v, d, "'posted_gap' needs a 'gap' in the same segment");
    }
    return 0;
}

/* The list `key` of root into seg[0..*n): required, or *n = 0 when absent. */
static int load_segments(cfg_doc *c, yaml_node_t *root, const char *key, bool required,
                         machine_segment *seg, size_t *n, cl_diag *d)
{
    yaml_node_t *list;
    int err;
    *n = 0;
    if ((err = cfg_get(c, root, key, required, &list, d)) || !list ||
        (err = cfg_expect_seq(c, list, key, d)))
        return err;
    size_t len = cfg_seq_len(list);
    if (len < 1 || len > MACHINE_MAX_SEGMENTS)
        return cfg_error(c, list, d, "'%s' must list 1 to %d segments, got %zu", key,
                         MACHINE_MAX_SEGMENTS, len);
    for (size_t i = 0; i < len; i++) {
        yaml_node_t *item = cfg_seq_at(c, list, i);
        if ((err = load_segment(c, item, key, &seg[i], d)))
            return err;
        if (i > 0 && seg[i].upto <= seg[i - 1].upto) {
            yaml_node_t *u;
            cfg_get(c, item, "upto", true, &u, d);
            return cfg_error(c, u, d,
                             "'upto' must increase from segment to segment, got %llu after "
                             "%llu",
                             (unsigned long long)seg[i].upto,
                             (unsigned long long)seg[i - 1].upto);
        }
    }
    *n = len;
    return 0;
}

/* The optional reference probe: a list of {bytes, time}. */
static int load_refs(cfg_doc *c, yaml_node_t *root, machine *m, cl_diag *d)
{
    static const char *const keys[] = {"bytes", "time", NULL};
    yaml_node_t *list, *v;
    int err;
    m->nref = 0;
    if ((err = cfg_get(c, root, "reference", false, &list, d)) || !list ||
        (err = cfg_expect_seq(c, list, "reference", d)))
        return err;
    size_t len = cfg_seq_len(list);
    if (len < 1 || len > MACHINE_MAX_REFS)
        return cfg_error(c, list, d, "'reference' must list 1 to %d probes, got %zu",
                         MACHINE_MAX_REFS, len);
    for (size_t i = 0; i < len; i++) {
        yaml_node_t *item = cfg_seq_at(c, list, i);
        machine_ref *r = &m->ref[i];
        if ((err = cfg_expect_map(c, item, "reference[]", d)) ||
            (err = cfg_known_keys(c, item, keys, "a reference probe", d)) ||
            (err = cfg_get(c, item, "bytes", true, &v, d)) ||
            (err = cfg_size(c, v, "bytes", &r->bytes, d)) ||
            (err = cfg_get(c, item, "time", true, &v, d)) ||
            (err = cfg_time(c, v, "time", &r->time, d)))
            return err;
        if (!(r->time > 0))
            return cfg_error(c, v, d, "'time' of a reference probe must be > 0");
    }
    m->nref = len;
    return 0;
}

/* netlab: a port's rate, optional (0: none). */
static int load_netlab(cfg_doc *c, yaml_node_t *root, machine *m, cl_diag *d)
{
    yaml_node_t *v;
    int err = cfg_get(c, root, "netlab", false, &v, d);
    return err || !v ? err : cfg_bandwidth(c, v, "netlab", &m->netlab, d); /* > 0 */
}

/* cache: the --cache mode, optional; a file without it is from before
 * --cache existed, whose runs left the buffers warm. */
static int load_cache(cfg_doc *c, yaml_node_t *root, machine *m, cl_diag *d)
{
    yaml_node_t *v;
    const char *text;
    m->cache = CACHE_WARM;
    m->cache_recorded = false;
    int err = cfg_get(c, root, "cache", false, &v, d);
    if (err || !v || (err = cfg_string(c, v, "cache", &text, d)))
        return err;
    if (cache_mode_parse(text, &m->cache))
        return cfg_error(c, v, d, "'cache' must be fresh, warm or cold, got '%s'", text);
    m->cache_recorded = true;
    return 0;
}

/* reduce_bandwidth: a mapping of type names to bandwidths, optional. */
static int load_reduce(cfg_doc *c, yaml_node_t *root, machine *m, cl_diag *d)
{
    static const char *const names[] = {"f64", "f32", "bf16", "f16", "i32", "i64", NULL};
    yaml_node_t *map, *v;
    int err = cfg_get(c, root, "reduce_bandwidth", false, &map, d);
    if (err || !map)
        return err;
    if ((err = cfg_expect_map(c, map, "reduce_bandwidth", d)) ||
        (err = cfg_known_keys(c, map, names, "reduce_bandwidth", d)))
        return err;
    for (int t = 0; t < MACHINE_NDTYPES; t++)
        if ((err = cfg_get(c, map, names[t], false, &v, d)) ||
            (v && (err = cfg_bandwidth(c, v, names[t], &m->reduce_bandwidth[t], d))))
            return err;
    return 0;
}

static int load_doc(machine *m, cfg_doc *c, cl_diag *d)
{
    static const char *const keys[] = {"host", "backend", "provider", "netlab", "eager_limit",
                                       "cache", "date", "method", "segments", "duplex",
                                       "reference", "reduce_bandwidth", NULL};
    yaml_node_t *root, *v;
    int err;
    if ((err = cfg_root(c, &root, d)) || (err = cfg_known_keys(c, root, keys, "a machine file", d)) ||
        (err = text_key(c, root, "host", true, m->host, sizeof m->host, d)) ||
        (err = text_key(c, root, "backend", true, m->backend, sizeof m->backend, d)) ||
        (err = text_key(c, root, "provider", false, m->provider, sizeof m->provider, d)) ||
        (err = text_key(c, root, "date", false, m->date, sizeof m->date, d)) ||
        (err = text_key(c, root, "method", false, m->method, sizeof m->method, d)) ||
        (err = cfg_get(c, root, "eager_limit", true, &v, d)) ||
        (err = cfg_size(c, v, "eager_limit", &m->eager_limit, d)) ||
        (err = load_netlab(c, root, m, d)) || (err = load_cache(c, root, m, d)) ||
        (err = load_segments(c, root, "segments", true, m->seg, &m->nseg, d)) ||
        (err = load_segments(c, root, "duplex", false, m->duplex, &m->nduplex, d)) ||
        (err = load_refs(c, root, m, d)) || (err = load_reduce(c, root, m, d)))
        return err;
    return 0;
}

static int load_any(machine *m, const char *name, const char *text, cl_diag *d)
{
    cfg_doc c;
    int err = text ? cfg_doc_load_string(&c, name, text, d) : cfg_doc_load(&c, name, d);
    if (err)
        return err;
    machine tmp = {.nseg = 0};
    snprintf(tmp.path, sizeof tmp.path, "%s", name);
    err = load_doc(&tmp, &c, d);
    cfg_doc_release(&c);
    if (!err)
        *m = tmp;
    return err;
}

int machine_load(machine *m, const char *path, cl_diag *d)
{
    return load_any(m, path, NULL, d);
}

int machine_load_string(machine *m, const char *name, const char *text, cl_diag *d)
{
    return load_any(m, name, text, d);
}

/* YAML needs no quotes for the texts commlab writes, but a user's host or
 * method may hold anything: double-quoted with escapes it always reads back. */
static void put_quoted(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(f, "\\x%02x", (unsigned char)*s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

/* ", KEY: <g>ns, KEY_bandwidth: <bw>" when the segment has that gap. */
static void write_gap(FILE *f, const char *key, double gap, double bw)
{
    if (isnan(gap))
        return;
    fprintf(f, ", %s: %.6gns, %s_bandwidth: ", key, gap * 1e9, key);
    if (isinf(bw))
        fputs("inf", f);
    else
        fprintf(f, "%.6gGB/s", bw / 1e9);
}

static void write_segments(FILE *f, const char *key, const machine_segment *seg, size_t n)
{
    fprintf(f, "%s:\n", key);
    for (size_t i = 0; i < n; i++) {
        const machine_segment *s = &seg[i];
        fprintf(f, "  - {upto: %llu, alpha: %.6gns, bandwidth: ", (unsigned long long)s->upto,
                s->alpha * 1e9);
        if (isinf(s->bandwidth))
            fputs("inf", f);
        else
            fprintf(f, "%.6gGB/s", s->bandwidth / 1e9);
        if (!isnan(s->r2))
            fprintf(f, ", r2: %.6f", s->r2);
        if (!isnan(s->max_residual_pct))
            fprintf(f, ", max_residual_pct: %.2f", s->max_residual_pct);
        write_gap(f, "gap", s->gap, s->gap_bandwidth);
        write_gap(f, "posted_gap", s->posted_gap, s->posted_gap_bandwidth);
        fputs("}\n", f);
    }
}

int machine_write(const machine *m, FILE *f)
{
    fputs("# A calibrated machine model, written by `commlab calibrate`; the simulator\n"
          "# replays it with `--model FILE`.  A message of n bytes costs\n"
          "# alpha + n / bandwidth of the first segment with n <= upto (the last one\n"
          "# above every upto).  r2 and max_residual_pct describe the fit.  Where a\n"
          "# segment has a gap, a rank's back-to-back messages on one link start at\n"
          "# least gap + n / gap_bandwidth apart (LogGP's g and G); posted_gap, where\n"
          "# present, spaces instead the eager messages whose receive was posted by\n"
          "# the end of the instant they were sent in (no unexpected copy).  duplex, where\n"
          "# present, prices a message that moves while one of its ranks moves\n"
          "# another the opposite way (an exchange).  reference is a short\n"
          "# ping-pong probed when it was calibrated: the regime it was taken in.\n"
          "# netlab, where present: measured between network namespaces behind a\n"
          "# switch of that rate a port (commlab calibrate --netlab).  cache: the\n"
          "# state of the buffers' lines when each iteration started (--cache).\n"
          "# reduce_bandwidth, where present: how fast one rank sums two buffers,\n"
          "# per element type.\n",
          f);
    fputs("host: ", f);
    put_quoted(f, m->host);
    fputs("\nbackend: ", f);
    put_quoted(f, m->backend);
    if (*m->provider) {
        fputs("\nprovider: ", f);
        put_quoted(f, m->provider);
    }
    if (m->netlab > 0)
        fprintf(f, "\nnetlab: %.6gGbit/s", m->netlab * 8 / 1e9);
    fprintf(f, "\neager_limit: %llu\ncache: %s\n", (unsigned long long)m->eager_limit,
            cache_mode_name(m->cache));
    if (*m->date) {
        fputs("date: ", f);
        put_quoted(f, m->date);
        fputc('\n', f);
    }
    if (*m->method) {
        fputs("method: ", f);
        put_quoted(f, m->method);
        fputc('\n', f);
    }
    write_segments(f, "segments", m->seg, m->nseg);
    if (m->nduplex)
        write_segments(f, "duplex", m->duplex, m->nduplex);
    if (m->nref)
        fputs("reference:\n", f);
    for (size_t i = 0; i < m->nref; i++)
        fprintf(f, "  - {bytes: %llu, time: %.6gns}\n", (unsigned long long)m->ref[i].bytes,
                m->ref[i].time * 1e9);
    static const char *const names[] = {"f64", "f32", "bf16", "f16", "i32", "i64"};
    const char *sep = "reduce_bandwidth: {";
    for (int t = 0; t < MACHINE_NDTYPES; t++)
        if (m->reduce_bandwidth[t] > 0) {
            fprintf(f, "%s%s: %.6gGB/s", sep, names[t], m->reduce_bandwidth[t] / 1e9);
            sep = ", ";
        }
    if (*sep == ',')
        fputs("}\n", f);
    return ferror(f) ? CL_EIO : 0;
}

int machine_save(const machine *m, const char *path, cl_diag *d)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = 0;
        if (mkdir(dir, 0777) != 0 && errno != EEXIST)
            return diag_set(d, CL_EIO, "cannot create the folder '%s': %s", dir,
                            strerror(errno));
    }
    file_out o;
    int err = file_out_open(&o, path, "the machine file", d);
    if (err)
        return err;
    machine_write(m, o.f); /* a write error is found again by the commit */
    return file_out_commit(&o, "the machine file", d);
}

static const machine_segment *segment_of(const machine_segment *seg, size_t n, uint64_t bytes)
{
    for (size_t i = 0; i + 1 < n; i++)
        if (bytes <= seg[i].upto)
            return &seg[i];
    return &seg[n - 1];
}

const machine_segment *machine_segment_of(const machine *m, uint64_t bytes)
{
    return segment_of(m->seg, m->nseg, bytes);
}

double machine_time(const machine *m, uint64_t bytes)
{
    const machine_segment *s = machine_segment_of(m, bytes);
    return s->alpha + (double)bytes / s->bandwidth;
}

bool machine_gap(const machine *m, uint64_t bytes, double *out)
{
    const machine_segment *s = machine_segment_of(m, bytes);
    if (isnan(s->gap))
        return false;
    *out = s->gap + (double)bytes / s->gap_bandwidth;
    return true;
}

bool machine_posted_gap(const machine *m, uint64_t bytes, double *out)
{
    const machine_segment *s = machine_segment_of(m, bytes);
    if (isnan(s->posted_gap))
        return machine_gap(m, bytes, out);
    *out = s->posted_gap + (double)bytes / s->posted_gap_bandwidth;
    return true;
}

bool machine_has_posted_gap(const machine *m)
{
    for (size_t i = 0; i < m->nseg; i++)
        if (!isnan(m->seg[i].posted_gap))
            return true;
    return false;
}

bool machine_duplex_time(const machine *m, uint64_t bytes, double *out)
{
    if (m->nduplex == 0)
        return false;
    const machine_segment *s = segment_of(m->duplex, m->nduplex, bytes);
    *out = s->alpha + (double)bytes / s->bandwidth;
    return true;
}

static bool segments_ok(const machine_segment *seg, size_t n, bool gaps)
{
    for (size_t i = 0; i < n; i++) {
        const machine_segment *s = &seg[i];
        if (!(s->alpha >= 0) || !(s->bandwidth > 0) || (i > 0 && s->upto <= seg[i - 1].upto))
            return false;
        if (!isnan(s->gap) && (!gaps || !(s->gap >= 0) || !(s->gap_bandwidth > 0)))
            return false;
        if (!isnan(s->posted_gap) && (isnan(s->gap) || !(s->posted_gap >= 0) ||
                                      !(s->posted_gap_bandwidth > 0)))
            return false;
    }
    return true;
}

bool machine_check(const machine *m)
{
    if (m->nref > MACHINE_MAX_REFS)
        return false;
    for (size_t i = 0; i < m->nref; i++)
        if (!(m->ref[i].time > 0))
            return false;
    return m->nseg >= 1 && m->nseg <= MACHINE_MAX_SEGMENTS &&
           m->nduplex <= MACHINE_MAX_SEGMENTS && segments_ok(m->seg, m->nseg, true) &&
           segments_ok(m->duplex, m->nduplex, false);
}
