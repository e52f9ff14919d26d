/* blocks.c - cl_alloc blocks of simulated ranks: guard pages and canaries
 * (see blocks.h). */
#include "sim/blocks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/units.h"

#define LINE 64u /* a block starts on a line */

/* Each block's header: at the start of its mapping (guarded), or of its
 * calloc'd memory. */
struct sim_block {
    sim_block *next;
    void *base;      /* the mapping or the calloc'd memory */
    size_t span;     /* the bytes of base: guarded, its guard page included */
    unsigned char *data; /* what cl_alloc returned */
    size_t bytes;    /* its size */
    size_t canary;   /* bytes of canary after data + bytes */
    uint32_t number; /* 1, 2, ... in cl_alloc order */
    bool guarded;    /* a mapping ending in a guard page */
};

/* The canary's byte at offset i past a block's end: a pattern that neither
 * zeros nor a memset of one value writes by chance. */
static unsigned char canary_byte(size_t i)
{
    return (unsigned char)(0xa5 ^ (i * 29));
}

static size_t round_up(size_t n, size_t to)
{
    return (n + to - 1) / to * to;
}

void sim_blocks_pool_init(sim_blocks_pool *p)
{
    long page = sysconf(_SC_PAGESIZE);
    p->page = page > 0 ? (size_t)page : 4096;
    p->guarded = 0;
}

static size_t header_room(void)
{
    return round_up(sizeof(sim_block), LINE);
}

/* Places a block of bytes in h's memory: its data and canary where they
 * go, the data zeroed unless the memory is fresh (zero already).  False
 * when they do not fit (h unchanged). */
static bool place(sim_block *h, size_t bytes, size_t page, bool fresh)
{
    size_t used = round_up(bytes ? bytes : 1, LINE);
    uintptr_t base = (uintptr_t)h->base;
    if (h->guarded) {
        /* [header | ... | data, bytes | canary to the line] [guard page] */
        size_t body = h->span - page;
        if (used > body - header_room())
            return false;
        h->data = (unsigned char *)(base + body - used);
        h->canary = used - bytes;
    } else {
        /* [header | pad | data, bytes | canary: to the line, and
         * SIM_BLOCKS_CANARY] */
        uintptr_t data = (base + sizeof(sim_block) + LINE - 1) & ~(uintptr_t)(LINE - 1);
        if (used > h->span - (data - base) - SIM_BLOCKS_CANARY)
            return false;
        h->data = (unsigned char *)data;
        h->canary = used - bytes + SIM_BLOCKS_CANARY;
    }
    h->bytes = bytes;
    if (!fresh)
        memset(h->data, 0, bytes);
    return true;
}

static sim_block *map_guarded(sim_blocks_pool *p, size_t bytes)
{
    size_t used = round_up(bytes ? bytes : 1, LINE);
    if (used > SIZE_MAX / 2 - 2 * p->page)
        return NULL;
    size_t body = round_up(header_room() + used, p->page);
    size_t span = body + p->page;
    char *base = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED)
        return NULL;
    if (mprotect(base + body, p->page, PROT_NONE) != 0) {
        munmap(base, span);
        return NULL;
    }
    sim_block *h = (sim_block *)base;
    *h = (sim_block){.base = base, .span = span, .guarded = true};
    p->guarded++;
    return h;
}

static sim_block *calloc_block(size_t bytes)
{
    size_t used = round_up(bytes ? bytes : 1, LINE);
    if (used > SIZE_MAX / 2)
        return NULL;
    size_t span = sizeof(sim_block) + LINE - 1 + used + SIM_BLOCKS_CANARY;
    sim_block *h = calloc(1, span);
    if (!h)
        return NULL;
    *h = (sim_block){.base = h, .span = span};
    return h;
}

static void block_free(sim_block *h, sim_blocks_pool *p)
{
    if (h->guarded) {
        p->guarded--;
        munmap(h->base, h->span);
    } else {
        free(h->base);
    }
}

void *sim_blocks_alloc(sim_blocks *b, sim_blocks_pool *p, size_t bytes)
{
    sim_block *h = b->spare;
    if (h) {
        b->spare = h->next;
        if (!place(h, bytes, p->page, false)) {
            block_free(h, p);
            h = NULL;
        }
    }
    if (!h && p->guarded < SIM_BLOCKS_GUARDED_MAX && (h = map_guarded(p, bytes)))
        place(h, bytes, p->page, true); /* made to fit */
    if (!h && (h = calloc_block(bytes)))
        place(h, bytes, p->page, true);
    if (!h)
        return NULL;
    for (size_t i = 0; i < h->canary; i++)
        h->data[h->bytes + i] = canary_byte(i);
    h->number = ++b->count;
    h->next = b->head;
    b->head = h;
    return h->data;
}

static bool broken(const sim_block *h, sim_blocks_fault *out)
{
    const unsigned char *end = h->data + h->bytes;
    size_t first = SIZE_MAX, last = 0;
    for (size_t i = 0; i < h->canary; i++)
        if (end[i] != canary_byte(i)) {
            if (first == SIZE_MAX)
                first = i;
            last = i;
        }
    if (first == SIZE_MAX)
        return false;
    *out = (sim_blocks_fault){.number = h->number, .bytes = h->bytes, .first = h->bytes + first,
                              .last = h->bytes + last};
    return true;
}

bool sim_blocks_check(const sim_blocks *b, sim_blocks_fault *out)
{
    for (const sim_block *h = b->head; h; h = h->next)
        if (broken(h, out))
            return true;
    return false;
}

bool sim_blocks_find(const sim_blocks *b, const void *addr, sim_blocks_fault *out)
{
    uintptr_t a = (uintptr_t)addr;
    for (const sim_block *h = b->head; h; h = h->next) {
        uintptr_t end = (uintptr_t)(h->data + h->bytes);
        uintptr_t limit = h->guarded ? (uintptr_t)h->base + h->span : end + h->canary;
        if (a >= end && a < limit) {
            size_t at = (size_t)(a - (uintptr_t)h->data);
            *out = (sim_blocks_fault){.number = h->number, .bytes = h->bytes, .first = at,
                                      .last = at};
            return true;
        }
    }
    return false;
}

static void free_list(sim_block *h, sim_blocks_pool *p)
{
    while (h) {
        sim_block *next = h->next;
        block_free(h, p);
        h = next;
    }
}

void sim_blocks_recycle(sim_blocks *b, sim_blocks_pool *p)
{
    free_list(b->spare, p);
    b->spare = NULL;
    while (b->head) { /* newest first: reversed, the spares are in call order */
        sim_block *h = b->head;
        b->head = h->next;
        h->next = b->spare;
        b->spare = h;
    }
    b->count = 0;
}

void sim_blocks_release(sim_blocks *b, sim_blocks_pool *p)
{
    free_list(b->head, p);
    free_list(b->spare, p);
    b->head = b->spare = NULL;
    b->count = 0;
}

void sim_blocks_words(const sim_blocks_fault *f, int rank, int owner, const char *where,
                      char *buf, size_t len)
{
    char size[UNITS_BUF];
    units_size_str(size, f->bytes);
    int n = owner == rank
                ? snprintf(buf, len, "rank %d wrote past the end of its block from cl_alloc "
                           "#%u (%s)", rank, f->number, size)
                : snprintf(buf, len, "rank %d's block from cl_alloc #%u (%s) was written past "
                           "its end while rank %d ran", owner, f->number, size, rank);
    size_t used = n > 0 && (size_t)n < len ? (size_t)n : len;
    if (where)
        snprintf(buf + used, len - used, " %s: a write to byte %zu of the %zu-byte block (a "
                 "SIGSEGV at the guard page after it)", where, f->first, f->bytes);
    else if (f->first == f->last)
        snprintf(buf + used, len - used, ": byte %zu of the %zu-byte block was changed (found "
                 "when its iteration ended)", f->first, f->bytes);
    else
        snprintf(buf + used, len - used, ": bytes %zu..%zu of the %zu-byte block were changed "
                 "(found when its iteration ended)", f->first, f->last, f->bytes);
}
