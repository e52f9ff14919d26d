/*
 * cache.h - what the caches hold of a rank's buffers when a measured
 * iteration starts (`--cache fresh|warm|cold`).
 *
 * A measured pattern sends from buffers it got from cl_alloc, and a
 * measured run hands every timed iteration the same blocks again.  Where
 * their lines are when the iteration starts changes what a transfer
 * costs by a factor of several at 128 KiB-2 MiB on shared memory: a
 * receiver that copies lines the sender's core has just written fetches
 * them from that core (a producer: what a training step sends, gradients
 * its compute just wrote), one that copies lines already clean in the
 * shared cache reads them at cache speed (a benchmark that resends one
 * untouched buffer), and lines in no cache come from memory.  Benchmarks
 * differ on this: IMB's -off_cache flushes, OSU reuses warm buffers.  So
 * the harness, never the pattern, sets it, before each iteration's
 * barrier (outside the timed region), for every block the rank holds:
 *
 *   fresh  each line of each block is read and written back unchanged by
 *          the rank's own core, so the block is "just written" (dirty in
 *          that core's cache, as far as it fits) without changing a byte:
 *          the data a pattern checks or prints stays what it was.  The
 *          default.
 *   warm   nothing is done: the lines are wherever the last iteration
 *          left them (commlab before --cache; machine files without a
 *          `cache` key were measured this way).
 *   cold   each line is flushed from every cache of the machine (x86-64
 *          clflush, arm64 dc civac) and a fence waits for it, so the
 *          iteration reads its buffers from memory.  Where neither
 *          instruction exists cache_cold_supported() is false and the CLI
 *          refuses the mode.
 *
 * The simulator has no caches: the mode is a measured run's only.
 */
#ifndef CL_CACHE_H
#define CL_CACHE_H

#include <stdbool.h>
#include <stddef.h>

typedef enum cache_mode {
    CACHE_FRESH, /* written by the rank's core just before (the default) */
    CACHE_WARM,  /* left as the last iteration left them */
    CACHE_COLD,  /* flushed from every cache */
} cache_mode;

/* "fresh", "warm" or "cold"; "?" for anything else.  Cannot fail. */
const char *cache_mode_name(cache_mode m);
/* The mode called text into *out: 0, or CL_EINVAL (*out unchanged). */
int cache_mode_parse(const char *text, cache_mode *out);
/* Whether this build can flush a line from the caches (cold).  Cannot
 * fail. */
bool cache_cold_supported(void);
/* The instruction cold uses here ("clflush"), or NULL when none. */
const char *cache_cold_how(void);

/* Prepares bytes at p for an iteration as mode says (see the top): fresh
 * reads and writes back one byte of every cache line it spans, cold
 * flushes every line it spans and waits for the flushes, warm does
 * nothing.  No byte changes value.  Returns the cache lines it walked (0
 * for warm).  Nobody else may write the bytes meanwhile.  Cold where it
 * is not supported does nothing and returns 0 (the CLI never asks). */
size_t cache_prepare(cache_mode mode, void *p, size_t bytes);

#endif
