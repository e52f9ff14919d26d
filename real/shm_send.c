/*
 * shm_send.c - the shm transport's producing side: records written into a
 * ring toward one destination, the outgoing queues, cl_isend (real/shm.c
 * says what the records are; real/shm_impl.h has what the files share).
 */
#include <stdlib.h>
#include <string.h>

#include "core/comm.h"
#include "real/shm_impl.h"

/* Sets (set) or clears bits [from, from + n) of a ring's raw map, taken
 * modulo lines (a multiple of 64: a word never wraps). */
static void raw_mark(uint64_t *map, uint64_t from, uint64_t n, uint64_t lines, bool set)
{
    while (n) {
        uint64_t i = from % lines, bit = i % 64, k = 64 - bit < n ? 64 - bit : n;
        uint64_t m = (k == 64 ? ~(uint64_t)0 : ((uint64_t)1 << k) - 1) << bit;
        map[i / 64] = set ? map[i / 64] | m : map[i / 64] & ~m;
        from += k;
        n -= k;
    }
}

/* Copies memory into a ring at byte offset `at` of it, wrapping at its
 * end. */
static void ring_write(const shm_rank *s, unsigned char *rg, size_t at, const void *src, size_t len)
{
    at %= s->ring_bytes;
    size_t first = s->ring_bytes - at < len ? s->ring_bytes - at : len;
    memcpy(rg + at, src, first);
    if (first < len)
        memcpy(rg, (const char *)src + first, len - first);
}

/* ---- producing ---- */

/* Room for a record of len payload bytes from byte off toward dst, with
 * the line after it free and holding no old payload (real/shm.c, "Old
 * laps"), or NULL. */
static shm_hdr *reserve(shm_rank *s, int dst, size_t off, uint64_t len)
{
    shm_out *o = &s->out[dst];
    uint64_t end = o->pos + shm__record_lines(off, len) + 1, lines = s->area->ring_lines;
    if (end - o->consumed > lines) {
        o->consumed = atomic_load_explicit(&s->consumed[s->me * s->n + dst].lines,
                                           memory_order_acquire);
        if (end - o->consumed > lines)
            return NULL;
    }
    unsigned char *rg = shm__ring(s, s->me, dst);
    uint64_t after = (end - 1) % lines;
    if (o->raw[after / 64] >> (after % 64) & 1) {
        atomic_store_explicit(&((shm_hdr *)(rg + after * LINE))->seq, 0, memory_order_relaxed);
        raw_mark(o->raw, after, 1, lines, false);
    }
    return (shm_hdr *)(rg + (o->pos % lines) * LINE);
}

/* Writes the payload of a reserved record from byte off and publishes it. */
static void publish(shm_rank *s, int dst, shm_hdr *h, uint32_t kind, size_t off,
                    const void *data, uint64_t len)
{
    shm_out *o = &s->out[dst];
    unsigned char *rg = shm__ring(s, s->me, dst);
    uint64_t lines = s->area->ring_lines;
    h->kind = kind;
    h->len = (uint32_t)len;
    uint64_t n = shm__record_lines(off, len);
    if (off == SMALL_OFF) {
        const char *from = data;
        size_t piece, at = shm__small_piece(o->pos, lines, 0, len, &piece), done = piece;
        memcpy(rg + at, from, piece);
        for (uint64_t k = 1; k < n; k++, done += piece) {
            at = shm__small_piece(o->pos, lines, k, len, &piece);
            atomic_store_explicit(&((shm_hdr *)(rg + at - STAMP))->seq, 0, memory_order_relaxed);
            if (piece == LINE - STAMP)
                memcpy(rg + at, from + done, LINE - STAMP);
            else
                memcpy(rg + at, from + done, piece);
        }
    } else if (len) {
        ring_write(s, rg, (o->pos % lines) * LINE + off, data, (size_t)len);
    }
    atomic_store_explicit(&h->seq, o->pos + 1, memory_order_release);
    raw_mark(o->raw, o->pos, n > SHORT_LINES ? 1 : n, lines, false);
    if (n > SHORT_LINES)
        raw_mark(o->raw, o->pos + 1, n - 1, lines, true);
    o->pos += n;
}

enum { INJECT_FULL, INJECT_MORE, INJECT_LAST };

/* Writes the next record of r toward dst: INJECT_FULL when the ring has no
 * room, INJECT_MORE when r has more records to write, INJECT_LAST when this
 * was its last one. */
static int inject(shm_rank *s, int dst, shm_req *r)
{
    if (r->x.kind == XFER_CTRL) {
        shm_hdr *h = reserve(s, dst, PAYLOAD_OFF, 0);
        if (!h)
            return INJECT_FULL;
        h->total = r->ctrl[0];
        h->sum = r->ctrl[1];
        memcpy(h->arg, &r->ctrl[2], sizeof h->arg);
        publish(s, dst, h, r->ctrl_kind, PAYLOAD_OFF, NULL, 0);
        return INJECT_LAST;
    }
    if (r->x.kind == XFER_SEND && !r->x.eager && r->x.phase == SEND_QUEUED) {
        shm_hdr *h = reserve(s, dst, PAYLOAD_OFF, 0);
        if (!h)
            return INJECT_FULL;
        h->tag = r->x.tag;
        h->ctx = r->x.ctx;
        h->total = r->x.bytes;
        h->sum = r->x.sum;
        h->arg[0] = (uint64_t)(uintptr_t)r->x.sbuf;
        h->arg[1] = (uint64_t)(uintptr_t)r;
        publish(s, dst, h, REC_RTS, PAYLOAD_OFF, NULL, 0);
        r->x.phase = SEND_WAIT_PEER;
        return INJECT_LAST;
    }
    uint64_t len = r->x.bytes - r->off;
    if (len > s->area->max_payload)
        len = s->area->max_payload;
    bool first = r->x.kind != XFER_STREAM && r->off == 0;
    bool small = first && len == r->x.bytes && len && len <= SMALL_MAX && !s->x.check;
    size_t off = small ? SMALL_OFF : PAYLOAD_OFF;
    shm_hdr *h = reserve(s, dst, off, len);
    if (!h)
        return INJECT_FULL;
    uint32_t kind = REC_FRAG;
    if (r->x.kind == XFER_STREAM) {
        kind = REC_RDATA;
        h->total = r->peer_cookie;
        h->sum = r->off;
    } else if (first) {
        kind = small ? REC_SMALL : REC_EAGER;
        h->tag = r->x.tag;
        h->ctx = r->x.ctx;
        if (!small) {
            h->total = r->x.bytes;
            h->sum = r->x.sum;
        }
        if (s->x.base.tracing)
            r->x.started = rank_now(&s->x.base);
    }
    publish(s, dst, h, kind, off, (const char *)r->x.sbuf + r->off, len);
    r->off += len;
    return r->off == r->x.bytes ? INJECT_LAST : INJECT_MORE;
}

/* Puts as much of dst's queue into the ring as fits, in order. */
void shm__push(shm_rank *s, int dst)
{
    shm_out *o = &s->out[dst];
    bool wrote = false;
    shm_req *r;
    while ((r = o->head) != NULL) {
        int st = inject(s, dst, r);
        if (st == INJECT_FULL)
            break;
        wrote = true;
        if (st == INJECT_MORE)
            continue;
        o->head = (shm_req *)r->x.next;
        if (!o->head)
            o->tail = NULL;
        r->x.next = NULL;
        if (r->x.kind != XFER_SEND || r->x.eager)
            xfer_complete(&s->x, &r->x, 0);
    }
    if (wrote)
        shm__notify(s, dst);
}

/* A control record toward dst, behind whatever is queued: its header's
 * total, sum and arg[0..2]. */
void shm__send_ctrl(shm_rank *s, int dst, uint32_t kind, uint64_t total, uint64_t sum,
                      uint64_t a0, uint64_t a1, uint64_t a2)
{
    shm_req *r = (shm_req *)xfer_req_new(&s->x);
    if (!r) {
        xfer_fatal(&s->x, CL_ENOMEM, "out of memory queueing a control record");
        return;
    }
    r->x.kind = XFER_CTRL;
    r->ctrl_kind = (uint8_t)kind;
    r->ctrl[0] = total;
    r->ctrl[1] = sum;
    r->ctrl[2] = a0;
    r->ctrl[3] = a1;
    r->ctrl[4] = a2;
    shm__enqueue(s, dst, r);
    shm__push(s, dst);
}

/* ---- comm_ops ---- */

int shm__isend(cl_comm *c, const void *buf, size_t bytes, int dst, int tag, uint32_t ctx,
                     cl_request **out)
{
    shm_rank *s = c->world->backend;
    if (s->x.failed)
        return s->x.failed;
    rank_active(&s->x.base);
    shm_req *r = (shm_req *)xfer_send_new(&s->x, buf, bytes, dst, tag, ctx, s->eager_limit,
                                          &s->out[dst].nmsg);
    if (!r)
        return CL_ENOMEM;
    *out = &r->x.base;
    shm__enqueue(s, dst, r);
    shm__push(s, dst);
    return 0;
}
