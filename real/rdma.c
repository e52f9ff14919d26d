/*
 * rdma.c - the rdma transport's messages, through libfabric (real/rdma.h
 * says which file does what).
 *
 * Every rank opens one reliable datagram endpoint (FI_EP_RDM) on the run's
 * provider, with one completion queue for what it sends and receives and an
 * address vector of every rank (addresses come from the bootstrap).  The
 * progress engine is fi_cq_read: polled while a rank waits, computes or
 * posts, and fi_cq_sread (the queue's wait object) once a wait has spun
 * for a while with nothing to do.
 *
 * The envelope.  commlab's (kind, source, context, tag) is one 64-bit word,
 *     63..62 kind   61..46 source rank   45..31 context   30..0 tag
 * kind 0 a message, 1 its request to send (rendezvous), 2 a control record,
 * 3 rendezvous data sent as a tagged message; the context gets 15 bits
 * there (its even/odd bit and 14 of a hash).  A second word carries the
 * full 32-bit context and the low 32 bits of the message's number (the
 * records pair sends with receives by it).  What follows the envelope is
 * the body: an eager message's --check sum (only in --check runs) and its
 * payload, a request to send's rdma_rts, or a control record's rdma_ctl.
 *
 * Matching: one of two modes per provider (rdma_area.own_match, chosen by
 * rdma_info.c's rdma__own_match()).
 *   - libfabric's (tcp, and NIC providers): the envelope's words are the
 *     message's tag and its remote CQ data (fi_tinjectdata/fi_tsenddata),
 *     so an 8-byte message is 8 bytes on the wire and fits any provider's
 *     inject size.  A receive asks for kind 0 with the rendezvous bit
 *     ignored, so one posted receive takes a message or its request to
 *     send, whichever comes; CL_ANY_SOURCE and CL_ANY_TAG ignore the source
 *     or tag bits.  The completion's tag and data say what arrived; two
 *     contexts colliding in their 15 bits fail loudly (CL_EPROTO) instead of
 *     delivering.  A receive is posted as up to three pieces (fi_trecvv):
 *     the --check sum, the receive buffer (a small one: the request's own
 *     SMALL_RECV bytes, copied out), and a scratch area for what an eager
 *     message has beyond the buffer, so the provider never truncates:
 *     commlab sees the whole size and fails the receive with CL_ETRUNC
 *     itself, naming both sizes.  A request to send lands in the first
 *     pieces too (the receive's buffer is the transport's until it
 *     completes, and the read overwrites it).
 *   - commlab's (shm of libfabric 1.17): every message, request to send and
 *     control record is an untagged message, envelope first, into receive
 *     buffers kept posted (FI_MULTI_RECV), matched by commlab; rdma_pool.c
 *     says how and why.
 *
 * Protocols, with commlab's own eager limit (never the provider's):
 *   - eager (bytes <= limit): envelope and body go out at once, by
 *     fi_tinjectdata/fi_inject when they fit the provider's inject size,
 *     else from a copy (a bounce buffer, given back when the provider is
 *     done with it and kept for the next message).  The send completes
 *     once injected, as in the model: head-to-head eager sends never wait
 *     for a receive.  (Sending from the pattern's buffer instead would
 *     make the send wait for the provider's completion, which on shm
 *     above its inject size comes only once the receiver has read it.)
 *   - rendezvous (above the limit), the RDMA way: the sender registers its
 *     buffer (fi_mr_reg, cached: rdma_mr.c) and sends the request to send
 *     with the buffer's address and key.  When a receive matches it, the
 *     receiver pulls the data with fi_read straight into its buffer (in
 *     pieces of at most READ_CHUNK) and answers FIN, which completes the
 *     send.  A receive too small answers NACK (the send completes, the
 *     receive fails with CL_ETRUNC).  A provider without RMA (or a run with
 *     real_opts.rdma_no_rma) answers CTS instead, after posting a tagged
 *     receive for the data, and the sender sends the data as one tagged
 *     message of kind 3 addressed to that receive.  Either way a send above
 *     the limit waits for its receive, so the deadlock pattern deadlocks at
 *     the same size as on shm and tcp.
 *   - closing: after the last barrier every rank sends BYE to every other
 *     and waits (at most CLOSE_SECONDS) for theirs and for its own sends
 *     to complete, so no endpoint closes under a message still on its way.
 *
 * A completion queue error other than a truncated receive fails the rank
 * (CL_EPEER): most likely a peer died, which the launcher names better, so
 * in local runs the rank waits a moment first (see tcp.c's lost()).
 *
 * Byte order: envelopes and bodies travel in the host's order; ranks of one
 * run share an architecture.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "core/units.h"
#include "real/boot.h"
#include "real/rdma_impl.h"
#include "real/world.h"
#include "real/xfer.h"

#define RDMA_MAGIC 0xc1d4u
#define CTRL_RECVS 64                /* control receives kept posted (libfabric's matching) */
#define INJECT_MAX 4096              /* bytes commlab assembles for one inject */
#define BOUNCE_KEEP 8                /* eager copies kept for reuse ... */
#define BOUNCE_KEEP_MAX ((size_t)1 << 20) /* ... when the largest is at most this */
#define CQ_BATCH 16                  /* completions per fi_cq_read */
#define READ_CHUNK ((uint64_t)64 << 20) /* one fi_read moves at most this */
#define RETRY_SECONDS 60.0           /* a provider that refuses to post this long fails */
#define CLOSE_SECONDS 2.0            /* the closing handshake waits at most this */
#define LOSS_GRACE_NS 500000000L     /* local runs: let the launcher name a dead rank */

static const comm_ops rdma_ops;

/* ---- helpers ---- */

/* A peer is most likely dead: the launcher reports that better, so a
 * local rank lets it (it is killed meanwhile) before failing itself. */
static void peer_lost(rdma_rank *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void peer_lost(rdma_rank *t, const char *fmt, ...)
{
    if (t->x.failed || t->closing)
        return;
    cl_diag msg;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg.msg, sizeof msg.msg, fmt, ap);
    va_end(ap);
    xfer_fatal(&t->x, CL_EPEER, "%s", msg.msg);
    struct timespec ts = {0, LOSS_GRACE_NS};
    nanosleep(&ts, NULL);
}

static uint64_t ctx_bits(uint32_t ctx)
{
    uint32_t h = (ctx >> 1) * 0x9e3779b1u;
    return ((uint64_t)(h >> 18) << 1 | (ctx & 1u)) & 0x7fff;
}

static uint64_t tag_of(int kind, int src, uint32_t ctx, int tag)
{
    return (uint64_t)kind << TAG_KIND_SHIFT | (uint64_t)(uint16_t)src << TAG_SRC_SHIFT |
           ctx_bits(ctx) << TAG_CTX_SHIFT | ((uint64_t)(uint32_t)tag & TAG_TAG_MASK);
}

/* The envelope's second word: the full context and the message's number
 * (32 bits of it: the records use 24). */
static uint64_t data_of(uint32_t ctx, uint64_t k)
{
    return (uint64_t)ctx << 32 | (k & 0xffffffffu);
}

static rdma_req *req_of_op(rdma_op *op)
{
    return (rdma_req *)((char *)op - offsetof(rdma_req, op));
}

/* A post refused for now (-FI_EAGAIN): progress, then try again.  False
 * once the rank failed or the provider refused for RETRY_SECONDS. */
static int progress(rdma_rank *t, bool block);

bool rdma__retry(rdma_rank *t, double *until, const char *what)
{
    double now = job_now();
    if (*until == 0)
        *until = now + RETRY_SECONDS;
    if (now > *until) {
        xfer_fatal(&t->x, CL_ETIMEOUT, "the provider refused %s for %.0f s", what, RETRY_SECONDS);
        return false;
    }
    progress(t, false);
    return !t->x.failed;
}

/* ---- sending ---- */

static void put(unsigned char *to, size_t *at, const void *from, size_t len)
{
    if (len)
        memcpy(to + *at, from, len);
    *at += len;
}

/* A copy of len bytes for an eager message: a kept one when it fits (the
 * rank keeps BOUNCE_KEEP of t->bounce_cap bytes, the largest eager
 * message, so a pattern's sends above the inject size allocate nothing once
 * warm), else a new one.  NULL when out of memory. */
static rdma_bounce *bounce_new(rdma_rank *t, size_t len)
{
    rdma_bounce *b = t->bounce_free;
    if (b && b->cap >= len) {
        t->bounce_free = b->next;
        t->bounce_kept--;
    } else {
        size_t cap = len < t->bounce_cap ? t->bounce_cap : len;
        if (!(b = malloc(sizeof *b + cap)))
            return NULL;
        b->cap = cap;
        t->stats.copy_allocs++;
    }
    t->stats.copies++;
    b->op.what = OP_BOUNCE;
    b->len = len;
    return b;
}

/* Gives b back: kept for the next eager message, or freed. */
static void bounce_keep(rdma_rank *t, rdma_bounce *b)
{
    if (t->bounce_kept >= BOUNCE_KEEP || b->cap != t->bounce_cap) {
        free(b);
        return;
    }
    b->next = t->bounce_free;
    t->bounce_free = b;
    t->bounce_kept++;
}

/* Sends one message to rank dst: the envelope (tag, data), then the body,
 * pre and payload.  Injected when it fits (straight from payload when
 * that is all there is to send), else from a copy; track sends from a copy
 * whatever the size, so its completion says it left.  The caller's bytes
 * are free to reuse on return.  0, or the rank failed. */
static int post_msg(rdma_rank *t, int dst, uint64_t tag, uint64_t data, const void *pre,
                    size_t prelen, const void *payload, size_t plen, bool track)
{
    rdma_env env = {tag, data};
    size_t envlen = t->own_match ? sizeof env : 0;
    size_t len = envlen + prelen + plen;
    fi_addr_t to = t->addr[dst];
    double until = 0;
    ssize_t rc;
    if (len <= t->inject && !track) {
        unsigned char buf[INJECT_MAX];
        const void *bytes = payload;
        if (envlen || prelen) {
            size_t at = 0;
            put(buf, &at, &env, envlen);
            put(buf, &at, pre, prelen);
            put(buf, &at, payload, plen);
            bytes = buf;
        }
        while ((rc = t->own_match ? fi_inject(t->ep, bytes, len, to)
                                  : fi_tinjectdata(t->ep, bytes, len, data, to, tag)) ==
                   -FI_EAGAIN &&
               rdma__retry(t, &until, "an injected message"))
            ;
        if (rc && !t->x.failed)
            xfer_fatal(&t->x, CL_EIO, "%s to rank %d: %s", t->own_match ? "fi_inject" : "fi_tinjectdata",
                  dst, fi_strerror((int)-rc));
        t->stats.injects++;
        return t->x.failed;
    }
    rdma_bounce *b = bounce_new(t, len);
    if (!b) {
        xfer_fatal(&t->x, CL_ENOMEM, "out of memory copying a %zu-byte message", len);
        return t->x.failed;
    }
    size_t at = 0;
    put(b->data, &at, &env, envlen);
    put(b->data, &at, pre, prelen);
    put(b->data, &at, payload, plen);
    while ((rc = t->own_match ? fi_send(t->ep, b->data, len, NULL, to, &b->op)
                              : fi_tsenddata(t->ep, b->data, len, NULL, data, to, tag, &b->op)) ==
               -FI_EAGAIN &&
           rdma__retry(t, &until, "a message"))
        ;
    if (rc) {
        bounce_keep(t, b);
        if (!t->x.failed)
            xfer_fatal(&t->x, CL_EIO, "%s to rank %d: %s", t->own_match ? "fi_send" : "fi_tsenddata", dst,
                  fi_strerror((int)-rc));
        return t->x.failed;
    }
    b->prev = NULL;
    b->next = t->bounces;
    if (t->bounces)
        t->bounces->prev = b;
    t->bounces = b;
    t->bounces_out++;
    return 0;
}

static void bounce_done(rdma_rank *t, rdma_bounce *b)
{
    if (b->prev)
        b->prev->next = b->next;
    else
        t->bounces = b->next;
    if (b->next)
        b->next->prev = b->prev;
    t->bounces_out--;
    bounce_keep(t, b);
}

static int send_ctrl(rdma_rank *t, int dst, int kind, uint64_t id, uint64_t key, uint64_t addr,
                     bool track)
{
    rdma_ctl h = {.magic = RDMA_MAGIC, .kind = (uint16_t)kind, .src = t->me, .id = id,
                  .key = key, .addr = addr};
    uint64_t tag = (uint64_t)KIND_CTRL << TAG_KIND_SHIFT | (uint64_t)(uint16_t)t->me
                                                               << TAG_SRC_SHIFT;
    return post_msg(t, dst, tag, 0, &h, sizeof h, NULL, 0, track);
}

static int rdma_isend(cl_comm *c, const void *buf, size_t bytes, int dst, int tag, uint32_t ctx,
                      cl_request **out)
{
    rdma_rank *t = c->world->backend;
    if (t->x.failed)
        return t->x.failed;
    rank_active(&t->x.base);
    rdma_req *r = (rdma_req *)xfer_send_new(&t->x, buf, bytes, dst, tag, ctx, t->eager_limit,
                                            &t->nmsg[dst]);
    if (!r)
        return CL_ENOMEM;
    uint64_t data = data_of(ctx, t->nmsg[dst]);
    if (r->x.eager) {
        /* The sum travels only in --check runs: every rank knows whether. */
        if (post_msg(t, dst, tag_of(KIND_MSG, t->me, ctx, tag), data, &r->x.sum,
                     t->x.check ? sizeof r->x.sum : 0, buf, bytes, false)) {
            xfer_req_free(&t->x, &r->x);
            return t->x.failed;
        }
        t->stats.eager_sends++;
        *out = &r->x.base;
        xfer_complete(&t->x, &r->x, 0);
        return 0;
    }
    rdma_rts rts = {.total = bytes, .sum = r->x.sum};
    if (t->use_rma) {
        cl_diag d = {{0}};
        bool hit;
        if (rdma__mr_get(&t->mrs, buf, bytes, &r->mr, &hit, &d)) {
            xfer_req_free(&t->x, &r->x);
            rank_detail(&t->x.base, "%s", d.msg);
            return CL_EIO;
        }
        if (hit)
            t->stats.mr_hits++;
        else
            t->stats.mr_regs++;
        rts.addr = rdma__mr_addr(&t->mrs, r->mr, buf);
        rts.key = r->mr->key;
    }
    rts.id = r->id = ++t->next_id;
    r->lnext = t->rdv_sends;
    t->rdv_sends = r;
    *out = &r->x.base;
    /* From here the request is the pattern's: a failure shows in its wait. */
    post_msg(t, dst, tag_of(KIND_RTS, t->me, ctx, tag), data, &rts, sizeof rts, NULL, 0, false);
    return 0;
}

static rdma_req *take_send(rdma_rank *t, uint64_t id)
{
    for (rdma_req **at = &t->rdv_sends; *at; at = &(*at)->lnext)
        if ((*at)->id == id) {
            rdma_req *r = *at;
            *at = r->lnext;
            r->lnext = NULL;
            return r;
        }
    return NULL;
}

static void send_done(rdma_rank *t, rdma_req *r)
{
    if (r->mr)
        rdma__mr_put(&t->mrs, r->mr);
    r->mr = NULL;
    xfer_complete(&t->x, &r->x, 0);
}

/* ---- the rendezvous, receiving side ---- */

static void read_next(rdma_rank *t, rdma_req *r)
{
    uint64_t left = r->x.total - r->off;
    uint64_t max = t->max_msg < READ_CHUNK ? t->max_msg : READ_CHUNK;
    r->chunk = left < max ? left : max;
    r->op.what = OP_READ;
    double until = 0;
    ssize_t rc;
    struct iovec iov = {(char *)r->x.buf + r->off, (size_t)r->chunk};
    struct fi_rma_iov rma = {r->raddr + r->off, (size_t)r->chunk, r->rkey};
    void *desc = NULL;
    struct fi_msg_rma msg = {.msg_iov = &iov, .desc = &desc, .iov_count = 1, .addr = r->from,
                             .rma_iov = &rma, .rma_iov_count = 1, .context = &r->op};
    while ((rc = fi_readmsg(t->ep, &msg, t->read_flags)) == -FI_EAGAIN &&
           rdma__retry(t, &until, "an RDMA read"))
        ;
    if (rc && !t->x.failed)
        xfer_fatal(&t->x, CL_EIO, "fi_read of %llu bytes from rank %d: %s",
              (unsigned long long)r->chunk, r->x.base.status.source, fi_strerror((int)-rc));
}

/* Receive r (its envelope taken) matched the request to send h from src:
 * pull the data. */
void rdma__rendezvous(rdma_rank *t, rdma_req *r, const rdma_rts *h, int src)
{
    if (xfer_truncated(&t->x, &r->x, src, h->total)) {
        send_ctrl(t, src, H_NACK, h->id, 0, 0, false);
        xfer_complete(&t->x, &r->x, CL_ETRUNC);
        return;
    }
    r->x.sum = h->sum;
    r->send_id = h->id;
    r->from = t->addr[src];
    if (t->x.base.tracing)
        r->x.started = rank_now(&t->x.base);
    if (t->use_rma) {
        r->raddr = h->addr;
        r->rkey = h->key;
        r->off = 0;
        read_next(t, r);
        return;
    }
    if (h->total > t->max_msg) {
        xfer_fatal(&t->x, CL_EIO, "a %llu-byte message from rank %d is larger than the provider's "
              "largest (%llu bytes) and it has no RDMA reads", (unsigned long long)h->total,
              src, (unsigned long long)t->max_msg);
        return;
    }
    r->id = ++t->next_id;
    r->op.what = OP_DATA_RECV;
    double until = 0;
    ssize_t rc;
    while ((rc = fi_trecv(t->ep, r->x.buf, (size_t)h->total, NULL, r->from,
                          (uint64_t)KIND_DATA << TAG_KIND_SHIFT | (r->id & TAG_LOW62), 0,
                          &r->op)) == -FI_EAGAIN &&
           rdma__retry(t, &until, "a receive"))
        ;
    if (rc) {
        if (!t->x.failed)
            xfer_fatal(&t->x, CL_EIO, "fi_trecv: %s", fi_strerror((int)-rc));
        return;
    }
    send_ctrl(t, src, H_CTS, h->id, r->id, 0, false);
}

static void read_done(rdma_rank *t, rdma_req *r)
{
    r->off += r->chunk;
    rank_progressed(&t->x.base);
    if (r->off < r->x.total) {
        read_next(t, r);
        return;
    }
    t->stats.rma_reads++;
    double began = r->x.started;
    uint64_t bits;
    memcpy(&bits, &began, sizeof bits);
    send_ctrl(t, r->x.base.status.source, H_FIN, r->send_id, 0, bits, false);
    xfer_finish_recv(&t->x, &r->x, r->x.sum);
}

/* ---- receiving with libfabric's matching ---- */

/* Receive r's pieces: the --check sum, its buffer (or r->small), and the
 * scratch area for what an eager message has beyond them. */
static size_t recv_iov(rdma_rank *t, rdma_req *r, struct iovec *iov)
{
    size_t n = 0;
    if (t->x.check)
        iov[n++] = (struct iovec){&r->sum, sizeof r->sum};
    size_t room = r->x.bytes <= SMALL_RECV ? SMALL_RECV : (size_t)r->x.bytes;
    iov[n++] = (struct iovec){r->x.bytes <= SMALL_RECV ? r->small : r->x.buf, room};
    if (room < t->eager_limit)
        iov[n++] = (struct iovec){t->spill, (size_t)(t->eager_limit - room)};
    return n;
}

static int post_recv(rdma_rank *t, rdma_req *r)
{
    int src = r->x.peer, tag = r->x.tag;
    uint64_t want = tag_of(KIND_MSG, src < 0 ? 0 : src, r->x.ctx, tag < 0 ? 0 : tag);
    uint64_t ignore = TAG_RTS_BIT | (src < 0 ? TAG_SRC_MASK : 0) | (tag < 0 ? TAG_TAG_MASK : 0);
    struct iovec iov[3];
    size_t count = recv_iov(t, r, iov);
    void *desc[3] = {NULL, NULL, NULL};
    r->op.what = OP_RECV;
    double until = 0;
    ssize_t rc;
    while ((rc = fi_trecvv(t->ep, iov, desc, count, FI_ADDR_UNSPEC, want, ignore,
                           &r->op)) == -FI_EAGAIN &&
           rdma__retry(t, &until, "a receive"))
        ;
    if (rc && !t->x.failed)
        xfer_fatal(&t->x, CL_EIO, "fi_trecvv: %s", fi_strerror((int)-rc));
    return t->x.failed;
}

static int rdma_irecv(cl_comm *c, void *buf, size_t bytes, int src, int tag, uint32_t ctx,
                      cl_request **out)
{
    rdma_rank *t = c->world->backend;
    if (t->own_match)
        return xfer_op_irecv(c, buf, bytes, src, tag, ctx, out);
    if (t->x.failed)
        return t->x.failed;
    rank_active(&t->x.base);
    rdma_req *r = (rdma_req *)xfer_req_new(&t->x);
    if (!r)
        return CL_ENOMEM;
    r->x.kind = XFER_RECV;
    r->x.base.blocking = t->x.base.comm.blocking_call;
    r->x.buf = buf;
    r->x.bytes = bytes;
    r->x.peer = src;
    r->x.tag = tag;
    r->x.ctx = ctx;
    if (t->x.base.tracing)
        r->x.posted = rank_now(&t->x.base);
    if (post_recv(t, r)) {
        xfer_req_free(&t->x, &r->x);
        return t->x.failed;
    }
    *out = &r->x.base;
    return 0;
}

/* The first len bytes that landed in receive r's pieces. */
static void gather(rdma_rank *t, rdma_req *r, void *out, size_t len)
{
    struct iovec iov[3];
    size_t n = recv_iov(t, r, iov), at = 0;
    for (size_t i = 0; i < n && at < len; i++) {
        size_t k = iov[i].iov_len < len - at ? iov[i].iov_len : len - at;
        memcpy((char *)out + at, iov[i].iov_base, k);
        at += k;
    }
}

/* Receive r's message arrived, as completion e says. */
static void recv_arrived(rdma_rank *t, rdma_req *r, const struct fi_cq_tagged_entry *e)
{
    int kind = rdma__kind_of(e->tag), src = rdma__src_of(e->tag);
    uint32_t ctx = (uint32_t)(e->data >> 32);
    if (!(e->flags & FI_REMOTE_CQ_DATA) || src >= t->n) {
        xfer_fatal(&t->x, CL_EPROTO, "a message without commlab's envelope (tag %#llx, %zu bytes)",
              (unsigned long long)e->tag, e->len);
        return;
    }
    if (ctx != r->x.ctx) {
        xfer_fatal(&t->x, CL_EPROTO, "a receive of context %#x matched a message of context %#x: the "
              "two collide in the 15 bits a tag gives a context", r->x.ctx, ctx);
        return;
    }
    uint64_t id = rank_msg_id(src, t->me, e->data & 0xffffffffu);
    int tag = (int)(e->tag & TAG_TAG_MASK);
    if (kind == KIND_RTS) {
        rdma_rts h;
        if (e->len != sizeof h) {
            xfer_fatal(&t->x, CL_EPROTO, "rank %d sent a %zu-byte request to send", src, e->len);
            return;
        }
        gather(t, r, &h, sizeof h);
        xfer_take_envelope(&r->x, src, tag, h.total, id);
        rdma__rendezvous(t, r, &h, src);
        return;
    }
    size_t pre = t->x.check ? sizeof r->sum : 0;
    if (e->len < pre) {
        xfer_fatal(&t->x, CL_EPROTO, "rank %d sent %zu bytes for a message", src, e->len);
        return;
    }
    uint64_t total = e->len - pre;
    xfer_take_envelope(&r->x, src, tag, total, id);
    if (xfer_truncated(&t->x, &r->x, src, total)) {
        xfer_complete(&t->x, &r->x, CL_ETRUNC);
        return;
    }
    if (r->x.bytes <= SMALL_RECV && total)
        memcpy(r->x.buf, r->small, (size_t)total);
    if (t->x.base.tracing)
        r->x.started = rank_now(&t->x.base);
    xfer_finish_recv(&t->x, &r->x, r->sum);
}

/* ---- control records ---- */

static int post_ctrl(rdma_rank *t, rdma_ctrl *c)
{
    c->op.what = OP_CTRL;
    ssize_t rc = fi_trecv(t->ep, &c->hdr, sizeof c->hdr, NULL, FI_ADDR_UNSPEC,
                          (uint64_t)KIND_CTRL << TAG_KIND_SHIFT, TAG_LOW62, &c->op);
    return (int)rc;
}

/* A control record of len bytes arrived. */
void rdma__ctl_arrived(rdma_rank *t, const rdma_ctl *h, size_t len)
{
    if (len != sizeof *h || h->magic != RDMA_MAGIC || h->kind < H_FIN || h->kind > H_BYE ||
        h->src < 0 || h->src >= t->n) {
        xfer_fatal(&t->x, CL_EPROTO, "a control record with a bad header (%zu bytes, magic %#x, kind "
              "%u, rank %d)", len, h->magic, h->kind, h->src);
        return;
    }
    if (h->kind == H_BYE) {
        t->byes++;
        return;
    }
    rdma_req *r = take_send(t, h->id);
    if (!r || r->x.peer != h->src) {
        xfer_fatal(&t->x, CL_EPROTO, "rank %d answered (kind %u) a send of ours that is not waiting",
              h->src, h->kind);
        return;
    }
    if (h->kind == H_CTS) {
        if (t->x.base.tracing)
            r->x.started = rank_now(&t->x.base);
        r->op.what = OP_DATA_SEND;
        uint64_t tag = (uint64_t)KIND_DATA << TAG_KIND_SHIFT | (h->key & TAG_LOW62);
        ssize_t sr;
        double until = 0;
        while ((sr = fi_tsend(t->ep, r->x.sbuf, (size_t)r->x.bytes, NULL, t->addr[h->src], tag,
                              &r->op)) == -FI_EAGAIN &&
               rdma__retry(t, &until, "rendezvous data"))
            ;
        if (sr && !t->x.failed)
            xfer_fatal(&t->x, CL_EIO, "fi_tsend of %llu bytes to rank %d: %s",
                  (unsigned long long)r->x.bytes, h->src, fi_strerror((int)-sr));
        return;
    }
    if (h->kind == H_FIN && t->x.base.tracing) {
        double began;
        memcpy(&began, &h->addr, sizeof began);
        double now = rank_now(&t->x.base);
        r->x.started = began < r->x.posted ? r->x.posted : began > now ? now : began;
    }
    send_done(t, r);
}

static void ctrl_arrived(rdma_rank *t, rdma_ctrl *c, size_t len)
{
    rdma_ctl h = c->hdr;
    double until = 0;
    int rc;
    while ((rc = post_ctrl(t, c)) == -FI_EAGAIN && rdma__retry(t, &until, "a control receive"))
        ;
    if (rc && !t->x.failed)
        xfer_fatal(&t->x, CL_EIO, "fi_trecv: %s", fi_strerror(-rc));
    rdma__ctl_arrived(t, &h, len);
}

/* ---- the progress engine ---- */

static void completed(rdma_rank *t, const struct fi_cq_tagged_entry *e)
{
    rdma_op *op = e->op_context;
    switch (op->what) {
    case OP_RECV:
        recv_arrived(t, req_of_op(op), e);
        break;
    case OP_READ:
        read_done(t, req_of_op(op));
        break;
    case OP_DATA_RECV: { /* the sender's data send completes on its own */
        rdma_req *r = req_of_op(op);
        t->stats.tagged_rdv++;
        xfer_finish_recv(&t->x, &r->x, r->x.sum);
        break;
    }
    case OP_DATA_SEND:
        send_done(t, req_of_op(op));
        break;
    case OP_BOUNCE:
        bounce_done(t, (rdma_bounce *)op);
        break;
    case OP_CTRL:
        ctrl_arrived(t, (rdma_ctrl *)op, e->len);
        break;
    case OP_POOL:
        rdma__pool_done(t, (rdma_pool *)op, e);
        break;
    }
}

static void failed_op(rdma_rank *t, const struct fi_cq_err_entry *e)
{
    rdma_op *op = e->op_context;
    if (e->err == FI_ECANCELED)
        return;
    int w = op && op->what >= OP_RECV && op->what <= OP_POOL ? op->what : 0;
    if (w == OP_BOUNCE)
        bounce_done(t, (rdma_bounce *)op);
    char prov[160] = "";
    if (t->cq)
        fi_cq_strerror(t->cq, e->prov_errno, e->err_data, prov, sizeof prov);
    static const char *const what[] = {"?", "a receive", "an RDMA read", "rendezvous data",
                                       "rendezvous data", "a message", "a control receive",
                                       "a receive buffer"};
    peer_lost(t, "libfabric failed %s: %s%s%s", what[w], fi_strerror(e->err), prov[0] ? ": " : "",
              prov);
}

/* One look at the completion queue, blocking up to RANK_IDLE_MS when block
 * and the queue can.  Returns how many operations completed, or the rank's
 * fatal CL_E*. */
static int progress(rdma_rank *t, bool block)
{
    struct fi_cq_tagged_entry e[CQ_BATCH];
    ssize_t k = block && t->cq_waits ? fi_cq_sread(t->cq, e, CQ_BATCH, NULL, RANK_IDLE_MS)
                                     : fi_cq_read(t->cq, e, CQ_BATCH);
    if (k == -FI_EAVAIL) {
        struct fi_cq_err_entry err = {0};
        if (fi_cq_readerr(t->cq, &err, 0) == 1)
            failed_op(t, &err);
        return t->x.failed ? t->x.failed : 1;
    }
    if (k == -FI_EAGAIN || k == -FI_ETIMEDOUT || k == -FI_EINTR) {
        if (block && !t->cq_waits) {
            struct timespec ts = {0, 200000L};
            nanosleep(&ts, NULL);
        }
        return t->x.failed;
    }
    if (k < 0) {
        xfer_fatal(&t->x, CL_EIO, "fi_cq_read: %s", fi_strerror((int)-k));
        return t->x.failed;
    }
    for (ssize_t i = 0; i < k; i++)
        completed(t, &e[i]);
    return t->x.failed ? t->x.failed : (int)k;
}

static int rdma_poll(real_rank *r)
{
    return progress((rdma_rank *)r, false);
}

/* rank_wait's block hook: publish the wait, then sleep on the queue. */
static void rdma_block(real_rank *base, cl_request **reqs, int n, wf_op call)
{
    rank_publish_stale(base, reqs, n, call);
    progress((rdma_rank *)base, true);
}

static const comm_ops rdma_ops = {
    .isend = rdma_isend, .irecv = rdma_irecv, .wait = rank_op_wait, .test = rank_op_test,
    .release = xfer_op_release, .compute = rank_op_compute, .now = rank_op_now,
    .alloc = rank_op_alloc, .print = rank_op_print, .fail = rank_op_fail, .span = rank_op_span,
    .misuse = rank_op_misuse,
};

/* ---- opening and closing ---- */

static size_t rdma_shared_bytes(const real_opts *o)
{
    (void)o;
    return sizeof(rdma_area);
}

static int rdma_shared_init(void *mem, const real_opts *o, cl_diag *d)
{
    rdma_area *a = mem;
    if (o->job.nranks > RDMA_MAX_RANKS)
        return diag_set(d, CL_EINVAL, "the rdma backend runs at most %d ranks, got %d",
                        RDMA_MAX_RANKS, o->job.nranks);
    const char *want = o->provider && *o->provider ? o->provider : "auto";
    int err = rdma_provider_check(want, d);
    if (err)
        return err;
    /* A world whose rendezvous is reached through a non-loopback address
     * may span hosts: its endpoints bind to that address's interface (the
     * loopback one that local runs pick would be unreachable), and auto
     * picks a NIC provider. */
    const char *reach = o->boot ? boot_listen_addr(o->boot) : NULL;
    bool multi_host = reach && !world_is_loopback(reach);
    if (multi_host)
        snprintf(a->source, sizeof a->source, "%s", reach);
    if (strcmp(want, "auto") == 0)
        err = rdma_provider_auto(a->provider, sizeof a->provider, multi_host, d);
    else
        snprintf(a->provider, sizeof a->provider, "%s", want);
    if (err)
        return err;
    /* Whose matching: commlab's where the provider's is known to lose
     * messages (rdma_info.c), or where the run asks. */
    a->own_match = o->rdma_own_match || rdma__own_match(a->provider);
    /* With RDMA reads if the provider has them. */
    struct fi_info *hints = rdma__hints(a->provider, true, a->own_match), *list = NULL;
    if (!hints)
        return diag_set(d, CL_ENOMEM, "out of memory");
    int ret = fi_getinfo(RDMA_FI_VERSION, NULL, NULL, 0, hints, &list);
    fi_freeinfo(hints);
    bool has_rma = ret == 0 && list;
    if (list)
        fi_freeinfo(list);
    a->use_rma = has_rma && !o->rdma_no_rma;
    if (!has_rma && o->warn)
        fprintf(o->warn, "commlab: provider '%s' has no RDMA reads: messages above the eager "
                "limit move as tagged messages after a clear-to-send\n", a->provider);
    a->nranks = (uint32_t)o->job.nranks;
    /* Names no other run can have: the launcher's pid and 64 random bits. */
    unsigned long long nonce = 0;
    FILE *f = fopen("/dev/urandom", "rb");
    if (!f || fread(&nonce, sizeof nonce, 1, f) != 1)
        nonce = (unsigned long long)(job_now() * 1e9);
    if (f)
        fclose(f);
    snprintf(a->region_prefix, sizeof a->region_prefix, "commlab-%d-%016llx", (int)getpid(),
             nonce);
    return 0;
}

/* What a killed rank's shm provider left in /dev/shm goes. */
static void rdma_shared_release(void *mem, const real_opts *o)
{
    rdma_area *a = mem;
    if (!a->region_prefix[0])
        return;
    for (int i = 0; i < o->job.nranks; i++) {
        char name[96];
        snprintf(name, sizeof name, "%s-%d", a->region_prefix, i);
        shm_unlink(name);
    }
}

static void rdma_rank_close(real_rank *base);

static int open_fail(rdma_rank *t, int err)
{
    t->closing = true;
    rdma_rank_close(&t->x.base);
    return err;
}

static int open_endpoint(rdma_rank *t, cl_diag *d)
{
    struct fi_info *hints = rdma__hints(t->area->provider, t->area->use_rma, t->own_match);
    struct fi_info *list = NULL;
    if (!hints)
        return diag_set(d, CL_ENOMEM, "rank %d: out of memory", t->me);
    const char *source = t->area->source[0] ? t->area->source : NULL;
    int ret = fi_getinfo(RDMA_FI_VERSION, source, NULL, source ? FI_SOURCE : 0, hints, &list);
    fi_freeinfo(hints);
    if (ret || !list)
        return rdma__fail(d, CL_EIO, "fi_getinfo", ret ? ret : -FI_ENODATA,
                          "rank %d: provider '%s'%s%s", t->me, t->area->provider,
                          source ? " on " : "", source ? source : "");
    t->info = fi_dupinfo(source ? list : rdma__pick(list));
    fi_freeinfo(list);
    if (!t->info)
        return diag_set(d, CL_ENOMEM, "rank %d: out of memory", t->me);
    struct fi_info *fi = t->info;
    rdma__prov_name(fi, t->prov, sizeof t->prov);
    t->inject = fi->tx_attr->inject_size < INJECT_MAX ? fi->tx_attr->inject_size : INJECT_MAX;
    t->max_msg = fi->ep_attr->max_msg_size ? fi->ep_attr->max_msg_size : READ_CHUNK;
    if (fi->rx_attr->iov_limit < 3)
        return diag_set(d, CL_EINVAL, "rank %d: provider '%s' takes %zu pieces per receive; "
                        "commlab needs three (a header, the data, what overflows)", t->me,
                        t->prov, fi->rx_attr->iov_limit);
    if ((ret = fi_fabric(fi->fabric_attr, &t->fabric, NULL)))
        return rdma__fail(d, CL_EIO, "fi_fabric", ret, "rank %d", t->me);
    if ((ret = fi_domain(t->fabric, fi, &t->domain, NULL)))
        return rdma__fail(d, CL_EIO, "fi_domain", ret, "rank %d", t->me);
    rdma__mr_init(&t->mrs, t->domain, fi->domain_attr->mr_mode);
    struct fi_cq_attr cq = {.format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_UNSPEC,
                            .size = 4096};
    t->cq_waits = true;
    if (fi_cq_open(t->domain, &cq, &t->cq, NULL)) {
        cq.wait_obj = FI_WAIT_NONE; /* poll, with short sleeps when blocked */
        t->cq_waits = false;
        if ((ret = fi_cq_open(t->domain, &cq, &t->cq, NULL)))
            return rdma__fail(d, CL_EIO, "fi_cq_open", ret, "rank %d", t->me);
    }
    struct fi_av_attr av = {.type = FI_AV_TABLE, .count = (size_t)t->n};
    if ((ret = fi_av_open(t->domain, &av, &t->av, NULL)))
        return rdma__fail(d, CL_EIO, "fi_av_open", ret, "rank %d", t->me);
    if ((ret = fi_endpoint(t->domain, fi, &t->ep, NULL)))
        return rdma__fail(d, CL_EIO, "fi_endpoint", ret, "rank %d", t->me);
    if ((ret = fi_ep_bind(t->ep, &t->cq->fid, FI_TRANSMIT | FI_RECV)) ||
        (ret = fi_ep_bind(t->ep, &t->av->fid, 0)))
        return rdma__fail(d, CL_EIO, "fi_ep_bind", ret, "rank %d", t->me);
    if (strcmp(t->prov, "shm") == 0) {
        /* A region name the launcher knows, so it can remove what a
         * killed rank leaves in /dev/shm. */
        char name[96];
        snprintf(name, sizeof name, "%s-%d", t->area->region_prefix, t->me);
        if ((ret = fi_setname(&t->ep->fid, name, strlen(name) + 1)))
            return rdma__fail(d, CL_EIO, "fi_setname", ret, "rank %d", t->me);
    }
    t->read_flags = FI_COMPLETION;
    if ((ret = fi_enable(t->ep)))
        return rdma__fail(d, CL_EIO, "fi_enable", ret, "rank %d", t->me);
    if (t->own_match) {
        /* A pool buffer is given back once it has no room for the largest
         * message: none is ever truncated.  (After fi_enable: libfabric
         * 1.17's shm provider crashes on it before.) */
        size_t min = t->pool_msg_max;
        if ((ret = fi_setopt(&t->ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min,
                             sizeof min)))
            return rdma__fail(d, CL_EIO, "fi_setopt(FI_OPT_MIN_MULTI_RECV)", ret, "rank %d",
                              t->me);
    }
    return 0;
}

/* Publishes this rank's endpoint address in the job's address slot and
 * inserts every rank's into the address vector (the launcher relays the
 * slots of other hosts: real/boot.h). */
static int exchange_addresses(rdma_rank *t, const job *j, cl_diag *d)
{
    unsigned char addr[JOB_ADDR_MAX] = {0};
    size_t len = sizeof addr;
    int ret = fi_getname(&t->ep->fid, addr, &len);
    if (ret)
        return rdma__fail(d, CL_EIO, "fi_getname", ret, "rank %d", t->me);
    job_addr_publish(j, t->me, addr, len);
    double deadline = job_now() + BOOT_SECONDS;
    for (int i = 0; i < t->n; i++) {
        int err = job_addr_wait(j, i, addr, sizeof addr, &len, deadline);
        if (err)
            return diag_set(d, err, "rank %d: rank %d %s", t->me, i,
                            err == CL_ETIMEOUT ? "published no address in time"
                                               : "published a bad address");
        ret = fi_av_insert(t->av, addr, 1, &t->addr[i], 0, NULL);
        if (ret != 1)
            return rdma__fail(d, CL_EIO, "fi_av_insert", ret < 0 ? ret : -FI_EINVAL,
                              "rank %d: the address of rank %d", t->me, i);
    }
    return 0;
}

/* The receives every rank keeps posted: control receives (libfabric's
 * matching) or the pool buffers (commlab's). */
static int post_standing(rdma_rank *t, cl_diag *d)
{
    if (t->own_match)
        return rdma__pool_post_all(t, d);
    for (int i = 0; i < CTRL_RECVS; i++) {
        int ret = post_ctrl(t, &t->ctrl[i]);
        if (ret)
            return rdma__fail(d, CL_EIO, "fi_trecv", ret, "rank %d: a control receive", t->me);
    }
    return 0;
}

static int rdma_rank_open(real_rank **out, const job *j, int rank, const real_opts *o, cl_diag *d)
{
    rdma_rank *t = calloc(1, sizeof *t);
    if (!t)
        return diag_set(d, CL_ENOMEM, "rank %d: out of memory", rank);
    size_t n = (size_t)j->nranks;
    xfer_init(&t->x, &rdma_ops, j, rank, o->job.check, sizeof(rdma_req), sizeof(rdma_msg),
              rdma__pool_pull);
    t->x.base.poll = rdma_poll;
    t->x.base.block = rdma_block;
    t->area = j->transport;
    t->own_match = t->area->own_match;
    t->n = (int)n;
    t->me = rank;
    t->eager_limit = o->job.eager_limit;
    size_t largest = sizeof(rdma_env) + sizeof(uint64_t) + (size_t)o->job.eager_limit;
    if (largest < sizeof(rdma_env) + sizeof(rdma_ctl))
        largest = sizeof(rdma_env) + sizeof(rdma_ctl);
    t->bounce_cap = largest <= BOUNCE_KEEP_MAX ? largest : 0;
    t->use_rma = t->area->use_rma;
    if (!(t->addr = calloc(n, sizeof *t->addr)) || !(t->nmsg = calloc(n, sizeof *t->nmsg)) ||
        !(t->spill = malloc(o->job.eager_limit ? (size_t)o->job.eager_limit : 1)) ||
        (t->own_match ? rdma__pool_create(t) : !(t->ctrl = calloc(CTRL_RECVS, sizeof *t->ctrl)))) {
        diag_set(d, CL_ENOMEM, "rank %d: out of memory", rank);
        return open_fail(t, CL_ENOMEM);
    }
    int err = open_endpoint(t, d);
    if (!err)
        err = exchange_addresses(t, j, d);
    if (!err)
        err = post_standing(t, d);
    if (err)
        return open_fail(t, err);
    *out = &t->x.base;
    return 0;
}

/* Every rank says BYE to every other and waits for theirs (bounded), so no
 * endpoint closes under a message still on its way. */
static void say_bye(rdma_rank *t)
{
    for (int i = 0; i < t->n && !t->x.failed; i++)
        if (i != t->me && send_ctrl(t, i, H_BYE, 0, 0, 0, true))
            break;
    double until = job_now() + CLOSE_SECONDS;
    while (!t->x.failed && (t->byes < t->n - 1 || t->bounces_out > 0) && job_now() < until)
        progress(t, false);
}

static void rdma_rank_close(real_rank *base)
{
    rdma_rank *t = (rdma_rank *)base;
    bool clean = !t->x.failed && t->ep &&
                 atomic_load_explicit(&t->x.base.slot->state, memory_order_acquire) == JOB_DONE;
    if (clean)
        say_bye(t);
    t->closing = true;
    if (t->ep)
        fi_close(&t->ep->fid);
    if (t->av)
        fi_close(&t->av->fid);
    if (t->cq)
        fi_close(&t->cq->fid);
    rdma__mr_release(&t->mrs);
    if (t->domain)
        fi_close(&t->domain->fid);
    if (t->fabric)
        fi_close(&t->fabric->fid);
    if (t->info)
        fi_freeinfo(t->info);
    for (int list = 0; list < 2; list++)
        for (rdma_bounce *b = list ? t->bounce_free : t->bounces, *next; b; b = next) {
            next = b->next;
            free(b);
        }
    /* Rendezvous sends still listed are the pattern's requests. */
    xfer_release(&t->x);
    free(t->ctrl);
    rdma__pool_destroy(t);
    free(t->spill);
    free(t->addr);
    free(t->nmsg);
    free(t);
}

const rdma_stats *rdma_stats_of(const cl_comm *c)
{
    if (!c || !c->world || c->world->ops != &rdma_ops)
        return NULL;
    return &((const rdma_rank *)c->world->backend)->stats;
}

const char *rdma_provider_of(const cl_comm *c)
{
    if (!c || !c->world || c->world->ops != &rdma_ops)
        return NULL;
    return ((const rdma_rank *)c->world->backend)->prov;
}

const real_transport rdma_transport = {
    .name = "rdma",
    .shared_bytes = rdma_shared_bytes,
    .shared_init = rdma_shared_init,
    .shared_release = rdma_shared_release,
    .rank_open = rdma_rank_open,
    .rank_close = rdma_rank_close,
};
