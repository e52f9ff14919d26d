/* match.c - posted and unexpected queues with MPI's matching rules. */
#include "core/match.h"

#include <assert.h>
#include <stdlib.h>

static void list_init(match_list *q)
{
    q->head = q->tail = NULL;
    q->len = 0;
}

static inline void list_append(match_list *q, match_link *l, uint32_t which)
{
    l->next = NULL;
    l->prev = q->tail;
    if (q->tail)
        q->tail->next = l;
    else
        q->head = l;
    q->tail = l;
    q->len++;
    l->queue = which;
}

static inline void list_unlink(match_list *q, match_link *l)
{
    assert(q->len > 0);
    if (l->prev)
        l->prev->next = l->next;
    else
        q->head = l->next;
    if (l->next)
        l->next->prev = l->prev;
    else
        q->tail = l->prev;
    q->len--;
    l->next = l->prev = NULL;
    l->queue = MATCH_NONE;
}

static bool matches(const match_link *recv, const match_link *msg)
{
    return recv->ctx == msg->ctx &&
           (recv->src == MATCH_ANY_SOURCE || recv->src == msg->src) &&
           (recv->tag == MATCH_ANY_TAG || recv->tag == msg->tag);
}

/* ---- the index (match.h, "Cost") ----
 *
 * Every queued link has one entry.  The unexpected messages and the
 * receives that name both source and tag are on the chain of their slot
 * (a hash of the list, src, tag and ctx), each chain in queue order, so the
 * first entry of a key on its chain is the oldest of that key; the
 * wildcard receives are on a chain of their own, in post order.  Entries
 * are numbered in the order they were queued (seq), which orders a
 * receive of a chain against the wildcard ones.  Entries come from blocks
 * of IX_BLOCK and are recycled through a free list.  Whatever fails for
 * lack of memory drops the whole index: the lists alone give the same
 * answers, by scanning. */

#define IX_BLOCK 64
#define IX_SLOTS_MIN 64

typedef struct ix_entry {
    match_link *link;
    uint64_t seq;          /* queue order over both lists */
    struct ix_entry *next; /* the next (newer) entry on its chain */
} ix_entry;

typedef struct ix_block {
    struct ix_block *next;
    ix_entry e[IX_BLOCK];
} ix_block;

struct match_index {
    ix_entry **slot;            /* nslots chains */
    size_t nslots;              /* a power of two */
    size_t hashed;              /* entries on the slots' chains */
    ix_entry *wild, *wild_tail; /* wildcard receives, post order */
    ix_entry *free;             /* recycled entries */
    ix_block *blocks;           /* every entry's memory */
    uint64_t seq;               /* the next entry's number */
};

static bool wildcard(const match_link *l)
{
    return l->src == MATCH_ANY_SOURCE || l->tag == MATCH_ANY_TAG;
}

static size_t ix_hash(const struct match_index *ix, uint32_t list, int src, int tag,
                      uint32_t ctx)
{
    uint64_t h = ((uint64_t)(uint32_t)src << 32 | (uint32_t)tag) * 0x9E3779B97F4A7C15ull;
    h ^= ((uint64_t)ctx << 2 | list) * 0xC2B2AE3D27D4EB4Full;
    h ^= h >> 31;
    return (size_t)(h & (ix->nslots - 1));
}

static bool same_key(const match_link *l, uint32_t list, int src, int tag, uint32_t ctx)
{
    return l->queue == list && l->src == src && l->tag == tag && l->ctx == ctx;
}

static void ix_destroy(struct match_index *ix)
{
    if (!ix)
        return;
    while (ix->blocks) {
        ix_block *b = ix->blocks;
        ix->blocks = b->next;
        free(b);
    }
    free(ix->slot);
    free(ix);
}

static void ix_drop_all(match_queues *m)
{
    ix_destroy(m->ix);
    m->ix = NULL;
}

static ix_entry *ix_take(struct match_index *ix)
{
    if (!ix->free) {
        ix_block *b = malloc(sizeof *b);
        if (!b)
            return NULL;
        b->next = ix->blocks;
        ix->blocks = b;
        for (size_t i = 0; i < IX_BLOCK; i++) {
            b->e[i].next = ix->free;
            ix->free = &b->e[i];
        }
    }
    ix_entry *e = ix->free;
    ix->free = e->next;
    return e;
}

static void ix_give(struct match_index *ix, ix_entry *e)
{
    e->next = ix->free;
    ix->free = e;
}

/* Appends e to the tail of chain *head. */
static void chain_append(ix_entry **head, ix_entry *e)
{
    while (*head)
        head = &(*head)->next;
    e->next = NULL;
    *head = e;
}

/* Twice the slots, chains kept in order; false (nothing changed) without
 * memory. */
static bool ix_grow(struct match_index *ix)
{
    size_t n = ix->nslots * 2;
    ix_entry **slot = calloc(n, sizeof *slot), **tail = calloc(n, sizeof *tail);
    if (!slot || !tail) {
        free(slot);
        free(tail);
        return false;
    }
    ix_entry **old = ix->slot;
    size_t oldn = ix->nslots;
    ix->slot = slot;
    ix->nslots = n;
    for (size_t i = 0; i < oldn; i++)
        for (ix_entry *e = old[i], *next; e; e = next) {
            next = e->next;
            const match_link *l = e->link;
            size_t h = ix_hash(ix, l->queue, l->src, l->tag, l->ctx);
            e->next = NULL;
            if (tail[h])
                tail[h]->next = e;
            else
                slot[h] = e;
            tail[h] = e;
        }
    free(old);
    free(tail);
    return true;
}

/* Indexes l, just appended to its list; false without memory. */
static bool ix_add(struct match_index *ix, match_link *l)
{
    if (ix->hashed >= ix->nslots)
        (void)ix_grow(ix); /* or longer chains */
    ix_entry *e = ix_take(ix);
    if (!e)
        return false;
    e->link = l;
    e->seq = ix->seq++;
    if (l->queue == MATCH_POSTED && wildcard(l)) {
        e->next = NULL;
        if (ix->wild_tail)
            ix->wild_tail->next = e;
        else
            ix->wild = e;
        ix->wild_tail = e;
        return true;
    }
    chain_append(&ix->slot[ix_hash(ix, l->queue, l->src, l->tag, l->ctx)], e);
    ix->hashed++;
    return true;
}

/* Where the oldest entry of the key is on its chain (the pointer to it),
 * or NULL. */
static ix_entry **ix_find(struct match_index *ix, uint32_t list, int src, int tag, uint32_t ctx)
{
    ix_entry **p = &ix->slot[ix_hash(ix, list, src, tag, ctx)];
    for (; *p; p = &(*p)->next)
        if (same_key((*p)->link, list, src, tag, ctx))
            return p;
    return NULL;
}

/* Takes the entry at *p off its slot's chain. */
static void ix_unhash(struct match_index *ix, ix_entry **p)
{
    ix_entry *e = *p;
    *p = e->next;
    ix->hashed--;
    ix_give(ix, e);
}

/* Takes the entry at *p off the wildcard chain. */
static void ix_unwild(struct match_index *ix, ix_entry **p)
{
    ix_entry *e = *p;
    *p = e->next;
    if (ix->wild_tail == e)
        ix->wild_tail = p == &ix->wild ? NULL
                                       : (ix_entry *)(void *)((char *)p - offsetof(ix_entry, next));
    ix_give(ix, e);
}

/* Where l's entry is: on the wildcard chain (*wild) or its slot's. */
static ix_entry **ix_locate(struct match_index *ix, const match_link *l, bool *wild)
{
    *wild = l->queue == MATCH_POSTED && wildcard(l);
    ix_entry **p = *wild ? &ix->wild : &ix->slot[ix_hash(ix, l->queue, l->src, l->tag, l->ctx)];
    while (*p && (*p)->link != l)
        p = &(*p)->next;
    return *p ? p : NULL;
}

/* Forgets l, still on its list. */
static void ix_forget(struct match_index *ix, const match_link *l)
{
    bool wild;
    ix_entry **p = ix_locate(ix, l, &wild);
    assert(p && "a queued link is in the index");
    if (!p)
        return;
    if (wild)
        ix_unwild(ix, p);
    else
        ix_unhash(ix, p);
}

/* The index of both lists as they stand, or NULL without memory. */
static struct match_index *ix_build(const match_queues *m)
{
    struct match_index *ix = calloc(1, sizeof *ix);
    size_t n = IX_SLOTS_MIN, want = m->posted.len + m->unexpected.len;
    while (n < want)
        n *= 2;
    if (ix && !(ix->slot = calloc(n, sizeof *ix->slot))) {
        free(ix);
        return NULL;
    }
    if (!ix)
        return NULL;
    ix->nslots = n;
    /* Post order, then arrival order: a receive and a message are never
     * compared by seq, only receives with receives. */
    for (match_link *l = m->posted.head; l; l = l->next)
        if (!ix_add(ix, l))
            goto fail;
    for (match_link *l = m->unexpected.head; l; l = l->next)
        if (!ix_add(ix, l))
            goto fail;
    return ix;
fail:
    ix_destroy(ix);
    return NULL;
}

/* l was just appended to q: index it (building the index once a list is
 * long; again after a failure at each power of two). */
__attribute__((noinline)) static void ix_note(match_queues *m, const match_list *q,
                                              match_link *l)
{
    if (m->ix) {
        if (!ix_add(m->ix, l))
            ix_drop_all(m);
        return;
    }
    if (q->len > MATCH_INDEX_FROM &&
        (q->len == MATCH_INDEX_FROM + 1 || (q->len & (q->len - 1)) == 0))
        m->ix = ix_build(m);
}

/* After a link left its list: an index of two empty lists goes. */
static void ix_trim(match_queues *m)
{
    if (m->ix && m->posted.len == 0 && m->unexpected.len == 0)
        ix_drop_all(m);
}

void match_queues_init(match_queues *m)
{
    list_init(&m->posted);
    list_init(&m->unexpected);
    m->ix = NULL;
}

void match_queues_release(match_queues *m)
{
    ix_drop_all(m);
}

void match_link_init(match_link *l, int src, int tag, uint32_t ctx)
{
    l->next = l->prev = NULL;
    l->src = src;
    l->tag = tag;
    l->ctx = ctx;
    l->queue = MATCH_NONE;
}

/* With an index: the oldest unexpected message recv matches, or NULL:
 * the chain of its key for a receive naming both, else the scan. */
static match_link *indexed_message(match_queues *m, const match_link *recv)
{
    if (!wildcard(recv)) {
        ix_entry **p = ix_find(m->ix, MATCH_UNEXPECTED, recv->src, recv->tag, recv->ctx);
        if (!p)
            return NULL;
        match_link *msg = (*p)->link;
        ix_unhash(m->ix, p);
        return msg;
    }
    for (match_link *msg = m->unexpected.head; msg; msg = msg->next)
        if (matches(recv, msg)) {
            ix_forget(m->ix, msg);
            return msg;
        }
    return NULL;
}

/* With an index: the oldest posted receive msg matches, or NULL: the
 * older of its key's oldest receive and the first wildcard receive that
 * matches it. */
static match_link *indexed_receive(match_queues *m, const match_link *msg)
{
    struct match_index *ix = m->ix;
    ix_entry **named = ix_find(ix, MATCH_POSTED, msg->src, msg->tag, msg->ctx), **wild;
    for (wild = &ix->wild; *wild && !matches((*wild)->link, msg); wild = &(*wild)->next)
        ;
    match_link *recv = NULL;
    if (named && (!*wild || (*named)->seq < (*wild)->seq)) {
        recv = (*named)->link;
        ix_unhash(ix, named);
    } else if (*wild) {
        recv = (*wild)->link;
        ix_unwild(ix, wild);
    }
    return recv;
}

void match_prefetch(const match_queues *m, bool arrive, int src, int tag, uint32_t ctx,
                    int step)
{
    const struct match_index *ix = m->ix;
    if (step == 0 || !ix) {
        if (ix)
            __builtin_prefetch(ix);
        return;
    }
    uint32_t list = arrive ? MATCH_POSTED : MATCH_UNEXPECTED;
    ix_entry *const *slot = &ix->slot[ix_hash(ix, list, src, tag, ctx)];
    if (step == 1) {
        __builtin_prefetch(slot);
        return;
    }
    const ix_entry *e = *slot;
    if (!e)
        return;
    if (step == 2)
        __builtin_prefetch(e);
    else
        __builtin_prefetch(e->link);
}

/* match_post_recv (recv) and match_arrive once the queues are indexed:
 * out of line, so the scans of short queues stay as lean as they were. */
__attribute__((noinline)) static match_link *indexed(match_queues *m, match_link *l, bool recv)
{
    match_link *got = recv ? indexed_message(m, l) : indexed_receive(m, l);
    match_list *mine = recv ? &m->posted : &m->unexpected;
    if (got) {
        list_unlink(recv ? &m->unexpected : &m->posted, got);
        ix_trim(m);
        return got;
    }
    list_append(mine, l, recv ? MATCH_POSTED : MATCH_UNEXPECTED);
    ix_note(m, mine, l);
    return NULL;
}

/* Without an index, the scans below are the O(n) cost discussed in
 * match.h; a list that grows past MATCH_INDEX_FROM gets one. */
match_link *match_post_recv(match_queues *m, match_link *recv)
{
    assert(recv->queue == MATCH_NONE);
    assert(recv->src >= MATCH_ANY_SOURCE && recv->tag >= MATCH_ANY_TAG);
    if (m->ix)
        return indexed(m, recv, true);
    for (match_link *msg = m->unexpected.head; msg; msg = msg->next) {
        if (matches(recv, msg)) {
            list_unlink(&m->unexpected, msg);
            return msg;
        }
    }
    list_append(&m->posted, recv, MATCH_POSTED);
    if (m->posted.len > MATCH_INDEX_FROM)
        ix_note(m, &m->posted, recv);
    return NULL;
}

match_link *match_arrive(match_queues *m, match_link *msg)
{
    assert(msg->queue == MATCH_NONE);
    assert(msg->src >= 0 && msg->tag >= 0);
    if (m->ix)
        return indexed(m, msg, false);
    for (match_link *recv = m->posted.head; recv; recv = recv->next) {
        if (matches(recv, msg)) {
            list_unlink(&m->posted, recv);
            return recv;
        }
    }
    list_append(&m->unexpected, msg, MATCH_UNEXPECTED);
    if (m->unexpected.len > MATCH_INDEX_FROM)
        ix_note(m, &m->unexpected, msg);
    return NULL;
}

bool match_remove(match_queues *m, match_link *l)
{
    if (l->queue != MATCH_POSTED && l->queue != MATCH_UNEXPECTED) {
        assert(l->queue == MATCH_NONE);
        return false;
    }
    if (m->ix)
        ix_forget(m->ix, l);
    list_unlink(l->queue == MATCH_POSTED ? &m->posted : &m->unexpected, l);
    ix_trim(m);
    return true;
}

size_t match_posted_len(const match_queues *m)
{
    return m->posted.len;
}

size_t match_unexpected_len(const match_queues *m)
{
    return m->unexpected.len;
}

/* Walks at most len + 1 links, so a cycle in a corrupted list ends the walk. */
static bool list_check(const match_list *q, uint32_t which)
{
    if ((q->head == NULL) != (q->tail == NULL) || (q->head == NULL) != (q->len == 0))
        return false;
    const match_link *prev = NULL;
    size_t n = 0;
    for (const match_link *l = q->head; l; l = l->next) {
        if (++n > q->len || l->prev != prev || l->queue != which)
            return false;
        if (which == MATCH_UNEXPECTED ? (l->src < 0 || l->tag < 0)
                                      : (l->src < MATCH_ANY_SOURCE || l->tag < MATCH_ANY_TAG))
            return false;
        prev = l;
    }
    return n == q->len && prev == q->tail;
}

/* Every link of q is in the index once, numbered in list order; adds the
 * entries found to *found. */
static bool ix_check_list(struct match_index *ix, const match_list *q, size_t *found)
{
    uint64_t last = 0;
    bool first = true;
    for (const match_link *l = q->head; l; l = l->next) {
        bool wild;
        ix_entry **p = ix_locate(ix, l, &wild);
        if (!p || (!first && (*p)->seq <= last))
            return false;
        last = (*p)->seq;
        first = false;
        ++*found;
    }
    return true;
}

/* The index holds the lists' links and nothing else, every chain in queue
 * order. */
static bool ix_check(const match_queues *m)
{
    struct match_index *ix = m->ix;
    size_t entries = 0, found = 0;
    for (size_t i = 0; i < ix->nslots; i++)
        for (const ix_entry *e = ix->slot[i]; e; e = e->next) {
            const match_link *l = e->link;
            if (wildcard(l) || ix_hash(ix, l->queue, l->src, l->tag, l->ctx) != i ||
                (e->next && e->next->seq <= e->seq))
                return false;
            entries++;
        }
    if (entries != ix->hashed)
        return false;
    for (const ix_entry *e = ix->wild; e; e = e->next) {
        if (!wildcard(e->link) || e->link->queue != MATCH_POSTED || (e->next && e->next->seq <= e->seq) ||
            (!e->next && e != ix->wild_tail))
            return false;
        entries++;
    }
    return (ix->wild != NULL) == (ix->wild_tail != NULL) &&
           entries == m->posted.len + m->unexpected.len &&
           ix_check_list(ix, &m->posted, &found) && ix_check_list(ix, &m->unexpected, &found) &&
           found == entries;
}

bool match_check(const match_queues *m)
{
    return list_check(&m->posted, MATCH_POSTED) &&
           list_check(&m->unexpected, MATCH_UNEXPECTED) && (!m->ix || ix_check(m));
}
