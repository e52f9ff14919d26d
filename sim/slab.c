/* slab.c - pool memory with its pages made at once (see slab.h). */
#include "sim/slab.h"

#include <sys/mman.h>

struct sim_slab {
    struct sim_slab *next;
    size_t bytes;                       /* its mapping's */
    _Alignas(64) unsigned char items[]; /* on a cache line */
};

void *sim_slab_map(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void sim_slab_unmap(void *p, size_t bytes)
{
    (void)munmap(p, bytes);
}

size_t sim_slab_next(size_t n, size_t size, size_t header)
{
    if (n == 0)
        return SIM_SLAB_FIRST;
    return header + 2 * n * size <= SIM_SLAB_MOST ? 2 * n : n;
}

void sim_pool_init(sim_pool *p, size_t size)
{
    *p = (sim_pool){.size = size < sizeof(void *) ? sizeof(void *) : size};
}

bool sim_pool_grow(sim_pool *p)
{
    size_t n = sim_slab_next(p->last, p->size, sizeof(sim_slab));
    size_t bytes = sizeof(sim_slab) + n * p->size;
    sim_slab *s = sim_slab_map(bytes);
    if (!s)
        return false;
    p->last = n;
    s->next = p->slabs;
    s->bytes = bytes;
    p->slabs = s;
    for (size_t i = n; i-- > 0;)
        sim_pool_give(p, s->items + i * p->size);
    return true;
}

void sim_pool_release(sim_pool *p)
{
    while (p->slabs) {
        sim_slab *s = p->slabs;
        p->slabs = s->next;
        sim_slab_unmap(s, s->bytes);
    }
    p->free = NULL;
    p->last = 0;
}
