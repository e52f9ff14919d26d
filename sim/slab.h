/*
 * slab.h - memory for the simulator's pools of objects (requests,
 * messages, flows), in mappings whose pages are made at once.
 *
 * A run with a million messages in flight holds hundreds of megabytes of
 * them.  A page the kernel makes on the first write to it costs a trap as
 * well as the zeroing: faulting 640 MB page by page took 0.40-0.48 s on the
 * AMD 2-core VM, mapping it a MiB at a time with MAP_POPULATE 0.28-0.34 s
 * (and the 1,024-rank linear all-to-all's page faults, 1 MiB a block, went
 * from 173,770 to 38,128 when its requests, messages and flows came so).
 * A pool's slabs double from SIM_SLAB_FIRST objects to SIM_SLAB_MOST
 * bytes, so a small run's slabs stay small and what a last slab makes for
 * no one stays under a MiB.
 */
#ifndef SIM_SLAB_H
#define SIM_SLAB_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#define SIM_SLAB_FIRST 256        /* objects in a pool's first slab */
#define SIM_SLAB_MOST (1u << 20)  /* bytes past which a slab stops doubling */

/* A slab of bytes, its pages made, or NULL when out of memory. */
void *sim_slab_map(size_t bytes);

/* Gives back what sim_slab_map(bytes) returned. */
void sim_slab_unmap(void *p, size_t bytes);

/* The objects of a pool's next slab after one of n (0: none yet) objects
 * of size bytes, below header bytes of its own. */
size_t sim_slab_next(size_t n, size_t size, size_t header);

/* A pool of objects of one size (the engine's requests and messages, the
 * solver's flows of one route length), in slabs that are freed together.
 * A slab's objects start on a cache line (so each 128-byte request spans
 * two lines, not three) and come out lowest address first.  A pooled
 * object's first pointer's worth of bytes links the free list; an object
 * taken is uninitialized, its user writes every field. */
typedef struct sim_slab sim_slab;
typedef struct sim_pool {
    void *free;       /* the free list, through each object's first bytes */
    sim_slab *slabs;  /* every slab, newest first */
    size_t size;      /* bytes an object, at least a pointer's */
    size_t last;      /* objects in the newest slab; 0: none yet */
} sim_pool;

/* An empty pool of objects of size bytes.  Cannot fail. */
void sim_pool_init(sim_pool *p, size_t size);

/* Threads a new slab onto p's free list; false when out of memory. */
bool sim_pool_grow(sim_pool *p);

/* Gives back every slab: every object taken from p is gone too. */
void sim_pool_release(sim_pool *p);

/* An object, or NULL when out of memory. */
static inline void *sim_pool_take(sim_pool *p)
{
    if (!p->free && !sim_pool_grow(p))
        return NULL;
    void *obj = p->free;
    memcpy(&p->free, obj, sizeof p->free);
    return obj;
}

/* obj, taken from p, is free again. */
static inline void sim_pool_give(sim_pool *p, void *obj)
{
    memcpy(obj, &p->free, sizeof p->free);
    p->free = obj;
}

#endif /* SIM_SLAB_H */
