/*
 * config.h - reading YAML configs with positions for every error.
 *
 * A cfg_doc is a whole YAML file loaded as a libyaml document; helpers look
 * keys up and convert scalars through core/units, and every error they
 * report names file:line:column, the key and the bad value:
 *
 *   configs/x.yaml:12:7: 'bandwidth' must be > 0, got '-3GB/s'
 *
 * Nodes are plain yaml_node_t pointers owned by the document; they live
 * until cfg_doc_release().
 *
 * A file is read only when it is a regular file of at most CFG_MAX_BYTES,
 * and a document is kept only when it is strict: one YAML document, lists
 * and mappings nested at most CFG_MAX_DEPTH deep, no aliases, every key a
 * plain name given once.  These bounds keep a small hostile file from
 * costing minutes or gigabytes, and a typo from being silently ignored.
 */
#ifndef CL_CONFIG_H
#define CL_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <yaml.h>

#include "core/diag.h"

#define CFG_MAX_BYTES (16u << 20) /* the largest config file read */
#define CFG_MAX_DEPTH 32           /* the deepest nesting of lists and mappings */

typedef struct cfg_doc {
    yaml_document_t doc; /* the parsed document */
    char path[256];      /* file name as given, for messages */
    bool loaded;         /* doc must be deleted */
} cfg_doc;

/* Loads and parses path.  On error (CL_ENOENT, CL_EIO, CL_ERANGE,
 * CL_EPARSE, CL_ECONFIG, CL_ENOMEM) d says what and where, and nothing
 * needs releasing. */
int cfg_doc_load(cfg_doc *c, const char *path, cl_diag *d);
/* Parses YAML text held in memory; name is used in messages. */
int cfg_doc_load_string(cfg_doc *c, const char *name, const char *text, cl_diag *d);
void cfg_doc_release(cfg_doc *c);

/* The root node; CL_ECONFIG unless it is a mapping. */
int cfg_root(cfg_doc *c, yaml_node_t **out, cl_diag *d);

/* Looks key up in mapping node map.  Missing and required: CL_ECONFIG
 * naming the mapping's position; missing and optional: 0 with *out NULL. */
int cfg_get(cfg_doc *c, yaml_node_t *map, const char *key, bool required, yaml_node_t **out,
            cl_diag *d);

/* Every key of mapping map is one of keys (NULL-terminated); else
 * CL_ECONFIG at the unknown key, naming what the mapping is ("a tier") and
 * the keys it takes. */
int cfg_known_keys(cfg_doc *c, yaml_node_t *map, const char *const *keys, const char *what,
                   cl_diag *d);

/* Type checks: CL_ECONFIG with position when node is not of that type. */
int cfg_expect_map(cfg_doc *c, yaml_node_t *n, const char *key, cl_diag *d);
int cfg_expect_seq(cfg_doc *c, yaml_node_t *n, const char *key, cl_diag *d);

/* Scalar conversions of a key's value (required).  `key` is the name the
 * message quotes.  *out unchanged on error. */
int cfg_string(cfg_doc *c, yaml_node_t *n, const char *key, const char **out, cl_diag *d);
int cfg_size(cfg_doc *c, yaml_node_t *n, const char *key, uint64_t *out, cl_diag *d);
int cfg_int(cfg_doc *c, yaml_node_t *n, const char *key, long min, long max, long *out,
            cl_diag *d);
/* A plain decimal number ("0.998", "-3.5", "1e-3"): no hex, inf or nan. */
int cfg_number(cfg_doc *c, yaml_node_t *n, const char *key, double *out, cl_diag *d);
/* Every time and bandwidth a config holds is a link's (a tier, a topology
 * link, a machine file's segments, gaps and probes), and values no link can
 * have are refused, so that a slip of the exponent is an error rather than a
 * model that prints 0 s or a 1e38 % error: times in 0..CFG_TIME_MAX,
 * bandwidths in CFG_BANDWIDTH_MIN..CFG_BANDWIDTH_MAX. */
#define CFG_TIME_MAX 3600.0     /* seconds: no link takes an hour over one message */
#define CFG_BANDWIDTH_MIN 1e3   /* bytes per second: 8 kbit/s, --netlab's floor */
#define CFG_BANDWIDTH_MAX 1e15  /* bytes per second: a petabyte a second */
int cfg_time(cfg_doc *c, yaml_node_t *n, const char *key, double *out, cl_diag *d);
int cfg_bandwidth(cfg_doc *c, yaml_node_t *n, const char *key, double *out, cl_diag *d);
/* A bandwidth, or "inf" (INFINITY): a reduce_bandwidth, where inf makes
 * reducing free. */
int cfg_bandwidth_or_inf(cfg_doc *c, yaml_node_t *n, const char *key, double *out, cl_diag *d);

/* Formats "file:line:col: " + message for node n (1-based positions). */
int cfg_error(cfg_doc *c, yaml_node_t *n, cl_diag *d, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Sequence and mapping iteration. */
size_t cfg_seq_len(yaml_node_t *seq);
yaml_node_t *cfg_seq_at(cfg_doc *c, yaml_node_t *seq, size_t i);
size_t cfg_map_len(yaml_node_t *map);
/* i-th pair of map: key text and value node. */
void cfg_map_at(cfg_doc *c, yaml_node_t *map, size_t i, const char **key, yaml_node_t **val);

#endif
