/* match.c - posted and unexpected queues with MPI's matching rules. */
#include "core/match.h"

#include <assert.h>

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

void match_queues_init(match_queues *m)
{
    list_init(&m->posted);
    list_init(&m->unexpected);
}

void match_link_init(match_link *l, int src, int tag, uint32_t ctx)
{
    l->next = l->prev = NULL;
    l->src = src;
    l->tag = tag;
    l->ctx = ctx;
    l->queue = MATCH_NONE;
}

/* The scans below are the O(n) cost discussed in match.h. */
match_link *match_post_recv(match_queues *m, match_link *recv)
{
    assert(recv->queue == MATCH_NONE);
    assert(recv->src >= MATCH_ANY_SOURCE && recv->tag >= MATCH_ANY_TAG);
    for (match_link *msg = m->unexpected.head; msg; msg = msg->next) {
        if (matches(recv, msg)) {
            list_unlink(&m->unexpected, msg);
            return msg;
        }
    }
    list_append(&m->posted, recv, MATCH_POSTED);
    return NULL;
}

match_link *match_arrive(match_queues *m, match_link *msg)
{
    assert(msg->queue == MATCH_NONE);
    assert(msg->src >= 0 && msg->tag >= 0);
    for (match_link *recv = m->posted.head; recv; recv = recv->next) {
        if (matches(recv, msg)) {
            list_unlink(&m->posted, recv);
            return recv;
        }
    }
    list_append(&m->unexpected, msg, MATCH_UNEXPECTED);
    return NULL;
}

bool match_remove(match_queues *m, match_link *l)
{
    switch (l->queue) {
    case MATCH_POSTED:
        list_unlink(&m->posted, l);
        return true;
    case MATCH_UNEXPECTED:
        list_unlink(&m->unexpected, l);
        return true;
    default:
        assert(l->queue == MATCH_NONE);
        return false;
    }
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

bool match_check(const match_queues *m)
{
    return list_check(&m->posted, MATCH_POSTED) &&
           list_check(&m->unexpected, MATCH_UNEXPECTED);
}
