/* net.c - the network model: tier meshes, dimension topologies and explicit
 * link graphs, their shape and routes (net_load.c builds them from files). */
#include "sim/net.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "commlab.h"
#include "sim/net_impl.h"

/* ---- lifecycle ---- */

sim_net *net__new(int kind, cl_diag *d)
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
    sim_net *n = net__new(NET_MESH, d);
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

int net__tree_alloc(route_tree *t, int vertices)
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
const route_tree *net__tree_of(sim_net *n, int src)
{
    route_tree *t = &n->trees[src % n->ntrees];
    if (t->src == src)
        return t;
    if (!t->alpha && net__tree_alloc(t, n->vertices)) {
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
        const route_tree *t = net__tree_of(n, src);
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

double sim_net_gap(const sim_net *n, uint64_t bytes, double bandwidth, bool posted)
{
    double g;
    if (n->machine && (posted ? machine_posted_gap(n->machine, bytes, &g)
                              : machine_gap(n->machine, bytes, &g)))
        return g;
    return (double)bytes / bandwidth;
}

bool sim_net_posted_gaps(const sim_net *n)
{
    return n->machine && machine_has_posted_gap(n->machine);
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
        const route_tree *t = net__tree_of(n, src);
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
