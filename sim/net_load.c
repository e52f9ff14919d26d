/* net_load.c - reading a topology file (sim/net.h): the dimension form
 * and the explicit form of hosts, switches and links, checked, into a
 * sim_net of net_impl.h. */
#include "sim/net.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commlab.h"
#include "core/config.h"
#include "sim/net_impl.h"

static const char *const dim_names[] = {"Switch", "Ring", "FullyConnected"};

/* ---- loading: shared helpers ---- */

typedef struct loader {
    cfg_doc *c;
    cl_diag *d;
    const tier_set *tiers; /* may be NULL */
    sim_net *n;
    yaml_node_t **devnode; /* per device: where it was defined */
    size_t vcap, lcap;     /* capacities of names/devnode and links */
} loader;

static int oom(loader *L)
{
    return diag_set(L->d, CL_ENOMEM, "%s: out of memory", L->c->path);
}

static const cl_tier *find_tier(loader *L, yaml_node_t *v, int *err)
{
    const char *s;
    if ((*err = cfg_string(L->c, v, "tier", &s, L->d)))
        return NULL;
    const cl_tier *t = L->tiers ? tier_set_find(L->tiers, s) : NULL;
    if (t)
        return t;
    char known[200] = "";
    for (size_t i = 0; L->tiers && i < L->tiers->n; i++)
        snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "",
                 L->tiers->tiers[i].name);
    *err = cfg_error(L->c, v, L->d, "unknown tier '%s' (known: %s)", s,
                     *known ? known : "none, no tiers file");
    return NULL;
}

/* ---- loading: the dimension form ---- */

static int seq_key(loader *L, yaml_node_t *root, const char *key, bool required,
                   size_t want, yaml_node_t **out)
{
    int err;
    if ((err = cfg_get(L->c, root, key, required, out, L->d)) || !*out)
        return err;
    if ((err = cfg_expect_seq(L->c, *out, key, L->d)))
        return err;
    size_t len = cfg_seq_len(*out);
    if (len < 1 || len > SIM_NET_MAX_DIMS)
        return cfg_error(L->c, *out, L->d, "'%s' must have 1 to %d entries, got %zu", key,
                         SIM_NET_MAX_DIMS, len);
    if (want && len != want)
        return cfg_error(L->c, *out, L->d, "'%s' has %zu entries but 'npus_count' has %zu", key,
                         len, want);
    return 0;
}

/* The links and switches of n's dimensions (read, n->ranks set): each
 * dimension's groups, its first link and switch, their totals into *links
 * and *switches; returns the most links a route can cross.  Cannot fail. */
static size_t dims_layout(sim_net *n, int64_t *links, int64_t *switches)
{
    size_t maxhops = 1;
    for (int i = 0; i < n->ndims; i++) {
        net_dim *t = &n->dim[i];
        int64_t k = t->n;
        t->groups = n->ranks / k;
        t->per_group = t->type == DIM_SWITCH ? k : t->type == DIM_FULL ? k * (k - 1) / 2
                       : k == 2                ? 1
                       : k == 1                ? 0
                                               : k;
        t->base = *links;
        *links += t->groups * t->per_group;
        t->swbase = *switches;
        if (t->type == DIM_SWITCH)
            *switches += t->groups;
        maxhops += t->type == DIM_SWITCH ? 2 : t->type == DIM_FULL ? 1 : (size_t)k / 2;
    }
    return maxhops;
}

static int load_dims(loader *L, yaml_node_t *root)
{
    static const char *const keys[] = {"topology", "npus_count", "bandwidth", "latency", "tier",
                                       "reduce_bandwidth", NULL};
    sim_net *n = L->n;
    yaml_node_t *npus, *topo, *bw, *lat, *tier;
    int err;
    if ((err = cfg_known_keys(L->c, root, keys, "a dimension topology", L->d)) ||
        (err = seq_key(L, root, "npus_count", true, 0, &npus)))
        return err;
    size_t nd = cfg_seq_len(npus);
    if ((err = seq_key(L, root, "topology", true, nd, &topo)) ||
        (err = seq_key(L, root, "tier", false, nd, &tier)) ||
        (err = seq_key(L, root, "bandwidth", !tier, nd, &bw)) ||
        (err = seq_key(L, root, "latency", !tier, nd, &lat)))
        return err;
    int64_t ranks = 1, links = 0, switches = 0;
    char shape[96] = "";
    for (size_t i = 0; i < nd; i++) {
        net_dim *t = &n->dim[i];
        const char *s;
        long cnt;
        yaml_node_t *v = cfg_seq_at(L->c, topo, i);
        if ((err = cfg_string(L->c, v, "topology", &s, L->d)))
            return err;
        for (t->type = 0; t->type < 3 && strcmp(s, dim_names[t->type]) != 0; t->type++)
            ;
        if (t->type == 3)
            return cfg_error(L->c, v, L->d,
                             "unknown 'topology' '%s' (known: Switch, Ring, FullyConnected)", s);
        if ((err = cfg_int(L->c, cfg_seq_at(L->c, npus, i), "npus_count", 1, SIM_NET_MAX_RANKS,
                           &cnt, L->d)))
            return err;
        if (tier) {
            const cl_tier *tt = find_tier(L, cfg_seq_at(L->c, tier, i), &err);
            if (!tt)
                return err;
            t->alpha = tt->alpha;
            t->bandwidth = tt->bandwidth;
        }
        if ((bw && (err = cfg_bandwidth(L->c, cfg_seq_at(L->c, bw, i), "bandwidth",
                                        &t->bandwidth, L->d))) ||
            (lat && (err = cfg_time(L->c, cfg_seq_at(L->c, lat, i), "latency", &t->alpha, L->d))))
            return err;
        if (ranks * cnt > SIM_NET_MAX_RANKS)
            return cfg_error(L->c, npus, L->d, "'npus_count' makes more than %d devices",
                             SIM_NET_MAX_RANKS);
        t->n = (int)cnt;
        t->stride = (int)ranks;
        ranks *= cnt;
        snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%s %d", i ? " x " : "",
                 s, t->n);
    }
    n->ranks = (int)ranks;
    n->ndims = (int)nd;
    size_t maxhops = dims_layout(n, &links, &switches);
    if (ranks + switches > SIM_NET_MAX_RANKS)
        return cfg_error(L->c, npus, L->d, "'npus_count' makes more than %d devices and switches",
                         SIM_NET_MAX_RANKS);
    n->vertices = (int)(ranks + switches);
    n->nlinks = links;
    if (!(n->route = malloc(maxhops * sizeof *n->route)))
        return oom(L);
    snprintf(n->desc, sizeof n->desc, "topology %s: %d devices, %lld switch%s, %lld links (%s)",
             L->c->path, n->ranks, (long long)switches, switches == 1 ? "" : "es",
             (long long)links, shape);
    return 0;
}

/* ---- loading: the explicit form ---- */

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    while (*s)
        h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
    return h;
}

/* The slot of h (cap a power of two, at most half full) holding name s,
 * or the empty slot where it would go.  Linear probing. */
static size_t hash_slot(const sim_net *n, const int32_t *h, size_t cap, const char *s)
{
    size_t i = hash_str(s) & (cap - 1);
    while (h[i] >= 0 && strcmp(n->names[h[i]], s) != 0)
        i = (i + 1) & (cap - 1);
    return i;
}

/* Vertex named s, or -1. */
static int find_vertex(const sim_net *n, const char *s)
{
    return n->hash ? n->hash[hash_slot(n, n->hash, n->hash_cap, s)] : -1;
}

static int hash_grow(sim_net *n)
{
    size_t cap = n->hash_cap ? n->hash_cap * 2 : 64;
    int32_t *h = malloc(cap * sizeof *h);
    if (!h)
        return CL_ENOMEM;
    memset(h, 0xff, cap * sizeof *h);
    for (int v = 0; v < n->vertices; v++)
        h[hash_slot(n, h, cap, n->names[v])] = v;
    free(n->hash);
    n->hash = h;
    n->hash_cap = cap;
    return 0;
}

static bool all_digits(const char *s)
{
    if (!*s)
        return false;
    while (*s >= '0' && *s <= '9')
        s++;
    return !*s;
}

/* Adds vertex name (devices before any switch); where is its definition. */
static int add_vertex(loader *L, const char *name, yaml_node_t *where, const char *key)
{
    sim_net *n = L->n;
    if (!*name || all_digits(name))
        return cfg_error(L->c, where, L->d, "'%s' must be a name, not a number, got '%s'", key,
                         name);
    if (find_vertex(n, name) >= 0)
        return cfg_error(L->c, where, L->d, "'%s': name '%s' is defined twice", key, name);
    if (n->vertices >= SIM_NET_MAX_NAMED)
        return cfg_error(L->c, where, L->d, "more than %d devices and switches",
                         SIM_NET_MAX_NAMED);
    if ((size_t)n->vertices == L->vcap) {
        size_t cap = L->vcap ? 2 * L->vcap : 64;
        char **nm = realloc(n->names, cap * sizeof *nm);
        if (nm)
            n->names = nm;
        yaml_node_t **dn = nm ? realloc(L->devnode, cap * sizeof *dn) : NULL;
        if (!dn)
            return oom(L);
        L->devnode = dn;
        L->vcap = cap;
    }
    if ((size_t)(n->vertices + 1) * 2 > n->hash_cap && hash_grow(n))
        return oom(L);
    if (!(n->names[n->vertices] = strdup(name)))
        return oom(L);
    L->devnode[n->vertices] = where;
    n->hash[hash_slot(n, n->hash, n->hash_cap, name)] = n->vertices;
    n->vertices++;
    return 0;
}

/* A device or switch named by key in map m (a name or a rank number). */
static int endpoint(loader *L, yaml_node_t *m, const char *key, int *v)
{
    yaml_node_t *x;
    const char *s;
    int err;
    if ((err = cfg_get(L->c, m, key, true, &x, L->d)) ||
        (err = cfg_string(L->c, x, key, &s, L->d)))
        return err;
    if (all_digits(s)) {
        long r = strlen(s) < 10 ? atol(s) : -1;
        if (r < 0 || r >= L->n->ranks)
            return cfg_error(L->c, x, L->d, "'%s': no rank %s (the topology has %d devices)", key,
                             s, L->n->ranks);
        *v = (int)r;
        return 0;
    }
    if ((*v = find_vertex(L->n, s)) < 0)
        return cfg_error(L->c, x, L->d, "'%s': unknown device or switch '%s'", key, s);
    return 0;
}

/* A link spec in map m: tier and/or alpha+bandwidth, lanes, duplex. */
static int link_spec(loader *L, yaml_node_t *m, sim_link *l)
{
    yaml_node_t *t, *a, *b, *lanes, *dup;
    int err;
    if ((err = cfg_get(L->c, m, "tier", false, &t, L->d)) ||
        (err = cfg_get(L->c, m, "alpha", false, &a, L->d)) ||
        (err = cfg_get(L->c, m, "bandwidth", false, &b, L->d)) ||
        (err = cfg_get(L->c, m, "lanes", false, &lanes, L->d)) ||
        (err = cfg_get(L->c, m, "duplex", false, &dup, L->d)))
        return err;
    if (!t && (!a || !b))
        return cfg_error(L->c, m, L->d, "missing key '%s' (a link needs 'tier' or 'alpha' and "
                         "'bandwidth')", a ? "bandwidth" : b ? "alpha" : "tier");
    if (t) {
        const cl_tier *tt = find_tier(L, t, &err);
        if (!tt)
            return err;
        l->alpha = tt->alpha;
        l->bandwidth = tt->bandwidth;
    }
    long k = 1;
    const char *s;
    if ((a && (err = cfg_time(L->c, a, "alpha", &l->alpha, L->d))) ||
        (b && (err = cfg_bandwidth(L->c, b, "bandwidth", &l->bandwidth, L->d))) ||
        (lanes && (err = cfg_int(L->c, lanes, "lanes", 1, 65536, &k, L->d))) ||
        (dup && (err = cfg_string(L->c, dup, "duplex", &s, L->d))))
        return err;
    l->bandwidth *= (double)k;
    l->half_duplex = dup && strcmp(s, "half") == 0;
    if (dup && !l->half_duplex && strcmp(s, "full") != 0)
        return cfg_error(L->c, dup, L->d, "'duplex' must be 'full' or 'half', got '%s'", s);
    return 0;
}

static int add_link(loader *L, const sim_link *l, yaml_node_t *where)
{
    sim_net *n = L->n;
    if (l->a == l->b)
        return cfg_error(L->c, where, L->d, "link joins '%s' to itself", n->names[l->a]);
    if (n->nlinks >= (1 << 30))
        return cfg_error(L->c, where, L->d, "more than %d links", 1 << 30);
    if ((size_t)n->nlinks == L->lcap) {
        size_t cap = L->lcap ? 2 * L->lcap : 64;
        sim_link *p = realloc(n->links, cap * sizeof *p);
        if (!p)
            return oom(L);
        n->links = p;
        L->lcap = cap;
    }
    n->links[n->nlinks++] = *l;
    return 0;
}

/* `devices:` of the top level (host NULL) or of a host: a count or names.
 * With add false only counts them into *count. */
static int host_devices(loader *L, yaml_node_t *v, const char *host, bool add, long *count)
{
    char name[256];
    int err;
    if (v->type == YAML_SEQUENCE_NODE) {
        *count = (long)cfg_seq_len(v);
        for (long i = 0; add && i < *count; i++) {
            yaml_node_t *x = cfg_seq_at(L->c, v, (size_t)i);
            const char *s;
            if ((err = cfg_string(L->c, x, "devices", &s, L->d)))
                return err;
            snprintf(name, sizeof name, "%s%s%s", host ? host : "", host ? "." : "", s);
            if ((err = add_vertex(L, name, x, "devices")))
                return err;
        }
        return 0;
    }
    if ((err = cfg_int(L->c, v, "devices", 1, SIM_NET_MAX_NAMED, count, L->d)))
        return err;
    for (long i = 0; add && i < *count; i++) {
        snprintf(name, sizeof name, "%s%sgpu%ld", host ? host : "", host ? "." : "", i);
        if ((err = add_vertex(L, name, v, "devices")))
            return err;
    }
    return 0;
}

/* Pass over hosts: attach (false) adds their devices, attach (true) their
 * switches and attachment links. */
static int load_hosts(loader *L, yaml_node_t *hosts, bool attach)
{
    static const char *const keys[] = {"name",  "devices", "switch", "tier", "alpha",
                                       "bandwidth", "lanes", "duplex", NULL};
    int err, rank = 0;
    for (size_t h = 0; h < cfg_seq_len(hosts); h++) {
        yaml_node_t *m = cfg_seq_at(L->c, hosts, h), *nm, *dv, *sw;
        const char *host, *swname;
        long count;
        if ((err = cfg_expect_map(L->c, m, "hosts[]", L->d)) ||
            (err = cfg_known_keys(L->c, m, keys, "a host", L->d)) ||
            (err = cfg_get(L->c, m, "name", true, &nm, L->d)) ||
            (err = cfg_string(L->c, nm, "name", &host, L->d)) ||
            (err = cfg_get(L->c, m, "devices", true, &dv, L->d)) ||
            (err = host_devices(L, dv, host, !attach, &count)) ||
            (err = cfg_get(L->c, m, "switch", false, &sw, L->d)))
            return err;
        if (!attach || !sw) {
            rank += (int)count;
            continue;
        }
        sim_link l = {0};
        if ((err = cfg_string(L->c, sw, "switch", &swname, L->d)) || (err = link_spec(L, m, &l)))
            return err;
        l.b = find_vertex(L->n, swname);
        if (l.b < 0 && (err = add_vertex(L, swname, sw, "switch")))
            return err;
        if (l.b < 0)
            l.b = L->n->vertices - 1;
        else if (l.b < L->n->ranks)
            return cfg_error(L->c, sw, L->d, "'switch': '%s' is a device", swname);
        for (long i = 0; i < count; i++, rank++) {
            l.a = rank;
            if ((err = add_link(L, &l, m)))
                return err;
        }
    }
    return 0;
}

static int load_graph(loader *L, yaml_node_t *root)
{
    static const char *const keys[] = {"hosts", "devices", "switches", "links",
                                       "reduce_bandwidth", NULL};
    static const char *const link_keys[] = {"a",     "b",      "tier", "alpha", "bandwidth",
                                            "lanes", "duplex", NULL};
    sim_net *n = L->n;
    yaml_node_t *hosts, *devs, *sws, *links;
    long count;
    int err;
    if ((err = cfg_known_keys(L->c, root, keys, "a topology", L->d)) ||
        (err = cfg_get(L->c, root, "hosts", false, &hosts, L->d)) ||
        (err = cfg_get(L->c, root, "devices", !hosts, &devs, L->d)) ||
        (err = cfg_get(L->c, root, "switches", false, &sws, L->d)) ||
        (err = cfg_get(L->c, root, "links", false, &links, L->d)))
        return err;
    if (hosts && devs)
        return cfg_error(L->c, devs, L->d, "give 'devices' or 'hosts', not both");
    if ((hosts && ((err = cfg_expect_seq(L->c, hosts, "hosts", L->d)) ||
                   (err = load_hosts(L, hosts, false)))) ||
        (devs && (err = host_devices(L, devs, NULL, true, &count))) ||
        (sws && (err = cfg_expect_seq(L->c, sws, "switches", L->d))) ||
        (links && (err = cfg_expect_seq(L->c, links, "links", L->d))))
        return err;
    n->ranks = n->vertices;
    if (n->ranks == 0)
        return cfg_error(L->c, hosts ? hosts : devs, L->d, "the topology has no devices");
    for (size_t i = 0; sws && i < cfg_seq_len(sws); i++) {
        yaml_node_t *x = cfg_seq_at(L->c, sws, i);
        const char *s;
        if ((err = cfg_string(L->c, x, "switches", &s, L->d)) ||
            (err = add_vertex(L, s, x, "switches")))
            return err;
    }
    if (hosts && (err = load_hosts(L, hosts, true)))
        return err;
    for (size_t i = 0; links && i < cfg_seq_len(links); i++) {
        yaml_node_t *m = cfg_seq_at(L->c, links, i);
        sim_link l = {0};
        if ((err = cfg_expect_map(L->c, m, "links[]", L->d)) ||
            (err = cfg_known_keys(L->c, m, link_keys, "a link", L->d)) || (err = endpoint(L, m, "a", &l.a)) ||
            (err = endpoint(L, m, "b", &l.b)) || (err = link_spec(L, m, &l)) ||
            (err = add_link(L, &l, m)))
            return err;
    }
    return 0;
}

/* Adjacency in link id order, the route cache and the connectivity check. */
static int finish_graph(loader *L)
{
    sim_net *n = L->n;
    size_t v = (size_t)n->vertices, per_tree = v * (2 * sizeof(double) + 2 * sizeof(int32_t));
    size_t nt = SIM_NET_CACHE_BYTES / per_tree;
    n->ntrees = nt < 1 ? 1 : nt > (size_t)n->ranks ? n->ranks : (int)nt;
    n->adj_start = calloc(v + 1, sizeof *n->adj_start);
    n->adj = malloc((size_t)(2 * n->nlinks + 1) * sizeof *n->adj);
    n->queue = malloc(v * sizeof *n->queue);
    n->route = malloc(v * sizeof *n->route);
    n->trees = calloc((size_t)n->ntrees, sizeof *n->trees);
    if (!n->adj_start || !n->adj || !n->queue || !n->route || !n->trees ||
        net__tree_alloc(&n->trees[0], n->vertices))
        return oom(L);
    for (int i = 1; i < n->ntrees; i++)
        n->trees[i].src = -1;
    for (int64_t l = 0; l < n->nlinks; l++) {
        n->adj_start[n->links[l].a + 1]++;
        n->adj_start[n->links[l].b + 1]++;
    }
    for (size_t i = 0; i < v; i++)
        n->adj_start[i + 1] += n->adj_start[i];
    memset(n->queue, 0, v * sizeof *n->queue); /* fill cursors until the first BFS */
    for (int64_t l = 0; l < n->nlinks; l++) {
        const sim_link *k = &n->links[l];
        n->adj[n->adj_start[k->a] + n->queue[k->a]++] = (int32_t)(l << 1);
        n->adj[n->adj_start[k->b] + n->queue[k->b]++] = (int32_t)(l << 1 | 1);
    }
    const route_tree *t = net__tree_of(n, 0);
    for (int r = 1; r < n->ranks; r++)
        if (t->hops[r] < 0)
            return cfg_error(L->c, L->devnode[r], L->d,
                             "devices '%s' and '%s' are not connected: no route between them",
                             n->names[0], n->names[r]);
    int switches = n->vertices - n->ranks;
    snprintf(n->desc, sizeof n->desc, "topology %s: %d devices, %d switch%s, %lld link%s",
             L->c->path, n->ranks, switches, switches == 1 ? "" : "es", (long long)n->nlinks,
             n->nlinks == 1 ? "" : "s");
    return 0;
}

static int load_doc(sim_net **out, cfg_doc *c, const tier_set *tiers, cl_diag *d)
{
    yaml_node_t *root, *topo;
    int err;
    if ((err = cfg_root(c, &root, d)) || (err = cfg_get(c, root, "topology", false, &topo, d)))
        return err;
    loader L = {c, d, tiers, net__new(topo ? NET_DIMS : NET_GRAPH, d), NULL, 0, 0};
    if (!L.n)
        return CL_ENOMEM;
    if (topo)
        err = load_dims(&L, root);
    else if (!(err = load_graph(&L, root)))
        err = finish_graph(&L);
    free(L.devnode);
    yaml_node_t *rb = NULL;
    double rbw = TIER_REDUCE_BANDWIDTH;
    if (!err && !(err = cfg_get(c, root, "reduce_bandwidth", false, &rb, d)) && rb)
        err = cfg_bandwidth_or_inf(c, rb, "reduce_bandwidth", &rbw, d);
    if (!err)
        sim_net_set_gamma(L.n, tier_gamma(&(cl_tier){.reduce_bandwidth = rbw}));
    if (err) {
        sim_net_destroy(L.n);
        return err;
    }
    *out = L.n;
    return 0;
}

/* text NULL: read the file name. */
static int load_any(sim_net **out, const char *name, const char *text, const tier_set *tiers,
                    cl_diag *d)
{
    cfg_doc c;
    *out = NULL;
    int err = text ? cfg_doc_load_string(&c, name, text, d) : cfg_doc_load(&c, name, d);
    if (err)
        return err;
    err = load_doc(out, &c, tiers, d);
    cfg_doc_release(&c);
    return err;
}

int sim_net_load(sim_net **out, const char *path, const tier_set *tiers, cl_diag *d)
{
    return load_any(out, path, NULL, tiers, d);
}

int sim_net_load_string(sim_net **out, const char *name, const char *text,
                        const tier_set *tiers, cl_diag *d)
{
    return load_any(out, name, text, tiers, d);
}
