/* config.c - libyaml documents with positioned errors. */
#include "core/config.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commlab.h"
#include "core/file.h"
#include "core/units.h"

static int syntax_error(cfg_doc *c, yaml_parser_t *p, cl_diag *d)
{
    int line = (int)p->problem_mark.line + 1, col = (int)p->problem_mark.column + 1;
    return diag_set(d, CL_EPARSE, "%s:%d:%d: YAML syntax error: %s%s%s", c->path, line, col,
                    p->problem ? p->problem : "unknown problem", p->context ? " " : "",
                    p->context ? p->context : "");
}

static int event_error(cfg_doc *c, const yaml_event_t *ev, cl_diag *d, const char *msg)
{
    return diag_set(d, CL_ECONFIG, "%s:%d:%d: %s", c->path, (int)ev->start_mark.line + 1,
                    (int)ev->start_mark.column + 1, msg);
}

/* A first pass over the events, before any node is built: one document,
 * nesting at most CFG_MAX_DEPTH deep, no aliases.  It stops at the first
 * offence, which bounds libyaml's work on hostile input: its time grows
 * with the square of the nesting depth. */
static int scan(cfg_doc *c, const char *text, size_t len, cl_diag *d)
{
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        return diag_set(d, CL_ENOMEM, "cannot read config '%s': out of memory", c->path);
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    int err = 0, depth = 0, docs = 0;
    char msg[96];
    for (bool end = false; !err && !end;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            err = syntax_error(c, &p, d);
            break;
        }
        switch (ev.type) {
        case YAML_DOCUMENT_START_EVENT:
            if (++docs > 1)
                err = event_error(c, &ev, d, "a second YAML document: a config file holds one");
            break;
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
            if (++depth > CFG_MAX_DEPTH) {
                snprintf(msg, sizeof msg, "lists and mappings nest more than %d deep",
                         CFG_MAX_DEPTH);
                err = event_error(c, &ev, d, msg);
            }
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            depth--;
            break;
        case YAML_ALIAS_EVENT:
            err = event_error(c, &ev, d, "aliases ('*name') are not supported: write the value "
                                         "out");
            break;
        case YAML_STREAM_END_EVENT:
            end = true;
            break;
        default:
            break;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&p);
    return err;
}

typedef struct key_ref {
    const char *text; /* the key */
    size_t at;        /* its place in the mapping */
} key_ref;

static int by_text_then_place(const void *a, const void *b)
{
    const key_ref *x = a, *y = b;
    int k = strcmp(x->text, y->text);
    return k ? k : (x->at > y->at) - (x->at < y->at);
}

/* Every key of map is a scalar and none comes twice.  Sorting finds the
 * twins in O(n log n): a mapping may hold many keys. */
static int check_map_keys(cfg_doc *c, yaml_node_t *map, cl_diag *d)
{
    size_t n = cfg_map_len(map);
    key_ref *keys = malloc((n ? n : 1) * sizeof *keys);
    if (!keys)
        return diag_set(d, CL_ENOMEM, "%s: out of memory", c->path);
    int err = 0;
    for (size_t i = 0; !err && i < n; i++) {
        yaml_node_t *k = yaml_document_get_node(&c->doc, map->data.mapping.pairs.start[i].key);
        if (k->type != YAML_SCALAR_NODE)
            err = cfg_error(c, k, d, "a key must be a plain name, got %s",
                            k->type == YAML_SEQUENCE_NODE ? "a list" : "a mapping");
        else
            keys[i] = (key_ref){(const char *)k->data.scalar.value, i};
    }
    if (!err)
        qsort(keys, n, sizeof *keys, by_text_then_place);
    for (size_t i = 1; !err && i < n; i++)
        if (strcmp(keys[i].text, keys[i - 1].text) == 0) {
            yaml_node_pair_t *twin = map->data.mapping.pairs.start + keys[i].at;
            yaml_node_pair_t *first = map->data.mapping.pairs.start + keys[i - 1].at;
            err = cfg_error(c, yaml_document_get_node(&c->doc, twin->key), d,
                            "key '%s' is given twice (first on line %d)", keys[i].text,
                            (int)yaml_document_get_node(&c->doc, first->key)->start_mark.line +
                                1);
        }
    free(keys);
    return err;
}

static int load(cfg_doc *c, const char *text, size_t len, cl_diag *d)
{
    int err = scan(c, text, len, d);
    if (err)
        return err;
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        return diag_set(d, CL_ENOMEM, "cannot read config '%s': out of memory", c->path);
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    if (!yaml_parser_load(&p, &c->doc)) {
        err = syntax_error(c, &p, d);
        yaml_parser_delete(&p);
        return err;
    }
    yaml_parser_delete(&p);
    c->loaded = true;
    if (!yaml_document_get_root_node(&c->doc)) {
        cfg_doc_release(c);
        return diag_set(d, CL_ECONFIG, "%s:1:1: the file is empty", c->path);
    }
    /* Without aliases the nodes are a tree, each once in this array. */
    for (yaml_node_t *n = c->doc.nodes.start; !err && n < c->doc.nodes.top; n++)
        if (n->type == YAML_MAPPING_NODE)
            err = check_map_keys(c, n, d);
    if (err)
        cfg_doc_release(c);
    return err;
}

int cfg_doc_load(cfg_doc *c, const char *path, cl_diag *d)
{
    memset(c, 0, sizeof *c);
    snprintf(c->path, sizeof c->path, "%s", path);
    char *text;
    size_t len;
    int err = file_read_text(path, "config", CFG_MAX_BYTES, &text, &len, d);
    if (err)
        return err;
    err = load(c, text, len, d);
    free(text);
    return err;
}

int cfg_doc_load_string(cfg_doc *c, const char *name, const char *text, cl_diag *d)
{
    memset(c, 0, sizeof *c);
    snprintf(c->path, sizeof c->path, "%s", name);
    size_t len = strlen(text);
    if (len > CFG_MAX_BYTES)
        return diag_set(d, CL_ERANGE, "config '%s' is larger than %zu bytes", name,
                        (size_t)CFG_MAX_BYTES);
    return load(c, text, len, d);
}

void cfg_doc_release(cfg_doc *c)
{
    if (c->loaded)
        yaml_document_delete(&c->doc);
    c->loaded = false;
}

int cfg_error(cfg_doc *c, yaml_node_t *n, cl_diag *d, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int line = n ? (int)n->start_mark.line + 1 : 1, col = n ? (int)n->start_mark.column + 1 : 1;
    return diag_set(d, CL_ECONFIG, "%s:%d:%d: %s", c->path, line, col, msg);
}

static const char *type_name(yaml_node_t *n)
{
    switch (n->type) {
    case YAML_SCALAR_NODE:
        return "a scalar";
    case YAML_SEQUENCE_NODE:
        return "a list";
    case YAML_MAPPING_NODE:
        return "a mapping";
    default:
        return "nothing";
    }
}

int cfg_root(cfg_doc *c, yaml_node_t **out, cl_diag *d)
{
    yaml_node_t *r = yaml_document_get_root_node(&c->doc);
    if (!r || r->type != YAML_MAPPING_NODE)
        return cfg_error(c, r, d, "the top level must be a mapping, got %s",
                         r ? type_name(r) : "nothing");
    *out = r;
    return 0;
}

int cfg_expect_map(cfg_doc *c, yaml_node_t *n, const char *key, cl_diag *d)
{
    if (n->type != YAML_MAPPING_NODE)
        return cfg_error(c, n, d, "'%s' must be a mapping, got %s", key, type_name(n));
    return 0;
}

int cfg_expect_seq(cfg_doc *c, yaml_node_t *n, const char *key, cl_diag *d)
{
    if (n->type != YAML_SEQUENCE_NODE)
        return cfg_error(c, n, d, "'%s' must be a list, got %s", key, type_name(n));
    return 0;
}

size_t cfg_map_len(yaml_node_t *map)
{
    return (size_t)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
}

void cfg_map_at(cfg_doc *c, yaml_node_t *map, size_t i, const char **key, yaml_node_t **val)
{
    yaml_node_pair_t *pair = map->data.mapping.pairs.start + i;
    yaml_node_t *k = yaml_document_get_node(&c->doc, pair->key);
    *key = (k && k->type == YAML_SCALAR_NODE) ? (const char *)k->data.scalar.value : "";
    *val = yaml_document_get_node(&c->doc, pair->value);
}

size_t cfg_seq_len(yaml_node_t *seq)
{
    return (size_t)(seq->data.sequence.items.top - seq->data.sequence.items.start);
}

yaml_node_t *cfg_seq_at(cfg_doc *c, yaml_node_t *seq, size_t i)
{
    return yaml_document_get_node(&c->doc, seq->data.sequence.items.start[i]);
}

int cfg_get(cfg_doc *c, yaml_node_t *map, const char *key, bool required, yaml_node_t **out,
            cl_diag *d)
{
    *out = NULL;
    for (size_t i = 0; i < cfg_map_len(map); i++) {
        const char *k;
        yaml_node_t *v;
        cfg_map_at(c, map, i, &k, &v);
        if (strcmp(k, key) == 0) {
            *out = v;
            return 0;
        }
    }
    if (required)
        return cfg_error(c, map, d, "missing key '%s'", key);
    return 0;
}

static const char *scalar(yaml_node_t *n)
{
    return (const char *)n->data.scalar.value;
}

int cfg_string(cfg_doc *c, yaml_node_t *n, const char *key, const char **out, cl_diag *d)
{
    if (n->type != YAML_SCALAR_NODE)
        return cfg_error(c, n, d, "'%s' must be a scalar, got %s", key, type_name(n));
    *out = scalar(n);
    return 0;
}

/* Runs a units parser and turns its diag into a positioned one. */
#define CFG_UNIT(parse, c, n, key, out, d)                                              \
    do {                                                                                \
        const char *s_ = "";                                                                \
        int e_ = cfg_string(c, n, key, &s_, d);                                         \
        if (e_)                                                                         \
            return e_;                                                                  \
        cl_diag u_;                                                                     \
        if (parse(s_, key, out, &u_))                                                   \
            return cfg_error(c, n, d, "'%s': %s", key, u_.msg + strlen(key) + 2);       \
    } while (0)

int cfg_size(cfg_doc *c, yaml_node_t *n, const char *key, uint64_t *out, cl_diag *d)
{
    CFG_UNIT(units_parse_size, c, n, key, out, d);
    return 0;
}

/* A leading minus gets the range message rather than the parser's. */
static int reject_negative(cfg_doc *c, yaml_node_t *n, const char *key, const char *bound,
                           cl_diag *d)
{
    if (n->type == YAML_SCALAR_NODE && scalar(n)[0] == '-')
        return cfg_error(c, n, d, "'%s' must be %s, got '%s'", key, bound, scalar(n));
    return 0;
}

int cfg_time(cfg_doc *c, yaml_node_t *n, const char *key, double *out, cl_diag *d)
{
    double v;
    int err = reject_negative(c, n, key, ">= 0", d);
    if (err)
        return err;
    CFG_UNIT(units_parse_time, c, n, key, &v, d);
    if (v > CFG_TIME_MAX)
        return cfg_error(c, n, d, "'%s' must be at most 3600s: no link takes an hour over one "
                         "message, got '%s'", key, scalar(n));
    *out = v;
    return 0;
}

int cfg_bandwidth(cfg_doc *c, yaml_node_t *n, const char *key, double *out, cl_diag *d)
{
    double v;
    int err = reject_negative(c, n, key, "> 0", d);
    if (err)
        return err;
    CFG_UNIT(units_parse_bandwidth, c, n, key, &v, d);
    if (!(v > 0))
        return cfg_error(c, n, d, "'%s' must be > 0, got '%s'", key, scalar(n));
    if (v < CFG_BANDWIDTH_MIN || v > CFG_BANDWIDTH_MAX)
        return cfg_error(c, n, d, "'%s' must be in 1kB/s..1000TB/s: no link is slower than "
                         "8kbit/s or faster than a petabyte a second, got '%s'", key, scalar(n));
    *out = v;
    return 0;
}

int cfg_bandwidth_or_inf(cfg_doc *c, yaml_node_t *n, const char *key, double *out, cl_diag *d)
{
    if (n->type == YAML_SCALAR_NODE && strcmp(scalar(n), "inf") == 0) {
        *out = INFINITY;
        return 0;
    }
    return cfg_bandwidth(c, n, key, out, d);
}

int cfg_int(cfg_doc *c, yaml_node_t *n, const char *key, long min, long max, long *out,
            cl_diag *d)
{
    const char *s = "";
    int err = cfg_string(c, n, key, &s, d);
    if (err)
        return err;
    const char *digits = s + (*s == '-');
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*digits || strspn(digits, "0123456789") != strlen(digits) || errno)
        return cfg_error(c, n, d, "'%s' must be an integer, got '%s'", key, s);
    if (v < min || v > max)
        return cfg_error(c, n, d, "'%s' must be in %ld..%ld, got '%s'", key, min, max, s);
    *out = v;
    return 0;
}

int cfg_number(cfg_doc *c, yaml_node_t *n, const char *key, double *out, cl_diag *d)
{
    const char *s = "";
    int err = cfg_string(c, n, key, &s, d);
    if (err)
        return err;
    const char *digits = s + (*s == '-');
    size_t len = units_decimal_len(digits);
    errno = 0;
    double x = len ? strtod(s, NULL) : 0;
    if (!len || digits[len] || errno || !isfinite(x))
        return cfg_error(c, n, d, "'%s' must be a number, got '%s'", key, s);
    *out = x;
    return 0;
}

int cfg_known_keys(cfg_doc *c, yaml_node_t *map, const char *const *keys, const char *what,
                   cl_diag *d)
{
    for (size_t i = 0; i < cfg_map_len(map); i++) {
        const char *k;
        yaml_node_t *v;
        cfg_map_at(c, map, i, &k, &v);
        size_t j = 0;
        while (keys[j] && strcmp(keys[j], k) != 0)
            j++;
        if (keys[j])
            continue;
        char list[200] = "";
        for (j = 0; keys[j]; j++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", j ? ", " : "",
                     keys[j]);
        yaml_node_pair_t *p = map->data.mapping.pairs.start + i;
        return cfg_error(c, yaml_document_get_node(&c->doc, p->key), d,
                         "unknown key '%s' in %s (known: %s)", k, what, list);
    }
    return 0;
}
