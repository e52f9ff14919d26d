/*
 * queue.c - event queue: a 4-ary min-heap plus a sorted FIFO run.
 *
 * Every event lives in exactly one of two places:
 *   - fifo: a ring buffer whose events are sorted by (time, seq).  A push
 *     goes here when the ring is empty or the event is not earlier than the
 *     ring's last event; since seq only grows, appending keeps it sorted.
 *   - heap: a 4-ary min-heap by (time, seq) for every other push.
 * Pop takes the smaller of the ring's head and the heap's root, so the order
 * is exactly (time, seq) whatever the mix; the ring only changes the cost.
 * When ranks move in lockstep (every event at t + d pushed while events at t
 * are popped) nearly everything goes through the ring in O(1), with none
 * of the heap's sifts through log(n) levels of scattered memory; with
 * random times the ring costs one comparison a push and a pop, next to a
 * heap operation that costs many.  In the worst case (an early
 * far-future push parks the ring) it degrades to the plain heap plus one
 * comparison per pop.
 *
 * 4-ary rather than binary: half the depth, and the four children of a node
 * are adjacent in memory, so a sift-down touches fewer cache lines.  Events
 * are stored by value (40 bytes) so a pop never chases a pointer.
 */
#include "sim/queue.h"

#include <stdlib.h>
#include <string.h>

#include "commlab.h"

#define ARITY 4
#define MIN_CAP 64

struct sim_queue {
    sim_event *heap;   /* 4-ary min-heap by (time, seq) */
    size_t heap_len;   /* events in heap */
    size_t heap_cap;   /* slots allocated in heap */
    sim_event *ring;   /* sorted run, ring buffer */
    size_t ring_head;  /* index of the ring's first event */
    size_t ring_len;   /* events in ring */
    size_t ring_cap;   /* slots in ring; 0 or a power of two */
    uint64_t next_seq; /* seq given to the next push */
};

/* (time, seq) order.  seq is unique per queue, so this is a strict total
 * order and two distinct events never tie.
 *
 * Heap comparisons are data-dependent branches that mispredict about half
 * the time, and that, not memory, is what a pop costs.  Times are >= +0.0
 * (push turns -0.0 into +0.0 and refuses NaN and negatives), and for such
 * doubles the IEEE bit pattern read as an unsigned integer has the same
 * order as the value, +inf included.  So (time, seq) becomes one 128-bit
 * unsigned key, compared without branches, so a sift no longer pays a
 * mispredicted branch at every level. */
#ifdef __SIZEOF_INT128__
typedef unsigned __int128 ev_key_t;
static inline ev_key_t ev_key(const sim_event *a)
{
    uint64_t t;
    memcpy(&t, &a->time, sizeof(t));
    return ((ev_key_t)t << 64) | a->seq;
}
static inline bool ev_less(const sim_event *a, const sim_event *b)
{
    return ev_key(a) < ev_key(b);
}
#else
static inline bool ev_less(const sim_event *a, const sim_event *b)
{
    return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}
#endif

int sim_queue_create(sim_queue **out)
{
    sim_queue *q = calloc(1, sizeof(*q));
    if (q == NULL)
        return CL_ENOMEM;
    *out = q;
    return 0;
}

void sim_queue_destroy(sim_queue *q)
{
    if (q == NULL)
        return;
    free(q->heap);
    free(q->ring);
    free(q);
}

size_t sim_queue_len(const sim_queue *q)
{
    return q->heap_len + q->ring_len;
}

/* ---- growth: on failure nothing is changed ---- */

static int heap_reserve(sim_queue *q)
{
    if (q->heap_len < q->heap_cap)
        return 0;
    size_t cap = q->heap_cap ? q->heap_cap * 2 : MIN_CAP;
    if (cap > SIZE_MAX / sizeof(sim_event))
        return CL_ENOMEM;
    sim_event *h = realloc(q->heap, cap * sizeof(*h));
    if (h == NULL)
        return CL_ENOMEM;
    q->heap = h;
    q->heap_cap = cap;
    return 0;
}

static int ring_reserve(sim_queue *q)
{
    if (q->ring_len < q->ring_cap)
        return 0;
    size_t cap = q->ring_cap ? q->ring_cap * 2 : MIN_CAP;
    if (cap > SIZE_MAX / sizeof(sim_event))
        return CL_ENOMEM;
    sim_event *r = malloc(cap * sizeof(*r));
    if (r == NULL)
        return CL_ENOMEM;
    /* Unwrap: the old ring is full, its events run head..end then 0..head. */
    size_t first = q->ring_cap - q->ring_head;
    if (q->ring_len > 0) {
        memcpy(r, q->ring + q->ring_head, first * sizeof(*r));
        memcpy(r + first, q->ring, q->ring_head * sizeof(*r));
    }
    free(q->ring);
    q->ring = r;
    q->ring_head = 0;
    q->ring_cap = cap;
    return 0;
}

/* ---- heap ---- */

static void heap_sift_up(sim_event *h, size_t i, const sim_event *x)
{
    while (i > 0) {
        size_t p = (i - 1) / ARITY;
        if (!ev_less(x, &h[p]))
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = *x;
}

/* Index of the smallest of h[c], ..., h[end - 1]; c < end. */
static inline size_t min_child(const sim_event *h, size_t c, size_t end)
{
    size_t m = c;
#ifdef __SIZEOF_INT128__
    if (end - c == ARITY) {
        /* Full family, the common case: a two-round tournament on keys
         * loaded once, written so that it compiles to conditional moves. */
        ev_key_t k0 = ev_key(&h[c]), k1 = ev_key(&h[c + 1]);
        ev_key_t k2 = ev_key(&h[c + 2]), k3 = ev_key(&h[c + 3]);
        size_t a = c + (k1 < k0);
        ev_key_t ka = k1 < k0 ? k1 : k0;
        size_t b = c + 2 + (k3 < k2);
        ev_key_t kb = k3 < k2 ? k3 : k2;
        return kb < ka ? b : a;
    }
#endif
    for (size_t j = c + 1; j < end; j++)
        if (ev_less(&h[j], &h[m]))
            m = j;
    return m;
}

/* Put x at the root's hole and restore the heap over h[0..n). */
static void heap_sift_down(sim_event *h, size_t n, const sim_event *x)
{
    size_t i = 0;
    for (;;) {
        size_t c = ARITY * i + 1;
        if (c >= n)
            break;
        size_t end = n - c < ARITY ? n : c + ARITY;
        size_t m = min_child(h, c, end);
        if (!ev_less(&h[m], x))
            break;
        h[i] = h[m];
        i = m;
    }
    h[i] = *x;
}

/* Out of line, so that a pop from the ring saves no registers. */
__attribute__((noinline)) static void heap_pop(sim_queue *q, sim_event *out)
{
    *out = q->heap[0];
    q->heap_len--;
    if (q->heap_len > 0) {
        sim_event last = q->heap[q->heap_len];
        heap_sift_down(q->heap, q->heap_len, &last);
    }
}

/* ---- queue ---- */

static inline sim_event *ring_at(const sim_queue *q, size_t k)
{
    return &q->ring[(q->ring_head + k) & (q->ring_cap - 1)];
}

/* The push that does not fit the ring's fast path: the ring must grow, or
 * x goes to the heap.  x's time and seq are final.  Out of line, so that
 * the fast path saves no registers. */
__attribute__((noinline)) static int push_slow(sim_queue *q, const sim_event *x)
{
    if (q->ring_len == 0 || x->time >= ring_at(q, q->ring_len - 1)->time) {
        if (ring_reserve(q) != 0)
            return CL_ENOMEM;
        *ring_at(q, q->ring_len) = *x;
        q->ring_len++;
    } else {
        if (heap_reserve(q) != 0)
            return CL_ENOMEM;
        heap_sift_up(q->heap, q->heap_len, x);
        q->heap_len++;
    }
    q->next_seq++;
    return 0;
}

int sim_queue_push(sim_queue *q, const sim_event *ev)
{
    if (!(ev->time >= 0.0)) /* also false for NaN */
        return CL_EINVAL;
    double t = ev->time + 0.0; /* -0.0 becomes +0.0, for the integer keys */
    /* The common case, kept free of the rest: a ring with room whose last
     * event is not later. */
    size_t len = q->ring_len;
    if (len == 0 || len == q->ring_cap || t < ring_at(q, len - 1)->time) {
        sim_event x = *ev;
        x.time = t;
        x.seq = q->next_seq;
        return push_slow(q, &x);
    }
    sim_event *slot = ring_at(q, len);
    *slot = *ev;
    slot->time = t;
    slot->seq = q->next_seq++;
    q->ring_len = len + 1;
    return 0;
}

/* True when the next event is the ring's head rather than the heap's root. */
static inline bool ring_first(const sim_queue *q)
{
    if (q->ring_len == 0)
        return false;
    return q->heap_len == 0 || ev_less(&q->ring[q->ring_head], &q->heap[0]);
}

bool sim_queue_pop(sim_queue *q, sim_event *out)
{
    if (ring_first(q)) {
        *out = q->ring[q->ring_head];
        q->ring_head = (q->ring_head + 1) & (q->ring_cap - 1);
        q->ring_len--;
        return true;
    }
    if (q->heap_len == 0)
        return false;
    heap_pop(q, out);
    return true;
}

const sim_event *sim_queue_peek(const sim_queue *q)
{
    if (ring_first(q))
        return &q->ring[q->ring_head];
    return q->heap_len > 0 ? &q->heap[0] : NULL;
}

const sim_event *sim_queue_soon(const sim_queue *q, size_t k)
{
    return k < q->ring_len ? ring_at(q, k) : NULL;
}

bool sim_queue_check(const sim_queue *q)
{
    if (q->heap_len > q->heap_cap || q->ring_len > q->ring_cap)
        return false;
    if (q->ring_cap & (q->ring_cap - 1))
        return false;
    for (size_t i = 0; i < q->heap_len; i++) {
        const sim_event *e = &q->heap[i];
        if (!(e->time >= 0.0) || e->seq >= q->next_seq)
            return false;
        if (i > 0 && ev_less(e, &q->heap[(i - 1) / ARITY]))
            return false;
    }
    for (size_t k = 0; k < q->ring_len; k++) {
        const sim_event *e = ring_at(q, k);
        if (!(e->time >= 0.0) || e->seq >= q->next_seq)
            return false;
        if (k > 0 && !ev_less(ring_at(q, k - 1), e))
            return false;
    }
    return true;
}
