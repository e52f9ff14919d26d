/* tier.c - loading tiers and pricing messages on them. */
#include "core/tier.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commlab.h"
#include "core/config.h"

static int load_tier(cfg_doc *c, yaml_node_t *node, cl_tier *t, cl_diag *d)
{
    static const char *const keys[] = {"name", "alpha", "bandwidth", "reduce_bandwidth",
                                       "scope", NULL};
    yaml_node_t *v;
    const char *s;
    int err;
    if ((err = cfg_expect_map(c, node, "tiers[]", d)) ||
        (err = cfg_known_keys(c, node, keys, "a tier", d)))
        return err;
    if ((err = cfg_get(c, node, "name", true, &v, d)) || (err = cfg_string(c, v, "name", &s, d)))
        return err;
    if (!*s || strlen(s) >= TIER_NAME_MAX)
        return cfg_error(c, v, d, "'name' must be 1 to %d characters, got '%s'",
                         TIER_NAME_MAX - 1, s);
    snprintf(t->name, sizeof t->name, "%s", s);
    if ((err = cfg_get(c, node, "alpha", true, &v, d)) ||
        (err = cfg_time(c, v, "alpha", &t->alpha, d)))
        return err;
    if ((err = cfg_get(c, node, "bandwidth", true, &v, d)) ||
        (err = cfg_bandwidth(c, v, "bandwidth", &t->bandwidth, d)))
        return err;
    t->reduce_bandwidth = TIER_REDUCE_BANDWIDTH;
    if ((err = cfg_get(c, node, "reduce_bandwidth", false, &v, d)) ||
        (v && (err = cfg_bandwidth_or_inf(c, v, "reduce_bandwidth", &t->reduce_bandwidth, d))))
        return err;
    if ((err = cfg_get(c, node, "scope", false, &v, d)))
        return err;
    if (v) {
        if ((err = cfg_string(c, v, "scope", &s, d)))
            return err;
        if (strcmp(s, "intra-node") != 0 && strcmp(s, "inter-node") != 0)
            return cfg_error(c, v, d, "'scope' must be 'intra-node' or 'inter-node', got '%s'",
                             s);
        snprintf(t->scope, sizeof t->scope, "%s", s);
    }
    return 0;
}

static uint64_t hash_name(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    while (*s)
        h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
    return h;
}

/* The first tier of t[0..n) named like another before it, or n.  A hash
 * of at most half-full slots (linear probing): every pair would be
 * quadratic in the count. */
static size_t first_twin(const cl_tier *t, size_t n, int *twin_of)
{
    size_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    size_t *slot = malloc(cap * sizeof *slot);
    if (!slot)
        return SIZE_MAX;
    for (size_t i = 0; i < cap; i++)
        slot[i] = SIZE_MAX;
    size_t found = n;
    for (size_t i = 0; i < n && found == n; i++) {
        size_t k = hash_name(t[i].name) & (cap - 1);
        while (slot[k] != SIZE_MAX && strcmp(t[slot[k]].name, t[i].name) != 0)
            k = (k + 1) & (cap - 1);
        if (slot[k] != SIZE_MAX) {
            found = i;
            *twin_of = (int)slot[k];
        }
        slot[k] = i;
    }
    free(slot);
    return found;
}

static int load_doc(tier_set *s, cfg_doc *c, cl_diag *d)
{
    static const char *const keys[] = {"tiers", NULL};
    yaml_node_t *root, *list;
    int err;
    if ((err = cfg_root(c, &root, d)) || (err = cfg_known_keys(c, root, keys, "a tiers file", d)) ||
        (err = cfg_get(c, root, "tiers", true, &list, d)) ||
        (err = cfg_expect_seq(c, list, "tiers", d)))
        return err;
    size_t n = cfg_seq_len(list);
    if (n == 0 || n > TIER_MAX)
        return cfg_error(c, list, d, "'tiers' must list 1 to %d tiers, got %zu", TIER_MAX, n);
    cl_tier *t = calloc(n, sizeof *t);
    if (!t)
        return diag_set(d, CL_ENOMEM, "%s: out of memory", c->path);
    for (size_t i = 0; i < n && !err; i++)
        err = load_tier(c, cfg_seq_at(c, list, i), &t[i], d);
    int twin_of = 0;
    size_t twin = err ? n : first_twin(t, n, &twin_of);
    if (twin == SIZE_MAX)
        err = diag_set(d, CL_ENOMEM, "%s: out of memory", c->path);
    else if (twin < n)
        err = cfg_error(c, cfg_seq_at(c, list, twin), d,
                        "tier '%s' is defined twice (first as tiers[%d])", t[twin].name,
                        twin_of);
    if (err) {
        free(t);
        return err;
    }
    s->tiers = t;
    s->n = n;
    return 0;
}

int tier_set_load(tier_set *s, const char *path, cl_diag *d)
{
    cfg_doc c;
    s->tiers = NULL;
    s->n = 0;
    int err = cfg_doc_load(&c, path, d);
    if (err)
        return err;
    err = load_doc(s, &c, d);
    cfg_doc_release(&c);
    return err;
}

int tier_set_load_string(tier_set *s, const char *name, const char *text, cl_diag *d)
{
    cfg_doc c;
    s->tiers = NULL;
    s->n = 0;
    int err = cfg_doc_load_string(&c, name, text, d);
    if (err)
        return err;
    err = load_doc(s, &c, d);
    cfg_doc_release(&c);
    return err;
}

void tier_set_release(tier_set *s)
{
    free(s->tiers);
    s->tiers = NULL;
    s->n = 0;
}

const cl_tier *tier_set_find(const tier_set *s, const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->tiers[i].name, name) == 0)
            return &s->tiers[i];
    return NULL;
}

static void known_names(const tier_set *s, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = 0;
    for (size_t i = 0; i < s->n && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "",
                                 s->tiers[i].name);
}

int tier_set_select(tier_set *s, const char *list, cl_diag *d)
{
    char *copy = strdup(list);
    cl_tier *picked = calloc(s->n ? s->n : 1, sizeof *picked);
    int err = 0;
    size_t n = 0;
    if (!copy || !picked) {
        err = diag_set(d, CL_ENOMEM, "out of memory");
        goto out;
    }
    char *save = NULL;
    for (char *name = strtok_r(copy, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
        const cl_tier *t = tier_set_find(s, name);
        if (!t) {
            char known[256];
            known_names(s, known, sizeof known);
            err = diag_set(d, CL_ENOENT, "unknown tier '%s' (known: %s)", name, known);
            goto out;
        }
        bool dup = false;
        for (size_t j = 0; j < n; j++)
            dup |= strcmp(picked[j].name, name) == 0;
        if (!dup && n < s->n)
            picked[n++] = *t;
    }
    if (n == 0) {
        err = diag_set(d, CL_EINVAL, "empty tier list '%s'", list);
        goto out;
    }
    free(s->tiers);
    s->tiers = picked;
    s->n = n;
    picked = NULL;
out:
    free(copy);
    free(picked);
    return err;
}

double tier_time(const cl_tier *t, uint64_t bytes)
{
    return t->alpha + (double)bytes / t->bandwidth;
}

double tier_crossover(const cl_tier *t)
{
    return t->alpha * t->bandwidth;
}

double tier_gamma(const cl_tier *t)
{
    return t->reduce_bandwidth > 0 ? 1.0 / t->reduce_bandwidth : 0;
}
