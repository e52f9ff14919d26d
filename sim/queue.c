/*
 * queue.c - event queue: a 4-ary min-heap plus a few sorted runs.
 *
 * Every event lives in exactly one of two places:
 *   - a run: one of RUNS ring buffers, each sorted by (time, seq).  A push
 *     goes to the run whose last event is the latest one not later than
 *     it (best fit; an empty run fits anything, last); since seq only
 *     grows, appending keeps the run sorted.
 *   - heap: a 4-ary min-heap by (time, seq) for a push that fits no run.
 * Pop takes the smallest of the runs' heads and the heap's root, so the
 * order is exactly (time, seq) whatever the mix; the runs only change the
 * cost.  When ranks move in lockstep (every event at t + d pushed while
 * events at t are popped) nearly everything goes through one run in O(1),
 * with none of the heap's sifts through log(n) levels of scattered memory.
 * Several runs serve a few such delays at once: a training step's ranks
 * wait a message's time, a compute's and a longer one's, and the events
 * of each delay arrive in time order, so each delay keeps a run of its
 * own where one run would be parked by the first later event and send
 * the rest to the heap.  With random times the runs cost a few
 * comparisons a push and a pop, next to a heap operation that costs many;
 * in the worst case (every run parked by an early far-future push) it
 * degrades to the plain heap plus those comparisons.
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
/* Sorted runs: enough for the few delays a step's ranks wait at once;
 * each one costs a comparison on every push and pop. */
#define RUNS 4

/* (time, seq) order.  seq is unique per queue, so this is a strict total
 * order and two distinct events never tie.
 *
 * Heap comparisons are data-dependent branches that mispredict about half
 * the time, and that, not memory, is what a pop costs.  Times are >= +0.0
 * (push turns -0.0 into +0.0 and refuses NaN and negatives), and for such
 * doubles the IEEE bit pattern read as an unsigned integer has the same
 * order as the value, +inf included.  So (time, seq) becomes one 128-bit
 * unsigned key, compared without branches, so a sift no longer pays a
 * mispredicted branch at every level.  No event has the all-ones key (its
 * time would be a NaN): KEY_NONE stands for an empty run's head. */
static inline int64_t time_bits(double t)
{
    int64_t b;
    memcpy(&b, &t, sizeof(b));
    return b;
}

#ifdef __SIZEOF_INT128__
typedef unsigned __int128 ev_key_t;
#define KEY_NONE (~(ev_key_t)0)
static inline bool key_less(ev_key_t a, ev_key_t b)
{
    return a < b;
}
static inline bool key_none(ev_key_t a)
{
    return a == KEY_NONE;
}
static inline ev_key_t ev_key(const sim_event *a)
{
    return ((ev_key_t)(uint64_t)time_bits(a->time) << 64) | a->seq;
}
#else
typedef struct {
    uint64_t hi, lo; /* the time's bits, seq */
} ev_key_t;
#define KEY_NONE ((ev_key_t){UINT64_MAX, UINT64_MAX})
static inline bool key_less(ev_key_t a, ev_key_t b)
{
    return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo);
}
static inline bool key_none(ev_key_t a)
{
    return a.hi == UINT64_MAX && a.lo == UINT64_MAX;
}
static inline ev_key_t ev_key(const sim_event *a)
{
    return (ev_key_t){(uint64_t)time_bits(a->time), a->seq};
}
#endif

static inline bool ev_less(const sim_event *a, const sim_event *b)
{
    return key_less(ev_key(a), ev_key(b));
}

typedef struct run {
    sim_event *ev; /* ring buffer, sorted from head on */
    size_t head;   /* index of the first event */
    size_t len;    /* events in the run */
    size_t cap;    /* slots; 0 or a power of two */
} run;

struct sim_queue {
    ev_key_t first[RUNS]; /* each run's first event's key, KEY_NONE when empty */
    int64_t last[RUNS];   /* each run's last event's time as time_bits, -1 when empty */
    run runs[RUNS];
    int lead;             /* the run with the smallest first (any, all empty) */
    sim_event *heap;      /* 4-ary min-heap by (time, seq) */
    size_t heap_len;      /* events in heap */
    size_t heap_cap;      /* slots allocated in heap */
    uint64_t next_seq;    /* seq given to the next push */
};

int sim_queue_create(sim_queue **out)
{
    sim_queue *q = calloc(1, sizeof(*q));
    if (q == NULL)
        return CL_ENOMEM;
    for (int r = 0; r < RUNS; r++) {
        q->first[r] = KEY_NONE;
        q->last[r] = -1;
    }
    *out = q;
    return 0;
}

void sim_queue_destroy(sim_queue *q)
{
    if (q == NULL)
        return;
    free(q->heap);
    for (int r = 0; r < RUNS; r++)
        free(q->runs[r].ev);
    free(q);
}

size_t sim_queue_len(const sim_queue *q)
{
    size_t n = q->heap_len;
    for (int r = 0; r < RUNS; r++)
        n += q->runs[r].len;
    return n;
}

/* ---- growth: on failure nothing is changed ---- */

/* Twice the events at *ev (MIN_CAP for none), in order: realloc, which
 * moves a big block's pages (mremap) rather than copying them and
 * faulting them in again. */
static int events_double(sim_event **ev, size_t *cap)
{
    size_t n = *cap ? *cap * 2 : MIN_CAP;
    if (n > SIZE_MAX / sizeof(sim_event))
        return CL_ENOMEM;
    sim_event *p = realloc(*ev, n * sizeof(*p));
    if (p == NULL)
        return CL_ENOMEM;
    *ev = p;
    *cap = n;
    return 0;
}

static int heap_reserve(sim_queue *q)
{
    return q->heap_len < q->heap_cap ? 0 : events_double(&q->heap, &q->heap_cap);
}

static int run_reserve(run *u)
{
    if (u->len < u->cap)
        return 0;
    if (u->head == 0) /* in order already */
        return events_double(&u->ev, &u->cap);
    size_t cap = u->cap * 2;
    if (cap > SIZE_MAX / sizeof(sim_event))
        return CL_ENOMEM;
    sim_event *r = malloc(cap * sizeof(*r));
    if (r == NULL)
        return CL_ENOMEM;
    /* Unwrap: the old ring is full, its events run head..end then 0..head. */
    size_t first = u->cap - u->head;
    if (u->len > 0) {
        memcpy(r, u->ev + u->head, first * sizeof(*r));
        memcpy(r + first, u->ev, u->head * sizeof(*r));
    }
    free(u->ev);
    u->ev = r;
    u->head = 0;
    u->cap = cap;
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
    if (end - c == ARITY) {
        /* Full family, the common case: a two-round tournament on keys
         * loaded once, written so that it compiles to conditional moves. */
        ev_key_t k0 = ev_key(&h[c]), k1 = ev_key(&h[c + 1]);
        ev_key_t k2 = ev_key(&h[c + 2]), k3 = ev_key(&h[c + 3]);
        size_t a = c + key_less(k1, k0);
        ev_key_t ka = key_less(k1, k0) ? k1 : k0;
        size_t b = c + 2 + key_less(k3, k2);
        ev_key_t kb = key_less(k3, k2) ? k3 : k2;
        return key_less(kb, ka) ? b : a;
    }
    size_t m = c;
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

/* Out of line, so that a pop from a run saves no registers. */
__attribute__((noinline)) static void heap_pop(sim_queue *q, sim_event *out)
{
    *out = q->heap[0];
    q->heap_len--;
    if (q->heap_len > 0) {
        sim_event last = q->heap[q->heap_len];
        heap_sift_down(q->heap, q->heap_len, &last);
    }
}

/* ---- runs ---- */

static inline sim_event *run_at(const run *u, size_t k)
{
    return &u->ev[(u->head + k) & (u->cap - 1)];
}

/* The run a push at t (as time_bits) goes to: the one whose last event is
 * the latest not later than t, or -1 when none fits.  Without a branch to
 * mispredict: t - last is the gap, from 0 up for a run that fits (an empty
 * run's -1 gives the widest, so it is taken last) and negative, so above
 * INT64_MAX as unsigned, for one that does not; the smallest gap wins. */
static inline int run_fit(const sim_queue *q, int64_t t)
{
    int best = 0;
    uint64_t gap = (uint64_t)(t - q->last[0]);
    for (int r = 1; r < RUNS; r++) {
        uint64_t g = (uint64_t)(t - q->last[r]);
        best = g < gap ? r : best;
        gap = g < gap ? g : gap;
    }
    return gap <= INT64_MAX ? best : -1;
}

/* The event at t just written past run r's end joins it.  Only a run that
 * was empty gets a new first, which may lead. */
static inline void run_grew(sim_queue *q, int r, int64_t t)
{
    if (q->runs[r].len++ == 0) {
        q->first[r] = ev_key(run_at(&q->runs[r], 0));
        if (key_less(q->first[r], q->first[q->lead]))
            q->lead = r;
    }
    q->last[r] = t;
}

/* The lead again, after a pop changed a run's first. */
static inline void run_lead(sim_queue *q)
{
    int m = 0;
    for (int r = 1; r < RUNS; r++)
        m = key_less(q->first[r], q->first[m]) ? r : m;
    q->lead = m;
}

/* Moves the leading run's first event to *out; the run is not empty. */
static inline void run_shift(sim_queue *q, sim_event *out)
{
    int r = q->lead;
    run *u = &q->runs[r];
    *out = u->ev[u->head];
    u->head = (u->head + 1) & (u->cap - 1);
    if (--u->len > 0) {
        q->first[r] = ev_key(&u->ev[u->head]);
    } else {
        q->first[r] = KEY_NONE;
        q->last[r] = -1;
    }
    run_lead(q);
}

/* Whether the next event is the leading run's head rather than the heap's
 * root. */
static inline bool run_next(const sim_queue *q)
{
    ev_key_t k = q->first[q->lead];
    if (key_none(k))
        return false;
    return q->heap_len == 0 || key_less(k, ev_key(&q->heap[0]));
}

/* ---- queue ---- */

/* The push that does not fit the fast path: its run must grow, or x goes
 * to the heap.  x's time and seq are final.  Out of line, so that the fast
 * path saves no registers. */
__attribute__((noinline)) static int push_slow(sim_queue *q, int r, const sim_event *x)
{
    if (r >= 0) {
        run *u = &q->runs[r];
        if (run_reserve(u) != 0)
            return CL_ENOMEM;
        *run_at(u, u->len) = *x;
        run_grew(q, r, time_bits(x->time));
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
    int r = run_fit(q, time_bits(t));
    if (r < 0 || q->runs[r].len == q->runs[r].cap) {
        sim_event x = *ev;
        x.time = t;
        x.seq = q->next_seq;
        return push_slow(q, r, &x);
    }
    /* The common case, kept free of the rest: a run with room, written in
     * place. */
    run *u = &q->runs[r];
    sim_event *slot = run_at(u, u->len);
    *slot = *ev;
    slot->time = t;
    slot->seq = q->next_seq++;
    run_grew(q, r, time_bits(t));
    return 0;
}

bool sim_queue_pop(sim_queue *q, sim_event *out)
{
    if (run_next(q)) {
        run_shift(q, out);
        return true;
    }
    if (q->heap_len == 0)
        return false;
    heap_pop(q, out);
    return true;
}

const sim_event *sim_queue_peek(const sim_queue *q)
{
    if (run_next(q))
        return &q->runs[q->lead].ev[q->runs[q->lead].head];
    return q->heap_len > 0 ? &q->heap[0] : NULL;
}

const sim_event *sim_queue_soon(const sim_queue *q, size_t k)
{
    return k < q->runs[0].len ? run_at(&q->runs[0], k) : NULL;
}

static bool run_check(const sim_queue *q, int r)
{
    const run *u = &q->runs[r];
    if (u->len > u->cap || (u->cap & (u->cap - 1)))
        return false;
    if (u->len == 0)
        return key_none(q->first[r]) && q->last[r] == -1;
    ev_key_t first = ev_key(run_at(u, 0));
    if (key_less(q->first[r], first) || key_less(first, q->first[r]) ||
        q->last[r] != time_bits(run_at(u, u->len - 1)->time))
        return false;
    for (size_t k = 0; k < u->len; k++) {
        const sim_event *e = run_at(u, k);
        if (!(e->time >= 0.0) || e->seq >= q->next_seq)
            return false;
        if (k > 0 && !ev_less(run_at(u, k - 1), e))
            return false;
    }
    return true;
}

bool sim_queue_check(const sim_queue *q)
{
    if (q->heap_len > q->heap_cap || q->lead < 0 || q->lead >= RUNS)
        return false;
    for (int r = 0; r < RUNS; r++)
        if (key_less(q->first[r], q->first[q->lead]))
            return false;
    for (size_t i = 0; i < q->heap_len; i++) {
        const sim_event *e = &q->heap[i];
        if (!(e->time >= 0.0) || e->seq >= q->next_seq)
            return false;
        if (i > 0 && ev_less(e, &q->heap[(i - 1) / ARITY]))
            return false;
    }
    for (int r = 0; r < RUNS; r++)
        if (!run_check(q, r))
            return false;
    return true;
}
