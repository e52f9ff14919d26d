/*
 * blocks.h - a simulated rank's cl_alloc blocks, guarded against writes
 * past their end.
 *
 * Ranks are coroutines inside the tool's own process (sim/coro.h), so a
 * rank that writes past the end of a block from malloc writes over the C
 * library's own bookkeeping: the tool then died of SIGSEGV without a word,
 * or glibc ended it with "double free or corruption", long after the write
 * and far from it.  So blocks do not come from malloc while it can be
 * helped:
 *
 *   - Up to SIM_BLOCKS_GUARDED_MAX blocks of a run at once, each block is
 *     a mapping of its own that ends in a guard page (PROT_NONE), and the
 *     block ends against it (its start on a 64-byte line, the 0..63 bytes
 *     between its end and the guard page a canary).  A write past the
 *     canary faults at once, in the instruction that made it; the fault
 *     handler (sim/fault.h) ends the rank, and sim_blocks_find names the
 *     block from the fault's address.
 *   - Above that count (a guard page splits a mapping, and Linux allows
 *     65,530 mappings per process, sim/coro.h's guard pages included), or
 *     when the mapping is refused, a block comes from calloc with
 *     SIM_BLOCKS_CANARY bytes of canary after it.
 *
 * Canaries are checked (sim_blocks_check) when the rank's iteration ends,
 * before any block is freed.  Limits, honestly: a write inside the canary
 * of a guarded block is found then, not when made; an unguarded block's
 * write past its canary reaches whatever malloc put behind it, and the C
 * library may find the damage first (the rank is then named as crashed of
 * SIGABRT, or the tool ends with status 4 by sim/fault.h's last resort); a
 * write that skips the canary (at an index far past the end) into memory
 * that is mapped is not caught; a write of the canary's own bytes is not
 * caught.
 *
 * Ownership: a sim_blocks is the caller's (one per rank), the blocks are
 * this module's until sim_blocks_release.  The pool counts a run's guarded
 * blocks; it is shared by every rank of the run (one thread).
 */
#ifndef SIM_BLOCKS_H
#define SIM_BLOCKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SIM_BLOCKS_GUARDED_MAX 8192u /* blocks of a run at once with a guard page each */
#define SIM_BLOCKS_CANARY 64u        /* canary bytes after a block without a guard page */

typedef struct sim_block sim_block;

typedef struct sim_blocks_pool {
    size_t page;    /* bytes: the system's page size */
    size_t guarded; /* blocks with a guard page, alive now */
} sim_blocks_pool;

typedef struct sim_blocks {
    sim_block *head;  /* the blocks handed out, the newest first */
    sim_block *spare; /* the previous iteration's, in cl_alloc order */
    uint32_t count;   /* blocks handed out since the last release: the next is #count + 1 */
} sim_blocks;

/* A block written past its end. */
typedef struct sim_blocks_fault {
    uint32_t number; /* its cl_alloc call in the iteration: 1, 2, ... */
    size_t bytes;    /* its size */
    size_t first;    /* the first byte written past the end, as an offset from the
                        block's start (>= bytes) */
    size_t last;     /* canary: the last byte found changed (first when one); a
                        guard page: first */
} sim_blocks_fault;

/* Cannot fail. */
void sim_blocks_pool_init(sim_blocks_pool *p);

/* A zeroed block of bytes (0 is allowed) on a 64-byte line, or NULL when
 * out of memory (nothing changed).  The next spare block is used again
 * when the size fits its memory (an iteration makes the calls of the one
 * before: no mapping is made and unmapped per block and iteration), else
 * it is freed. */
void *sim_blocks_alloc(sim_blocks *b, sim_blocks_pool *p, size_t bytes);

/* The newest block whose canary changed into *out and true, or false when
 * every canary is intact.  Cannot fail. */
bool sim_blocks_check(const sim_blocks *b, sim_blocks_fault *out);

/* Whether addr is past the end of one of b's blocks, in its canary or its
 * guard page (where a write past it faults): that block into *out and
 * true, else false.  Cannot fail. */
bool sim_blocks_find(const sim_blocks *b, const void *addr, sim_blocks_fault *out);

/* Ends an iteration: every block handed out becomes a spare for the next
 * one (the spares not used again are freed), the count is back to 0.
 * Cannot fail. */
void sim_blocks_recycle(sim_blocks *b, sim_blocks_pool *p);

/* Frees every block, spares too; b is empty afterwards (its count back to
 * 0).  Cannot fail. */
void sim_blocks_release(sim_blocks *b, sim_blocks_pool *p);

/* The words for rank `rank` having written past f, a block of rank
 * `owner`, into buf: "rank 1 wrote past the end of its block from cl_alloc
 * #1 (1000 B)" ("rank 0's block from cl_alloc #1 (1 KiB) was written past
 * its end while rank 1 ran": commlab delivering rank 1's message into rank
 * 0's receive), and where: `where` ("in its own code", "in cl_send") when
 * it faulted at the guard page, or NULL when a canary was found changed.
 * Cannot fail. */
void sim_blocks_words(const sim_blocks_fault *f, int rank, int owner, const char *where,
                      char *buf, size_t len);

#endif
