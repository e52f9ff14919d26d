/* pages.c - populating a rank's share of the shared job (real/pages.h). */
#include "real/pages.h"

#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

void pages_populate(void *addr, size_t len)
{
    if (len == 0)
        return;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t from = (uintptr_t)addr & ~(page - 1);
    uintptr_t to = ((uintptr_t)addr + len + page - 1) & ~(page - 1);
#ifdef MADV_POPULATE_WRITE
    if (madvise((void *)from, to - from, MADV_POPULATE_WRITE) == 0 || errno != EINVAL)
        return;
#endif
    /* An older kernel: write each page without changing it. */
    for (uintptr_t p = from; p < to; p += page)
        __atomic_fetch_add((unsigned char *)p, 0, __ATOMIC_RELAXED);
}

void pages_warm_heap(void)
{
    mallopt(M_TRIM_THRESHOLD, PAGES_TRIM);
    mallopt(M_MMAP_THRESHOLD, PAGES_MMAP);
    void *warm = malloc(PAGES_HEAP);
    if (!warm)
        return;
    /* the barrier keeps the stores, dead to the compiler before free */
    memset(warm, 0, PAGES_HEAP);
    __asm__ volatile("" : : "r"(warm) : "memory");
    free(warm);
}

__attribute__((noinline)) void pages_warm_stack(void)
{
    volatile unsigned char below[PAGES_STACK];
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    for (size_t i = 0; i < sizeof below; i += page)
        below[i] = 0;
}
