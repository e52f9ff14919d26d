/* config.c - libyaml documents with positioned errors. */
#include "core/config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commlab.h"
#include "core/units.h"

static int load(cfg_doc *c, yaml_parser_t *p, cl_diag *d)
{
    if (!yaml_parser_load(p, &c->doc)) {
        int line = (int)p->problem_mark.line + 1, col = (int)p->problem_mark.column + 1;
        int err = diag_set(d, CL_EPARSE, "%s:%d:%d: YAML syntax error: %s%s%s", c->path, line,
                           col, p->problem ? p->problem : "unknown problem",
                           p->context ? " " : "", p->context ? p->context : "");
        yaml_parser_delete(p);
        return err;
    }
    yaml_parser_delete(p);
    c->loaded = true;
    if (!yaml_document_get_root_node(&c->doc)) {
        cfg_doc_release(c);
        return diag_set(d, CL_ECONFIG, "%s:1:1: the file is empty", c->path);
    }
    return 0;
}

int cfg_doc_load(cfg_doc *c, const char *path, cl_diag *d)
{
    memset(c, 0, sizeof *c);
    snprintf(c->path, sizeof c->path, "%s", path);
    FILE *f = fopen(path, "rb");
    if (!f)
        return diag_set(d, CL_EIO, "cannot open config '%s': %s", path, strerror(errno));
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) {
        fclose(f);
        return diag_set(d, CL_ENOMEM, "cannot read config '%s': out of memory", path);
    }
    yaml_parser_set_input_file(&p, f);
    int err = load(c, &p, d);
    fclose(f);
    return err;
}

int cfg_doc_load_string(cfg_doc *c, const char *name, const char *text, cl_diag *d)
{
    memset(c, 0, sizeof *c);
    snprintf(c->path, sizeof c->path, "%s", name);
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        return diag_set(d, CL_ENOMEM, "cannot read config '%s': out of memory", name);
    yaml_parser_set_input_string(&p, (const unsigned char *)text, strlen(text));
    return load(c, &p, d);
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
    *out = v;
    return 0;
}

int cfg_int(cfg_doc *c, yaml_node_t *n, const char *key, long min, long max, long *out,
            cl_diag *d)
{
    const char *s = "";
    int err = cfg_string(c, n, key, &s, d);
    if (err)
        return err;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno)
        return cfg_error(c, n, d, "'%s' must be an integer, got '%s'", key, s);
    if (v < min || v > max)
        return cfg_error(c, n, d, "'%s' must be in %ld..%ld, got '%s'", key, min, max, s);
    *out = v;
    return 0;
}
