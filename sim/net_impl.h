/*
 * net_impl.h - what the files of the simulator's network share; internal
 * to sim/ (hence the net__ names).  net.c is the model: a network's
 * shape, its routes and their cost, asked per message; net_load.c builds
 * a network from a topology file (sim/net.h says both forms).
 *
 * A sim_net's kind says which of its fields mean anything: a tier mesh
 * keeps alpha and bw, the dimension form dim[], an explicit graph links,
 * names, the adjacency and the route cache; every kind owns route (a
 * scratch of the longest route's hops) and desc.
 */
#ifndef SIM_NET_IMPL_H
#define SIM_NET_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "core/diag.h"
#include "core/reduce.h"
#include "sim/net.h"

/* sim_net.kind: a tier or machine mesh, the dimension form, an explicit graph */
enum { NET_MESH, NET_DIMS, NET_GRAPH };
/* net_dim.type: how the devices of a group of one dimension are joined */
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

/* ---- helpers of net.c that net_load.c calls ---- */

/* A zeroed network of kind (NET_*), or NULL with d saying CL_ENOMEM. */
sim_net *net__new(int kind, cl_diag *d);
/* Room for one route tree over vertices: 0, or CL_ENOMEM with *t as it
 * was. */
int net__tree_alloc(route_tree *t, int vertices);
/* The route tree of src in an explicit graph: cached, or built by a BFS
 * in its slot.  Cannot fail (slot 0, allocated at load, stands in for a
 * slot that cannot be). */
const route_tree *net__tree_of(sim_net *n, int src);

#endif
