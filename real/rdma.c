/*
 * rdma.c - the rdma transport's messages, through libfabric (real/rdma.h
 * says which file does what): sending, control records and the progress
 * engine here; receiving in rdma_recv.c, opening and closing in
 * rdma_open.c.
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
 *     says how and why.  An eager message that fits one inject without
 *     the envelope goes with a short one instead, so a 4 KiB message is
 *     one inject: its context and tag as remote CQ data (fi_injectdata),
 *     its source from the completion (FI_SOURCE), its number counted by
 *     the receiver (a rank's messages arrive in the order sent).
 *
 * Protocols, with commlab's own eager limit (never the provider's):
 *   - eager (bytes <= limit): envelope and body go out at once, by
 *     fi_tinjectdata/fi_injectdata/fi_inject when they fit the provider's
 *     inject size, and the send completes once injected, as in the model.
 *     Above the inject size, with commlab's matching and RDMA reads: as a
 *     request to send, like a rendezvous, but the receiver reads it at
 *     once, whether or not a receive is posted: straight into the
 *     receive's buffer when one matches (one copy, as fi_send's own on
 *     shm, a process_vm_readv), else into a copy kept until a receive
 *     takes it; FIN completes the send (or the read counter: "FINs, and
 *     reads counted" below).  So the send waits for the other rank's
 *     progress engine (any commlab call), never for a receive:
 *     head-to-head eager sends do not deadlock.  Otherwise from a copy (a
 *     bounce buffer, given back when the provider is done with it and
 *     kept for the next message), completing once injected.  (Sending
 *     from the pattern's buffer would make the send wait for the
 *     provider's completion, which on shm above its inject size comes only
 *     once the receiver has read it into a receive buffer: a copy out of
 *     it would remain.  The copy to the bounce buffer, into the pool
 *     buffer and out of it made 64 KiB messages 2.5-4.6x fi_pingpong's
 *     time.)
 *   - rendezvous (above the limit), the RDMA way: the sender registers its
 *     buffer (fi_mr_reg, cached: rdma_mr.c) and sends the request to send
 *     with the buffer's address and key.  When a receive matches it, the
 *     receiver pulls the data with fi_read straight into its buffer (in
 *     pieces of at most READ_CHUNK) and answers FIN, which completes the
 *     send.  A receive too small answers NACK (the send completes, the
 *     receive fails with CL_ETRUNC).  A provider without RMA (or a run with
 *     real_opts.rdma.no_rma) answers CTS instead, after posting a tagged
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
 * in local runs the rank waits a moment first (see tcp.c's tcp__lost()).
 *
 * Byte order: envelopes and bodies travel in the host's order; ranks of one
 * run share an architecture.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "real/rdma_impl.h"
#include "real/xfer.h"

#define RDMA_MAGIC 0xc1d4u
#define BOUNCE_KEEP 8                /* eager copies kept for reuse */
#define CQ_BATCH 16                  /* completions per fi_cq_read */
#define RETRY_SECONDS 60.0           /* a provider that refuses to post this long fails */
#define FIN_IDLE_POLLS 32            /* empty looks at the queue before FINs owed go */
#define LAZY_SLEEP_MS 1              /* a sleep's bound while a counted send waits */

/* ---- helpers ---- */

/* A peer is most likely dead: the launcher names it (xfer_peer_lost). */
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
    xfer_peer_lost(&t->x, XFER_LOSS_GRACE_NS, "%s", msg.msg);
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

bool rdma__retry(rdma_rank *t, double *until, const char *what)
{
    double now = job_now();
    if (*until == 0)
        *until = now + RETRY_SECONDS;
    if (now > *until) {
        xfer_fatal(&t->x, CL_ETIMEOUT, "the provider refused %s for %.0f s", what, RETRY_SECONDS);
        return false;
    }
    rdma__progress(t, false);
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

/* Commlab's matching: the remote CQ data of an eager message sent with a
 * short envelope (rdma_impl.h). */
static uint64_t short_env(uint32_t ctx, int tag)
{
    return (uint64_t)ctx << ENV_SHORT_TAG_BITS | ((uint64_t)(uint32_t)tag & TAG_TAG_MASK);
}

/* Sends one message to rank dst: the envelope (tag, data), then the body,
 * pre and payload.  Injected when it fits (straight from payload when
 * that is all there is to send), else from a copy; track sends from a copy
 * whatever the size, so its completion says it left.  With commlab's
 * matching an eager message that fits one inject without the envelope
 * goes with a short one instead (rdma_impl.h).  The caller's bytes are
 * free to reuse on return.  0, or the rank failed. */
static int post_msg(rdma_rank *t, int dst, uint64_t tag, uint64_t data, const void *pre,
                    size_t prelen, const void *payload, size_t plen, bool track)
{
    rdma_env env = {tag, data};
    bool shorten = t->own_match && !track && rdma__kind_of(tag) == KIND_MSG &&
                   prelen + plen <= t->inject;
    size_t envlen = t->own_match && !shorten ? sizeof env : 0;
    size_t len = envlen + prelen + plen;
    uint64_t short_data =
        shorten ? short_env((uint32_t)(data >> 32), (int)(tag & TAG_TAG_MASK)) : 0;
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
        while ((rc = shorten ? fi_injectdata(t->ep, bytes, len, short_data, to)
                     : t->own_match ? fi_inject(t->ep, bytes, len, to)
                                    : fi_tinjectdata(t->ep, bytes, len, data, to, tag)) ==
                   -FI_EAGAIN &&
               rdma__retry(t, &until, "an injected message"))
            ;
        if (rc && !t->x.failed)
            xfer_fatal(&t->x, CL_EIO, "%s to rank %d: %s",
                       shorten ? "fi_injectdata" : t->own_match ? "fi_inject" : "fi_tinjectdata",
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

int rdma__ctl_send(rdma_rank *t, int dst, int kind, uint64_t id, uint64_t key, uint64_t addr,
                   bool track)
{
    rdma_ctl h = {.magic = RDMA_MAGIC, .kind = (uint16_t)kind, .src = t->me, .id = id,
                  .key = key, .addr = addr};
    uint64_t tag = (uint64_t)KIND_CTRL << TAG_KIND_SHIFT | (uint64_t)(uint16_t)t->me
                                                               << TAG_SRC_SHIFT;
    return post_msg(t, dst, tag, 0, &h, sizeof h, NULL, 0, track);
}

/* ---- FINs, and reads counted ----
 *
 * With count_reads (commlab's matching with RDMA reads, where the provider
 * counts remote reads: rdma_open.c) a sender also learns that its buffer
 * was read from a counter of the reads of its buffers, which the provider
 * advances with the read itself, before the reader even has its
 * completion.  The counter does not say whose send was read, so it
 * completes a send only while that send is the only one waiting
 * (rdma_isend marks it lazy): every read counted and not yet matched to a
 * completed send (reads_known) is then its.  The receiver of a lazy send
 * still owes its FIN, which resolves the case of several sends waiting,
 * but not at once: it rides along with its next request to send to that
 * rank (a ping-pong's pong), or goes once it has looked at an empty
 * completion queue FIN_IDLE_POLLS times in a row or is about to sleep.
 * The FIN, an inject into the sender's queue, cost the reader 0.5-0.8 us
 * on the critical path of every message it read (a few cache lines moving
 * between the cores, timed with the cycle counter on a 2-core VM: 64 KiB
 * one-way 6.8 us with it, 5.4 us without). */

/* A FIN owed to dst that may wait, taken off the list to ride along with
 * a request to send (0: none). */
static uint64_t fin_take(rdma_rank *t, int dst)
{
    for (int i = 0; i < t->nfins; i++)
        if (t->fins[i].dst == dst) {
            uint64_t id = t->fins[i].id;
            t->fins[i] = t->fins[--t->nfins];
            return id;
        }
    return 0;
}

void rdma__fins_flush(rdma_rank *t)
{
    while (t->nfins > 0 && !t->x.failed) {
        rdma_fin_due f = t->fins[--t->nfins];
        rdma__ctl_send(t, f.dst, H_FIN, f.id, 0, 0, false);
    }
}

int rdma__fin(rdma_rank *t, int dst, uint64_t id, double began, bool lazy)
{
    if (lazy && t->nfins < FINS_DUE) {
        t->fins[t->nfins++] = (rdma_fin_due){.dst = dst, .id = id};
        return 0;
    }
    uint64_t bits;
    memcpy(&bits, &began, sizeof bits);
    return rdma__ctl_send(t, dst, H_FIN, id, 0, bits, false);
}

/* Reads of one send's buffer: one per piece of at most READ_CHUNK (and the
 * provider's largest message), one for an empty message (rdma_recv.c's
 * read_piece). */
static uint64_t reads_of(const rdma_rank *t, uint64_t bytes)
{
    uint64_t max = t->max_msg < READ_CHUNK ? t->max_msg : READ_CHUNK;
    return bytes ? (bytes + max - 1) / max : 1;
}

/* Whether an eager message of bytes goes as a request to send that the
 * receiver answers by reading it (at once, into its receive or a copy)
 * rather than from a copy of ours: with commlab's matching and RDMA reads,
 * once it does not fit one inject (with a short envelope). */
static bool eager_by_read(const rdma_rank *t, size_t bytes)
{
    size_t pre = t->x.check ? sizeof(uint64_t) : 0;
    return t->own_match && t->use_rma && pre + bytes > t->inject;
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
    bool by_read = r->x.eager && eager_by_read(t, bytes);
    if (r->x.eager && !by_read) {
        /* The sum travels only in --check runs: every rank knows whether. */
        if (post_msg(t, dst, rdma__tag_of(KIND_MSG, t->me, ctx, tag), data, &r->x.sum,
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
    /* Reads are counted for this send only while it is the one waiting
     * (rdma__progress), so its FIN may wait only if no other is. */
    r->lazy = t->reads && !t->x.base.tracing && !t->rdv_sends;
    rts.lazy = r->lazy;
    if ((rts.fin = fin_take(t, dst)))
        t->stats.fins_along++;
    if (by_read) {
        t->stats.eager_sends++;
        t->stats.eager_reads++;
    }
    r->lnext = t->rdv_sends;
    t->rdv_sends = r;
    *out = &r->x.base;
    /* From here the request is the pattern's: a failure shows in its wait. */
    post_msg(t, dst, rdma__tag_of(KIND_RTS, t->me, ctx, tag), data, &rts, sizeof rts, NULL, 0, false);
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

/* The only send waiting is lazy: complete it once the counter shows its
 * reads.  Whether it completed one. */
static bool reads_counted(rdma_rank *t)
{
    rdma_req *r = t->rdv_sends;
    if (!t->reads || !r || r->lnext || !r->lazy)
        return false;
    uint64_t want = reads_of(t, r->x.bytes);
    if (fi_cntr_read(t->reads) - t->reads_known < want)
        return false;
    t->rdv_sends = NULL;
    t->reads_known += want;
    t->stats.reads_counted++;
    send_done(t, r);
    return true;
}

/* src's FIN for our send id: the send completes, unless the counter
 * completed it already (a lazy send's FIN comes late).  began: when the
 * read began (tracing; NAN: unknown). */
static void fin_arrived(rdma_rank *t, int src, uint64_t id, double began)
{
    rdma_req *r = take_send(t, id);
    if (!r) {
        if (!t->reads || id == 0 || id > t->next_id)
            xfer_fatal(&t->x, CL_EPROTO, "rank %d answered (FIN) a send of ours that is not "
                       "waiting", src);
        return;
    }
    if (r->x.peer != src) {
        xfer_fatal(&t->x, CL_EPROTO, "rank %d answered (FIN) a send of ours to rank %d", src,
                   r->x.peer);
        return;
    }
    t->reads_known += reads_of(t, r->x.bytes);
    if (t->x.base.tracing && !isnan(began)) {
        double now = rank_now(&t->x.base);
        r->x.started = began < r->x.posted ? r->x.posted : began > now ? now : began;
    }
    send_done(t, r);
}

void rdma__fin_arrived(rdma_rank *t, int src, uint64_t id)
{
    fin_arrived(t, src, id, NAN);
}

/* ---- control records ---- */

int rdma__ctrl_post(rdma_rank *t, rdma_ctrl *c)
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
    if (h->kind == H_FIN) {
        double began;
        memcpy(&began, &h->addr, sizeof began);
        fin_arrived(t, h->src, h->id, began);
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
    send_done(t, r); /* NACK: nothing was read */
}

static void ctrl_arrived(rdma_rank *t, rdma_ctrl *c, size_t len)
{
    rdma_ctl h = c->hdr;
    double until = 0;
    int rc;
    while ((rc = rdma__ctrl_post(t, c)) == -FI_EAGAIN && rdma__retry(t, &until, "a control receive"))
        ;
    if (rc && !t->x.failed)
        xfer_fatal(&t->x, CL_EIO, "fi_trecv: %s", fi_strerror(-rc));
    rdma__ctl_arrived(t, &h, len);
}

/* ---- the progress engine ---- */

static void completed(rdma_rank *t, const struct fi_cq_tagged_entry *e, fi_addr_t from)
{
    rdma_op *op = e->op_context;
    switch (op->what) {
    case OP_RECV:
        rdma__recv_arrived(t, req_of_op(op), e);
        break;
    case OP_READ:
        rdma__read_done(t, req_of_op(op));
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
        rdma__pool_done(t, (rdma_pool *)op, e, from);
        break;
    case OP_MSG_READ:
        rdma__msg_read_done(t, (rdma_msg *)((char *)op - offsetof(rdma_msg, op)));
        break;
    }
}

static void failed_op(rdma_rank *t, const struct fi_cq_err_entry *e)
{
    rdma_op *op = e->op_context;
    if (e->err == FI_ECANCELED)
        return;
    int w = op && op->what >= OP_RECV && op->what <= OP_MSG_READ ? op->what : 0;
    if (w == OP_BOUNCE)
        bounce_done(t, (rdma_bounce *)op);
    char prov[160] = "";
    if (t->cq)
        fi_cq_strerror(t->cq, e->prov_errno, e->err_data, prov, sizeof prov);
    static const char *const what[] = {"?", "a receive", "an RDMA read", "rendezvous data",
                                       "rendezvous data", "a message", "a control receive",
                                       "a receive buffer", "an RDMA read"};
    peer_lost(t, "libfabric failed %s: %s%s%s", what[w], fi_strerror(e->err), prov[0] ? ": " : "",
              prov);
}

/* One look at the completion queue, blocking up to RANK_IDLE_MS when block
 * and the queue can.  Returns how many operations completed, or the rank's
 * fatal CL_E*. */
int rdma__progress(rdma_rank *t, bool block)
{
    struct fi_cq_tagged_entry e[CQ_BATCH];
    fi_addr_t from[CQ_BATCH]; /* commlab's matching: who sent a received message */
    if (block)
        rdma__fins_flush(t);
    ssize_t k;
    if (block && t->cq_waits) {
        /* A read counted makes no completion to wake a sleeper: with a
         * lazy send waiting, sleep briefly. */
        int ms = t->reads && t->rdv_sends ? LAZY_SLEEP_MS : RANK_IDLE_MS;
        k = t->own_match ? fi_cq_sreadfrom(t->cq, e, CQ_BATCH, from, NULL, ms)
                         : fi_cq_sread(t->cq, e, CQ_BATCH, NULL, ms);
    } else {
        k = t->own_match ? fi_cq_readfrom(t->cq, e, CQ_BATCH, from)
                         : fi_cq_read(t->cq, e, CQ_BATCH);
    }
    if (k == -FI_EAGAIN || k == -FI_ETIMEDOUT || k == -FI_EINTR) {
        if (reads_counted(t))
            return t->x.failed ? t->x.failed : 1;
        if (t->nfins && ++t->idle_polls >= FIN_IDLE_POLLS) {
            t->idle_polls = 0;
            rdma__fins_flush(t);
        }
    } else {
        t->idle_polls = 0;
    }
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
        completed(t, &e[i], t->own_match ? from[i] : FI_ADDR_UNSPEC);
    reads_counted(t);
    return t->x.failed ? t->x.failed : (int)k;
}

const comm_ops rdma__ops = {
    .isend = rdma_isend, .irecv = rdma__irecv, .wait = rank_op_wait, .test = rank_op_test,
    .release = xfer_op_release, .compute = rank_op_compute, .now = rank_op_now,
    .wait_until = rank_op_wait_until, .alloc = rank_op_alloc, .print = rank_op_print, .fail = rank_op_fail, .span = rank_op_span,
    .misuse = rank_op_misuse,
};
