/*
 * flow_impl.h - what the files of the max-min solver share; internal to
 * sim/ (hence the flow__ names).  sim/flow.h is the public API; flow.c
 * says how resources, flows and their lists are laid out.
 *
 *   flow.c        the pools, the hash table, solving, starting and
 *                 finishing flows
 *   flow_query.c  the read-only queries and sim_flow_check
 *
 * The hash table's lookup is inline here: flow.c calls it for every hop
 * of every flow started, the check for every resource.
 */
#ifndef SIM_FLOW_IMPL_H
#define SIM_FLOW_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/flow.h"
#include "sim/slab.h"

#define NONE UINT32_MAX
#define DONE 1e-9      /* work left below this fraction of the flow's work is none */
#define CHECK_TOL 1e-8 /* sim_flow_check: SNAP, and then some rounding */

typedef struct hop {
    struct hop *prev, *next; /* the resource's list of hops */
    uint32_t res;            /* index into the resource pool */
    uint32_t i;              /* position in its flow's route */
} hop;

struct sim_flow {
    void *owner;   /* caller's */
    double work;   /* bytes left at t */
    double work0;  /* bytes at start */
    double t;      /* seconds: when work and rate were last applied */
    double rate;   /* bytes per second; 0 until solved */
    double end;    /* seconds: t + work / rate, +inf until solved */
    uint64_t mark; /* epoch of the last walk that visited it */
    uint8_t nres;  /* hops in the route */
    bool fixed;    /* solve: rate settled */
    hop hop[];     /* the route */
};

typedef struct res {
    int64_t id;
    double cap;       /* capacity units per second */
    double rem;       /* solve: capacity not yet given out */
    double share;     /* solve: rem / unfixed, the heap key (+inf when none) */
    hop *head;        /* hops of the flows crossing it */
    uint64_t mark;    /* epoch of the last walk that visited it */
    uint32_t nflows;  /* flows crossing it */
    uint32_t unfixed; /* solve: flows crossing it not yet fixed */
    uint32_t pos;     /* solve: heap index; pooled: next free index */
    bool used;        /* in the hash table */
    bool dirty;       /* queued as a seed */
} res;

typedef struct slot {
    int64_t id;
    uint32_t idx; /* NONE: empty */
} slot;

struct sim_flow_sys {
    sim_flow_moved_fn *moved;
    void *ctx;
    slot *tab;        /* hash table: id -> pool index */
    size_t tab_cap;   /* slots, a power of two (or 0) */
    size_t tab_len;   /* slots used */
    res *res;         /* pool */
    uint32_t res_cap; /* pool slots allocated */
    uint32_t res_hw;  /* pool slots ever handed out */
    uint32_t res_free; /* first free pool slot below res_hw, or NONE */
    uint32_t res_used; /* resources in use (with keep_idle: ever used) */
    bool keep_idle;    /* idle resources stay in the table (sim_flow_keep_idle) */
    sim_pool flows[SIM_FLOW_MAX_ROUTE + 1]; /* by route length (sim/slab.h) */
    size_t active;    /* flows in use */
    uint32_t *seeds;  /* dirty resources; capacity res_cap */
    uint32_t nseeds;
    uint32_t *cres;   /* solve: the component's resources; capacity res_cap */
    uint32_t *heap;   /* solve: resources by (share, id); capacity res_cap */
    uint32_t *cpos;   /* solve: a resource's place in cres, by pool index;
                         capacity res_cap */
    size_t *cstart;   /* solve: where cres[i]'s flows start in cadj (and
                         cstart[i + 1] where they end); capacity res_cap + 1 */
    sim_flow **cflow; /* solve: the component's flows */
    size_t cflow_cap;
    sim_flow **cadj;  /* solve: each resource's flows, in its list's order */
    size_t cadj_cap;
    size_t hops;      /* hops of the flows in use (cadj's most) */
    uint64_t epoch;   /* walk counter */
    double last_now;  /* latest now seen */
    bool batching;
    sim_flow *quiet;  /* not reported: the flow sim_flow_start returns */
    sim_flow_stats stats;
};

/* The flow hop h belongs to. */
static inline sim_flow *flow__of(hop *h)
{
    return (sim_flow *)((char *)(h - h->i) - offsetof(sim_flow, hop));
}

/* An id's first slot in a table of mask + 1 slots. */
static inline size_t flow__home(int64_t id, size_t mask)
{
    uint64_t x = (uint64_t)id;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return (size_t)x & mask;
}

/* The pool index of resource id, or NONE.  Cannot fail. */
static inline uint32_t flow__tab_find(const sim_flow_sys *s, int64_t id)
{
    if (!s->tab_cap)
        return NONE;
    size_t mask = s->tab_cap - 1;
    for (size_t i = flow__home(id, mask);; i = (i + 1) & mask) {
        if (s->tab[i].idx == NONE)
            return NONE;
        if (s->tab[i].id == id)
            return s->tab[i].idx;
    }
}

#endif
