/* slab.c - pool memory with its pages made at once (see slab.h). */
#include "sim/slab.h"

#include <sys/mman.h>

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
