/* net.c - tier meshes, dimension topologies and explicit link graphs. */
#include "sim/net.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commlab.h"
#include "core/config.h"
#include "core/reduce.h"

enum { NET_MESH, NET_DIMS, NET_GRAPH };
enum { DIM_SWITCH, DIM_RING, DIM_FULL };
static const char *const dim_names[] = {"Switch", "Ring", "FullyConnected"};

typedef struct net_dim {
    int type;          /* DIM_* */
    int n;             /* devices per group, npus_count[i] */
    int stride;        /* rank distance between coordinates: product of earlier n */
    int64_t groups;    /* ranks / n */
    int64_t per_group; /* links per group */
    int64_t base;      /* id of the dim's first link */
    int64_t swbase;    /* switch vertex of group 0, minus ranks */
    double alpha;      /* seconds per link */
    double bandwidth;  /* bytes per second per link */
} net_dim;

/* One BFS tree from src over all vertices. */
typedef struct route_tree {
    int src;       /* -1 while empty */
    double *alpha; /* per vertex: sum of alphas from src */
    double *bw;    /* per vertex: min bandwidth from src, +inf at src */
    int32_t *via;  /* per vertex: link << 1 | dir it was reached by, -1 at src */
    int32_t *hops; /* per vertex: links from src, -1 if unreached */
} route_tree;

struct sim_net {
    int kind;                    /* NET_* */
    int ranks, vertices;         /* devices; devices + switches */
    int64_t nlinks;              /* links */
    double alpha, bw;            /* mesh: the tier */
    int ndims;                   /* dims: how many */
    net_dim dim[SIM_NET_MAX_DIMS];
    sim_link *links;             /* graph: nlinks links, malloc'd */
    char **names;                /* graph: per vertex, malloc'd strings */
    int32_t *adj_start, *adj;    /* graph: CSR of link << 1 | dir leaving each vertex */
    int32_t *hash;               /* graph: open addressing over names, -1 empty */
    size_t hash_cap;             /* power of two */
    route_tree *trees;           /* graph: ntrees slots, direct-mapped by src */
    int ntrees;
    int32_t *queue;              /* graph: BFS queue, vertices entries */
    sim_link_dir *route;         /* scratch for sim_net_route */
    double gamma[REDUCE_NDTYPES]; /* seconds per byte reduced, per cl_dtype; 0: free */
    char desc[512];              /* sim_net_describe */
    machine *machine;            /* machine mesh: the piecewise cost, malloc'd */
};

/* ---- lifecycle ---- */

static sim_net *net_new(int kind, cl_diag *d)
{
    sim_net *n = calloc(1, sizeof *n);
    if (!n) {
        diag_set(d, CL_ENOMEM, "network: out of memory");
        return NULL;
    }
    n->kind = kind;
    return n;
}

void sim_net_destroy(sim_net *n)
{
    if (!n)
        return;
    if (n->names)
        for (int v = 0; v < n->vertices; v++)
            free(n->names[v]);
    for (int i = 0; n->trees && i < n->ntrees; i++)
        free(n->trees[i].alpha);
    free(n->names);
    free(n->links);
    free(n->adj_start);
    free(n->adj);
    free(n->hash);
    free(n->trees);
    free(n->queue);
    free(n->route);
    free(n->machine);
    free(n);
}

int sim_net_create_tier(sim_net **out, const cl_tier *tier, int nranks, cl_diag *d)
{
    *out = NULL;
    if (nranks < 1 || nranks > SIM_NET_MAX_RANKS)
        return diag_set(d, CL_EINVAL, "ranks must be in 1..%d, got %d", SIM_NET_MAX_RANKS,
                        nranks);
    sim_net *n = net_new(NET_MESH, d);
    if (!n)
        return CL_ENOMEM;
    n->route = malloc(sizeof *n->route);
    if (!n->route) {
        sim_net_destroy(n);
        return diag_set(d, CL_ENOMEM, "network: out of memory");
    }
    n->ranks = n->vertices = nranks;
    n->nlinks = (int64_t)nranks * (nranks - 1) / 2;
    n->alpha = tier->alpha;
    n->bw = tier->bandwidth;
    sim_net_set_gamma(n, tier_gamma(tier));
    snprintf(n->desc, sizeof n->desc, "tier %s, full mesh of %d ranks", tier->name, nranks);
    *out = n;
    return 0;
}

int sim_net_create_machine(sim_net **out, const machine *m, int nranks, cl_diag *d)
{
    cl_tier first = {.alpha = m->seg[0].alpha, .bandwidth = m->seg[0].bandwidth};
    int err = sim_net_create_tier(out, &first, nranks, d);
    if (err)
        return err;
    sim_net *n = *out;
    n->machine = malloc(sizeof *n->machine);
    if (!n->machine) {
        sim_net_destroy(n);
        *out = NULL;
        return diag_set(d, CL_ENOMEM, "network: out of memory");
    }
    *n->machine = *m;
    _Static_assert(REDUCE_NDTYPES == MACHINE_NDTYPES, "one reduce_bandwidth per cl_dtype");
    for (int t = 0; t < REDUCE_NDTYPES; t++)
        n->gamma[t] = m->reduce_bandwidth[t] > 0 ? 1 / m->reduce_bandwidth[t] : 0;
    snprintf(n->desc, sizeof n->desc,
             "machine %.200s (%.31s on %.100s, %zu segment%s%s), full mesh of %d ranks",
             *m->path ? m->path : "model", m->backend, m->host, m->nseg,
             m->nseg == 1 ? "" : "s", m->nduplex ? ", duplex" : "", nranks);
    return 0;
}

/* ---- shape ---- */

int sim_net_ranks(const sim_net *n)
{
    return n->ranks;
}

int sim_net_vertices(const sim_net *n)
{
    return n->vertices;
}

int64_t sim_net_links(const sim_net *n)
{
    return n->nlinks;
}

const char *sim_net_describe(const sim_net *n)
{
    return n->desc;
}

void sim_net_set_gamma(sim_net *n, double gamma)
{
    for (int t = 0; t < REDUCE_NDTYPES; t++)
        n->gamma[t] = gamma;
}

double sim_net_gamma(const sim_net *n, cl_dtype t)
{
    return (unsigned)t < REDUCE_NDTYPES ? n->gamma[t] : 0;
}

int sim_net_group(const sim_net *n)
{
    return n->ndims > 0 ? n->dim[0].n : 0;
}

/* Pair index k = hi*(hi-1)/2 + lo (lo < hi) back to lo, hi. */
static void pair_of(int64_t k, int64_t *lo, int64_t *hi)
{
    int64_t h = (int64_t)((1.0 + sqrt(1.0 + 8.0 * (double)k)) / 2.0);
    while (h * (h - 1) / 2 > k)
        h--;
    while ((h + 1) * h / 2 <= k)
        h++;
    *hi = h;
    *lo = k - h * (h - 1) / 2;
}

/* First rank of group g of dim t (coordinate 0 there). */
static int64_t group_rank0(const net_dim *t, int64_t g)
{
    return (g / t->stride) * t->stride * t->n + g % t->stride;
}

static int64_t group_of(const net_dim *t, int r)
{
    return (int64_t)(r / (t->stride * t->n)) * t->stride + r % t->stride;
}

int sim_net_link(const sim_net *n, int64_t id, sim_link *out)
{
    if (id < 0 || id >= n->nlinks)
        return CL_ERANGE;
    sim_link l = {0};
    int64_t lo, hi;
    if (n->kind == NET_GRAPH) {
        l = n->links[id];
    } else if (n->kind == NET_MESH) {
        pair_of(id, &lo, &hi);
        l = (sim_link){(int)lo, (int)hi, n->alpha, n->bw, false};
    } else {
        int i = 0;
        while (id >= n->dim[i].base + n->dim[i].groups * n->dim[i].per_group)
            i++;
        const net_dim *t = &n->dim[i];
        int64_t local = id - t->base, g = local / t->per_group, k = local % t->per_group;
        int64_t r0 = group_rank0(t, g);
        l.alpha = t->alpha;
        l.bandwidth = t->bandwidth;
        if (t->type == DIM_SWITCH) {
            l.a = (int)(r0 + k * t->stride);
            l.b = (int)(n->ranks + t->swbase + g);
        } else if (t->type == DIM_RING) {
            l.a = (int)(r0 + k * t->stride);
            l.b = (int)(r0 + ((k + 1) % t->n) * t->stride);
        } else {
            pair_of(k, &lo, &hi);
            l.a = (int)(r0 + lo * t->stride);
            l.b = (int)(r0 + hi * t->stride);
        }
    }
    *out = l;
    return 0;
}

char *sim_net_vertex_name(const sim_net *n, int v, char *buf, size_t len)
{
    if (n->kind == NET_GRAPH) {
        snprintf(buf, len, "%s", n->names[v]);
    } else if (n->kind == NET_MESH || v < n->ranks) {
        snprintf(buf, len, "%s%d", n->kind == NET_MESH ? "rank" : "npu", v);
    } else {
        int64_t s = v - n->ranks;
        int i = 0;
        while (n->dim[i].type != DIM_SWITCH || s >= n->dim[i].swbase + n->dim[i].groups)
            i++;
        snprintf(buf, len, "sw%d.%lld", i, (long long)(s - n->dim[i].swbase));
    }
    return buf;
}

/* ---- routes ---- */

static void dims_route(const sim_net *n, int src, int dst, double *alpha, double *bandwidth,
                       int *hops, sim_link_dir *out)
{
    double a = 0, bw = INFINITY;
    int h = 0, at = src; /* at: where the route is, dims before i already done */
    for (int i = 0; i < n->ndims; i++) {
        const net_dim *t = &n->dim[i];
        int cs = src / t->stride % t->n, cd = dst / t->stride % t->n;
        if (cs == cd)
            continue;
        int64_t first = out ? t->base + group_of(t, at) * t->per_group : 0; /* path: none */
        at += (cd - cs) * t->stride;
        bw = fmin(bw, t->bandwidth);
        if (t->type == DIM_SWITCH) {
            a += t->alpha;
            a += t->alpha;
            if (out) {
                out[h] = (sim_link_dir){first + cs, 0};
                out[h + 1] = (sim_link_dir){first + cd, 1};
            }
            h += 2;
        } else if (t->type == DIM_FULL) {
            int lo = cs < cd ? cs : cd, hi = cs < cd ? cd : cs;
            a += t->alpha;
            if (out)
                out[h] = (sim_link_dir){first + (int64_t)hi * (hi - 1) / 2 + lo, cs > cd};
            h++;
        } else {
            int fwd = (cd - cs + t->n) % t->n, steps = fwd <= t->n - fwd ? fwd : t->n - fwd;
            for (int s = 0, c = cs; s < steps; s++) {
                a += t->alpha;
                if (out && t->n == 2)
                    out[h] = (sim_link_dir){first, c};
                else if (out && fwd <= t->n - fwd)
                    out[h] = (sim_link_dir){first + c, 0};
                else if (out)
                    out[h] = (sim_link_dir){first + (c + t->n - 1) % t->n, 1};
                c = fwd <= t->n - fwd ? (c + 1) % t->n : (c + t->n - 1) % t->n;
                h++;
            }
        }
    }
    *alpha = a;
    *bandwidth = bw;
    *hops = h;
}

/* BFS from src into t.  Neighbours are visited in link id order, so the
 * first route found among equally short ones uses the lowest ids. */
static void bfs(sim_net *n, route_tree *t, int src)
{
    for (int v = 0; v < n->vertices; v++)
        t->hops[v] = -1;
    t->src = src;
    t->hops[src] = 0;
    t->alpha[src] = 0;
    t->bw[src] = INFINITY;
    t->via[src] = -1;
    int head = 0, tail = 0;
    n->queue[tail++] = src;
    while (head < tail) {
        int u = n->queue[head++];
        for (int32_t e = n->adj_start[u]; e < n->adj_start[u + 1]; e++) {
            int32_t ld = n->adj[e];
            const sim_link *l = &n->links[ld >> 1];
            int w = (ld & 1) ? l->a : l->b;
            if (t->hops[w] >= 0)
                continue;
            t->hops[w] = t->hops[u] + 1;
            t->alpha[w] = t->alpha[u] + l->alpha;
            t->bw[w] = fmin(t->bw[u], l->bandwidth);
            t->via[w] = ld;
            n->queue[tail++] = w;
        }
    }
}

static int tree_alloc(route_tree *t, int vertices)
{
    size_t v = (size_t)vertices;
    char *p = malloc(v * (2 * sizeof(double) + 2 * sizeof(int32_t)));
    if (!p)
        return CL_ENOMEM;
    t->alpha = (double *)p;
    t->bw = t->alpha + v;
    t->via = (int32_t *)(t->bw + v);
    t->hops = t->via + v;
    t->src = -1;
    return 0;
}

/* The tree of src: cached, or built in its slot.  Slot 0 is allocated at
 * load; if a later slot cannot be, slot 0 is reused, so this cannot fail. */
static const route_tree *tree_of(sim_net *n, int src)
{
    route_tree *t = &n->trees[src % n->ntrees];
    if (t->src == src)
        return t;
    if (!t->alpha && tree_alloc(t, n->vertices)) {
        t = &n->trees[0];
        if (t->src == src)
            return t;
    }
    bfs(n, t, src);
    return t;
}

void sim_net_path(sim_net *n, int src, int dst, double *alpha, double *bandwidth, int *hops)
{
    assert(src != dst && src >= 0 && dst >= 0 && src < n->ranks && dst < n->ranks);
    if (n->kind == NET_MESH) {
        *alpha = n->alpha;
        *bandwidth = n->bw;
        *hops = 1;
    } else if (n->kind == NET_DIMS) {
        dims_route(n, src, dst, alpha, bandwidth, hops, NULL);
    } else {
        const route_tree *t = tree_of(n, src);
        *alpha = t->alpha[dst];
        *bandwidth = t->bw[dst];
        *hops = t->hops[dst];
    }
}

void sim_net_cost(sim_net *n, int src, int dst, uint64_t bytes, double *alpha,
                  double *bandwidth, int *hops)
{
    if (!n->machine) {
        sim_net_path(n, src, dst, alpha, bandwidth, hops);
        return;
    }
    assert(src != dst && src >= 0 && dst >= 0 && src < n->ranks && dst < n->ranks);
    const machine_segment *s = machine_segment_of(n->machine, bytes);
    *alpha = s->alpha;
    *bandwidth = s->bandwidth;
    *hops = 1;
}

double sim_net_gap(const sim_net *n, uint64_t bytes, double bandwidth)
{
    double g;
    if (n->machine && machine_gap(n->machine, bytes, &g))
        return g;
    return (double)bytes / bandwidth;
}

bool sim_net_duplex(const sim_net *n, uint64_t bytes, double *travel)
{
    return n->machine && machine_duplex_time(n->machine, bytes, travel);
}

double sim_net_time(sim_net *n, int src, int dst, uint64_t bytes)
{
    double alpha, bw;
    int hops;
    sim_net_cost(n, src, dst, bytes, &alpha, &bw, &hops);
    return alpha + (double)bytes / bw;
}

int sim_net_route(sim_net *n, int src, int dst, const sim_link_dir **hops, size_t *nhops)
{
    assert(src != dst && src >= 0 && dst >= 0 && src < n->ranks && dst < n->ranks);
    double a, bw;
    int h;
    if (n->kind == NET_MESH) {
        int64_t lo = src < dst ? src : dst, hi = src < dst ? dst : src;
        n->route[0] = (sim_link_dir){hi * (hi - 1) / 2 + lo, src > dst};
        h = 1;
    } else if (n->kind == NET_DIMS) {
        dims_route(n, src, dst, &a, &bw, &h, n->route);
    } else {
        const route_tree *t = tree_of(n, src);
        h = t->hops[dst];
        for (int v = dst, i = h - 1; i >= 0; i--) {
            int32_t ld = t->via[v];
            const sim_link *l = &n->links[ld >> 1];
            n->route[i] = (sim_link_dir){ld >> 1, ld & 1};
            v = (ld & 1) ? l->b : l->a;
        }
    }
    *hops = n->route;
    *nhops = (size_t)h;
    return 0;
}

bool sim_net_flow_mesh(const sim_net *n, double *bw, double *alpha)
{
    if (n->machine || n->kind != NET_MESH)
        return false;
    *bw = n->bw;
    *alpha = n->alpha;
    return true;
}

bool sim_net_can_share(const sim_net *n)
{
    return !n->machine;
}

int64_t sim_net_flow_ids(const sim_net *n)
{
    return n->kind == NET_MESH ? 2 * (int64_t)n->ranks : 2 * n->nlinks;
}

int sim_net_flow_route(sim_net *n, int src, int dst, int64_t *ids, double *cap, int max,
                       double *alpha)
{
    assert(src != dst && src >= 0 && dst >= 0 && src < n->ranks && dst < n->ranks);
    if (n->machine)
        return CL_ENOSYS;
    if (n->kind == NET_MESH) {
        if (max < 2)
            return CL_ERANGE;
        ids[0] = 2 * (int64_t)src;
        ids[1] = 2 * (int64_t)dst + 1;
        cap[0] = cap[1] = n->bw;
        if (alpha)
            *alpha = n->alpha;
        return 2;
    }
    if (alpha) {
        double bw;
        int h;
        sim_net_path(n, src, dst, alpha, &bw, &h);
    }
    const sim_link_dir *hops;
    size_t h;
    sim_net_route(n, src, dst, &hops, &h);
    if (h > (size_t)max)
        return CL_ERANGE;
    for (size_t i = 0; i < h; i++) {
        sim_link l = {0}; /* a route's links exist: sim_net_link fills it */
        sim_net_link(n, hops[i].link, &l);
        ids[i] = 2 * hops[i].link + (l.half_duplex ? 0 : hops[i].dir);
        cap[i] = l.bandwidth;
    }
    return (int)h;
}

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
    size_t maxhops = 1;
    for (size_t i = 0; i < nd; i++) {
        net_dim *t = &n->dim[i];
        int64_t k = t->n;
        t->groups = ranks / k;
        t->per_group = t->type == DIM_SWITCH ? k : t->type == DIM_FULL ? k * (k - 1) / 2
                       : k == 2                ? 1
                       : k == 1                ? 0
                                               : k;
        t->base = links;
        links += t->groups * t->per_group;
        t->swbase = switches;
        if (t->type == DIM_SWITCH)
            switches += t->groups;
        maxhops += t->type == DIM_SWITCH ? 2 : t->type == DIM_FULL ? 1 : (size_t)k / 2;
    }
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
        tree_alloc(&n->trees[0], n->vertices))
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
    const route_tree *t = tree_of(n, 0);
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
    loader L = {c, d, tiers, net_new(topo ? NET_DIMS : NET_GRAPH, d), NULL, 0, 0};
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
