/* debug.c - --debug's checks of buffer ownership (see debug.h). */
#include "core/debug.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/units.h"

/* The kinds of calls, numbered apart ("isend #2" is the second isend). */
typedef enum debug_kind { KIND_SEND, KIND_RECV, KIND_ISEND, KIND_IRECV, KINDS } debug_kind;

static const char *const kind_name[KINDS] = {"send", "recv", "isend", "irecv"};

/* One call: a pending non-blocking operation, or a call being posted. */
typedef struct debug_op {
    cl_request *req;  /* the pending request (NULL while being posted) */
    const void *buf;  /* the program's buffer */
    size_t bytes;     /* its size (a receive's capacity) */
    void *shadow;     /* irecv: the buffer the transport writes (a pool block) */
    uint64_t sum;     /* isend: debug_hash of buf at the post */
    double posted;    /* seconds on the backend's clock */
    int peer;         /* dst, or src / CL_ANY_SOURCE, in the caller's communicator */
    int tag;          /* or CL_ANY_TAG */
    uint32_t seq;     /* 1, 2, ... among the calls of its kind this iteration */
    debug_kind kind;
} debug_op;

typedef struct debug_block {
    const void *p; /* what cl_alloc returned */
    size_t bytes;
} debug_block;

typedef struct debug_shadow {
    void *p;    /* malloc'd, cap bytes (at least 1) */
    size_t cap;
    bool used;  /* lent to a pending receive */
} debug_shadow;

struct debug_state {
    debug_op *ops;          /* pending non-blocking operations, in post order */
    size_t nops, ops_cap;
    debug_block *blocks;    /* cl_alloc blocks of this iteration, in call order */
    size_t nblocks, blocks_cap;
    debug_shadow *shadows;  /* the pool */
    size_t nshadows, shadows_cap;
    uint32_t calls[KINDS];  /* calls of each kind this iteration */
};

/* Room for one more element in *v (n in use, *cap allocated).  0 or
 * CL_ENOMEM with *v unchanged. */
static int reserve_one(void **v, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return 0;
    size_t want = *cap ? *cap * 2 : 8;
    void *more = realloc(*v, want * size);
    if (!more)
        return CL_ENOMEM;
    *v = more;
    *cap = want;
    return 0;
}

/* ---- the pieces ---- */

static uint64_t rotl(uint64_t x, int k)
{
    return x << k | x >> (64 - k);
}

/* One step of a lane: a bijection of h for each word w, and of w for each
 * h, so one changed word always changes the lane's end state. */
static uint64_t step(uint64_t h, uint64_t w)
{
    h = (h ^ w) * 0xff51afd7ed558ccdULL;
    return h ^ h >> 32;
}

/* Four independent lanes over 32-byte blocks keep the multiplier busy
 * (about a byte per cycle on a 2020s core), then the tail in one lane. */
uint64_t debug_hash(const void *buf, size_t bytes)
{
    const unsigned char *p = buf;
    uint64_t h[4] = {0x9e3779b97f4a7c15ULL ^ bytes, 0xbf58476d1ce4e5b9ULL,
                     0x94d049bb133111ebULL, 0xc4ceb9fe1a85ec53ULL};
    size_t i = 0;
    for (; i + 32 <= bytes; i += 32)
        for (int k = 0; k < 4; k++) {
            uint64_t w;
            memcpy(&w, p + i + 8 * (size_t)k, 8);
            h[k] = step(h[k], w);
        }
    uint64_t x = h[0] ^ rotl(h[1], 16) ^ rotl(h[2], 32) ^ rotl(h[3], 48);
    for (; i + 8 <= bytes; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        x = step(x, w);
    }
    for (; i < bytes; i++)
        x = step(x, p[i]);
    return step(x, bytes);
}

size_t debug_first_written(const void *buf, size_t bytes)
{
    const unsigned char *p = buf;
    const uint64_t all = 0x0101010101010101ULL * DEBUG_POISON;
    size_t i = 0;
    for (; i + 8 <= bytes; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        if (w != all)
            break;
    }
    for (; i < bytes; i++)
        if (p[i] != DEBUG_POISON)
            return i;
    return bytes;
}

/* ---- life ---- */

int debug_attach(cl_comm *c)
{
    if (c->debug)
        return 0;
    debug_state *d = calloc(1, sizeof *d);
    if (!d)
        return CL_ENOMEM;
    c->debug = d;
    return 0;
}

void debug_destroy(debug_state *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->nshadows; i++)
        free(d->shadows[i].p);
    free(d->shadows);
    free(d->ops);
    free(d->blocks);
    free(d);
}

void debug_detach(cl_comm *c)
{
    debug_destroy(c->debug);
    c->debug = NULL;
}

/* Pending operations stay: a request never completed is still the
 * transport's, and so is its shadow. */
void debug_iteration(cl_comm *c)
{
    debug_state *d = c->debug;
    if (!d)
        return;
    memset(d->calls, 0, sizeof d->calls);
    d->nblocks = 0;
}

void debug_alloc_note(cl_comm *c, const void *p, size_t bytes)
{
    debug_state *d = c->world->debug;
    /* Out of memory, the block goes unnamed: its buffers are named by address. */
    if (reserve_one((void **)&d->blocks, &d->blocks_cap, d->nblocks, sizeof *d->blocks))
        return;
    d->blocks[d->nblocks++] = (debug_block){.p = p, .bytes = bytes};
}

/* ---- shadows ---- */

/* The smallest free shadow of at least bytes (a new one if none); NULL
 * when out of memory. */
static void *shadow_take(debug_state *d, size_t bytes)
{
    debug_shadow *best = NULL;
    for (size_t i = 0; i < d->nshadows; i++) {
        debug_shadow *s = &d->shadows[i];
        if (!s->used && s->cap >= bytes && (!best || s->cap < best->cap))
            best = s;
    }
    if (!best) {
        if (reserve_one((void **)&d->shadows, &d->shadows_cap, d->nshadows, sizeof *d->shadows))
            return NULL;
        void *p = malloc(bytes ? bytes : 1);
        if (!p)
            return NULL;
        best = &d->shadows[d->nshadows++];
        *best = (debug_shadow){.p = p, .cap = bytes};
    }
    best->used = true;
    return best->p;
}

static void shadow_give(debug_state *d, void *p)
{
    for (size_t i = 0; i < d->nshadows; i++)
        if (d->shadows[i].p == p)
            d->shadows[i].used = false;
}

/* ---- words ---- */

/* "1 MiB at cl_alloc #1 + 512", or "... at 0x7ffc..." for a buffer that
 * is not in a cl_alloc block of this iteration. */
static char *where(const debug_state *d, const debug_op *op, char *out, size_t len)
{
    char sz[UNITS_BUF];
    units_size_str(sz, op->bytes);
    uintptr_t b = (uintptr_t)op->buf;
    for (size_t i = 0; i < d->nblocks; i++) {
        uintptr_t p = (uintptr_t)d->blocks[i].p;
        if (b >= p && b - p < (d->blocks[i].bytes ? d->blocks[i].bytes : 1)) {
            if (b == p)
                snprintf(out, len, "%s at cl_alloc #%zu", sz, i + 1);
            else
                snprintf(out, len, "%s at cl_alloc #%zu + %zu", sz, i + 1, (size_t)(b - p));
            return out;
        }
    }
    snprintf(out, len, "%s at %p", sz, op->buf);
    return out;
}

/* "isend #2 (dst=1, tag=0, 1 MiB at cl_alloc #1)" */
static char *describe(const debug_state *d, const debug_op *op, char *out, size_t len)
{
    char w[96], peer[16], tag[16];
    bool recv = op->kind == KIND_RECV || op->kind == KIND_IRECV;
    if (op->peer == CL_ANY_SOURCE)
        snprintf(peer, sizeof peer, "any");
    else
        snprintf(peer, sizeof peer, "%d", op->peer);
    if (op->tag == CL_ANY_TAG)
        snprintf(tag, sizeof tag, "any");
    else
        snprintf(tag, sizeof tag, "%d", op->tag);
    snprintf(out, len, "%s #%u (%s=%s, tag=%s, %s)", kind_name[op->kind], op->seq,
             recv ? "src" : "dst", peer, tag, where(d, op, w, sizeof w));
    return out;
}

static int report(cl_comm *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Hands a misuse to the backend; returns CL_ECHECK for the call to return. */
static int report(cl_comm *c, const char *fmt, ...)
{
    char msg[480];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (c->ops->misuse) {
        c->ops->misuse(c, msg);
    } else {
        char full[512];
        snprintf(full, sizeof full, "misuse: %s", msg);
        c->ops->fail(c, full);
    }
    return CL_ECHECK;
}

/* ---- overlaps ---- */

static bool overlap(const void *a, size_t an, const void *b, size_t bn)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return an && bn && a && b && x < y + bn && y < x + an;
}

/* The first pending operation whose buffer op's may not share: a pending
 * receive's for anything, a pending send's for a receive.  NULL if none. */
static const debug_op *conflict(const debug_state *d, const debug_op *op)
{
    bool recv = op->kind == KIND_RECV || op->kind == KIND_IRECV;
    for (size_t i = 0; i < d->nops; i++) {
        const debug_op *p = &d->ops[i];
        if ((recv || p->kind == KIND_IRECV) && overlap(op->buf, op->bytes, p->buf, p->bytes))
            return p;
    }
    return NULL;
}

static int report_conflict(cl_comm *c, const debug_op *op, const debug_op *p)
{
    char a[160], b[160];
    const debug_state *d = c->world->debug;
    bool recv = op->kind == KIND_RECV || op->kind == KIND_IRECV;
    return report(c, "%s would %s the buffer of %s before that %s completed",
                  describe(d, op, a, sizeof a), recv ? "write" : "read",
                  describe(d, p, b, sizeof b), p->kind == KIND_IRECV ? "receive" : "send");
}

/* ---- the calls ---- */

/* A new call of kind k on buf: numbered, checked against the pending ones. */
static int begin(cl_comm *c, debug_op *op, debug_kind k, const void *buf, size_t bytes,
                 int peer, int tag)
{
    debug_state *d = c->world->debug;
    *op = (debug_op){.buf = buf, .bytes = bytes, .peer = peer, .tag = tag,
                     .seq = ++d->calls[k], .kind = k, .posted = c->ops->now(c)};
    const debug_op *p = conflict(d, op);
    if (p)
        return report_conflict(c, op, p);
    return reserve_one((void **)&d->ops, &d->ops_cap, d->nops, sizeof *d->ops);
}

int debug_isend(cl_comm *c, const void *buf, size_t bytes, int dst, int tag, cl_request **req)
{
    debug_state *d = c->world->debug;
    bool blocking = c->world->blocking_call;
    debug_op op;
    int err = begin(c, &op, blocking ? KIND_SEND : KIND_ISEND, buf, bytes, dst, tag);
    if (err)
        return err;
    bool track = !blocking && buf && bytes;
    if (track)
        op.sum = debug_hash(buf, bytes);
    err = c->ops->isend(c, buf, bytes, comm_world_rank(c, dst), tag, c->ctx, req);
    if (err || !track)
        return err;
    op.req = *req;
    d->ops[d->nops++] = op;
    return 0;
}

int debug_irecv(cl_comm *c, void *buf, size_t bytes, int src, int tag, cl_request **req)
{
    debug_state *d = c->world->debug;
    bool blocking = c->world->blocking_call;
    int wsrc = src == CL_ANY_SOURCE ? CL_ANY_SOURCE : comm_world_rank(c, src);
    debug_op op;
    int err = begin(c, &op, blocking ? KIND_RECV : KIND_IRECV, buf, bytes, src, tag);
    if (err)
        return err;
    if (blocking || !buf || !bytes)
        return c->ops->irecv(c, buf, bytes, wsrc, tag, c->ctx, req);
    if (!(op.shadow = shadow_take(d, bytes)))
        return CL_ENOMEM;
    memcpy(op.shadow, buf, bytes); /* past the message's end the buffer stays as it was */
    memset(buf, DEBUG_POISON, bytes);
    err = c->ops->irecv(c, op.shadow, bytes, wsrc, tag, c->ctx, req);
    if (err) {
        memcpy(buf, op.shadow, bytes);
        shadow_give(d, op.shadow);
        return err;
    }
    op.req = *req;
    d->ops[d->nops++] = op;
    return 0;
}

int debug_complete(cl_comm *c, cl_request *req)
{
    debug_state *d = c->world->debug;
    size_t i = d->nops;
    while (i > 0 && d->ops[i - 1].req != req)
        i--;
    if (i == 0)
        return 0; /* not tracked: blocking, empty, or commlab's own */
    debug_op op = d->ops[i - 1];
    memmove(&d->ops[i - 1], &d->ops[i], (d->nops - i) * sizeof *d->ops);
    d->nops--;
    char what[160], t0[UNITS_BUF], t1[UNITS_BUF];
    units_time_str(t0, op.posted);
    units_time_str(t1, c->ops->now(c));
    if (op.kind == KIND_ISEND) {
        if (debug_hash(op.buf, op.bytes) == op.sum)
            return 0;
        return report(c, "the send buffer of %s was modified before the send completed "
                         "(posted at t = %s, completed at t = %s)",
                      describe(d, &op, what, sizeof what), t0, t1);
    }
    size_t at = debug_first_written(op.buf, op.bytes);
    unsigned char seen = at < op.bytes ? ((const unsigned char *)op.buf)[at] : 0;
    memcpy((void *)op.buf, op.shadow, op.bytes);
    shadow_give(d, op.shadow);
    if (at == op.bytes)
        return 0;
    return report(c, "the receive buffer of %s was written before the receive completed: "
                     "byte %zu is 0x%02x, not the poison 0x%02x (posted at t = %s, "
                     "completed at t = %s)",
                  describe(d, &op, what, sizeof what), at, seen, DEBUG_POISON, t0, t1);
}

_Static_assert(DEBUG_POISON == 0xdb, "debug_verify_hint names the poison");

/* Eight poison bytes in a row (or all that are left) are no coincidence. */
const char *debug_verify_hint(const cl_comm *c, const void *at, size_t left)
{
    size_t n = left < 8 ? left : 8;
    if (!c->world->debug || n == 0 || debug_first_written(at, n) < n)
        return "";
    return " - 0xdb is the poison --debug leaves in a receive buffer until the receive "
           "completes, so these bytes were read from one before its wait";
}
