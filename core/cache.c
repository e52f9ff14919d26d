/* cache.c - fresh, warm or cold buffers before a measured iteration. */
#include "core/cache.h"

#include <stdint.h>
#include <string.h>

#include "commlab.h"

const char *cache_mode_name(cache_mode m)
{
    switch (m) {
    case CACHE_FRESH: return "fresh";
    case CACHE_WARM: return "warm";
    case CACHE_COLD: return "cold";
    }
    return "?";
}

int cache_mode_parse(const char *text, cache_mode *out)
{
    static const cache_mode all[] = {CACHE_FRESH, CACHE_WARM, CACHE_COLD};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (strcmp(text, cache_mode_name(all[i])) == 0) {
            *out = all[i];
            return 0;
        }
    return CL_EINVAL;
}

/* The stride that meets every line: the smallest data cache line of the
 * machine (arm64 says it in CTR_EL0; x86-64's is 64 bytes). */
static size_t line_bytes(void)
{
#if defined(__aarch64__)
    uint64_t ctr;
    __asm__ volatile("mrs %0, ctr_el0" : "=r"(ctr));
    return (size_t)4 << ((ctr >> 16) & 0xf);
#else
    return 64;
#endif
}

bool cache_cold_supported(void)
{
    return cache_cold_how() != NULL;
}

const char *cache_cold_how(void)
{
#if defined(__x86_64__)
    return "clflush";
#elif defined(__aarch64__)
    return "dc civac";
#else
    return NULL;
#endif
}

/* Flushes the line holding p from every cache (written back if dirty). */
static void flush_line(const volatile unsigned char *p)
{
#if defined(__x86_64__)
    __builtin_ia32_clflush((const void *)p);
#elif defined(__aarch64__)
    __asm__ volatile("dc civac, %0" : : "r"(p) : "memory");
#else
    (void)p;
#endif
}

/* Waits until every flush issued before is done. */
static void flush_fence(void)
{
#if defined(__x86_64__)
    __builtin_ia32_mfence();
#elif defined(__aarch64__)
    __asm__ volatile("dsb ish" : : : "memory");
#endif
}

size_t cache_prepare(cache_mode mode, void *p, size_t bytes)
{
    if (mode == CACHE_WARM || bytes == 0 || (mode == CACHE_COLD && !cache_cold_supported()))
        return 0;
    size_t line = line_bytes(), lines = 0;
    /* From the start of p's line, so a block that starts mid-line has its
     * first line too. */
    uintptr_t first = (uintptr_t)p & ~(uintptr_t)(line - 1);
    uintptr_t end = (uintptr_t)p + bytes;
    volatile unsigned char *b = p;
    for (uintptr_t a = first; a < end; a += line, lines++) {
        /* The byte of this line that lies in the block. */
        volatile unsigned char *q = b + (a < (uintptr_t)p ? 0 : a - (uintptr_t)p);
        if (mode == CACHE_FRESH)
            *q = *q; /* a store: the line is the rank's core's, dirty */
        else
            flush_line(q);
    }
    if (mode == CACHE_COLD)
        flush_fence();
    return lines;
}
