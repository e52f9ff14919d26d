/*
 * net_impl.h - what the files of the network model share; internal to
 * sim/ (hence the net__ names).  sim/net.h is the public API.
 *
 *   net.c       building a tier or machine mesh, the shape, routes and
 *               costs (on every message's path)
 *   net_load.c  reading a topology file: the dimension form and the
 *               explicit form of hosts, switches and links
 */
#ifndef SIM_NET_IMPL_H
#define SIM_NET_IMPL_H

#include <stdint.h>

#include "core/diag.h"
#include "core/reduce.h"
#include "sim/net.h"

enum { NET_MESH, NET_DIMS, NET_GRAPH };
enum { DIM_SWITCH, DIM_RING, DIM_FULL };

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

/* A network of `kind` (NET_*), zeroed; NULL (d says why) when out of
 * memory. */
sim_net *net__new(int kind, cl_diag *d);
/* t's arrays for `vertices` vertices; CL_ENOMEM (t unchanged) when out of
 * memory. */
int net__tree_alloc(route_tree *t, int vertices);
/* The tree of src: cached, or built in its slot.  Slot 0 is allocated at
 * load; if a later slot cannot be, slot 0 is reused, so this cannot fail. */
const route_tree *net__tree_of(sim_net *n, int src);

#endif
