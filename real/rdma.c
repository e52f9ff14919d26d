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
 * Matching is libfabric's.  commlab's (source, tag, context) goes into the
 * 64-bit tag of every message:
 *     63..62 kind   61..46 source rank   45..31 context   30..0 tag
 * kind 0 is a message, 1 its request to send (rendezvous), 2 a control
 * record, 3 rendezvous data sent as a tagged message.  A receive asks for
 * kind 0 with the rendezvous bit ignored, so one posted receive takes a
 * message or its request to send, whichever comes; CL_ANY_SOURCE and
 * CL_ANY_TAG ignore the source or tag bits.  The context gets 15 bits
 * (its even/odd bit and 14 of a hash): every message also carries its full
 * context in a header, and a receive that matched a message of another
 * context (two contexts colliding in those bits) fails loudly with
 * CL_EPROTO instead of delivering it.
 *
 * Every message starts with a 64-byte header (rdma_hdr: the source, tag,
 * context, message number, size, --check sum, and the rendezvous words).
 * A receive is posted as up to three pieces, fi_trecvv: the header lands
 * in the request, the data straight in the receive buffer, and what an
 * eager message has beyond the buffer in a scratch area, so the provider
 * never truncates: commlab sees the whole size and fails the receive with
 * CL_ETRUNC itself, naming both sizes.
 *
 * Protocols, with commlab's own eager limit (never the provider's):
 *   - eager (bytes <= limit): header and data go out at once, by
 *     fi_tinject when they fit the provider's inject size, else from a
 *     copy (a bounce buffer freed when the provider is done with it).  The
 *     send completes once injected, as in the model: head-to-head eager
 *     sends never wait for a receive.
 *   - rendezvous (above the limit), the RDMA way: the sender registers its
 *     buffer (fi_mr_reg, cached: rdma_mr.c) and sends the request to send
 *     with the buffer's address and key.  When a receive matches it, the
 *     receiver pulls the data with fi_read straight into its buffer (in
 *     pieces of at most READ_CHUNK) and answers FIN, which completes the
 *     send.  A receive too small answers NACK (the send completes, the
 *     receive fails with CL_ETRUNC).  A provider without RMA (or a run with
 *     real_opts.rdma_no_rma) answers CTS instead, and the sender sends the
 *     data as one tagged message of kind 3 addressed to that receive.
 *     Either way a send above the limit waits for its receive, so the
 *     deadlock pattern deadlocks at the same size as on shm and tcp.
 *   - closing: after the last barrier every rank sends BYE to every other
 *     and waits (at most CLOSE_SECONDS) for theirs and for its own sends
 *     to complete, so no endpoint closes under a message still on its way.
 *
 * A completion queue error other than a truncated receive fails the rank
 * (CL_EPEER): most likely a peer died, which the launcher names better, so
 * in local runs the rank waits a moment first (see tcp.c's lost()).
 *
 * Byte order: headers travel in the host's order; ranks of one run share
 * an architecture.
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
#include "real/rdma_impl.h"
#include "real/xfer.h"

#define RDMA_MAGIC 0xc1d4u
#define CTRL_RECVS 64                /* control receives kept posted */
#define CQ_BATCH 16                  /* completions per fi_cq_read */
#define BLOCK_MS 50                  /* a blocked rank looks around this often anyway */
#define READ_CHUNK ((uint64_t)64 << 20) /* one fi_read moves at most this */
#define RETRY_SECONDS 60.0           /* a provider that refuses to post this long fails */
#define CLOSE_SECONDS 2.0            /* the closing handshake waits at most this */
#define LOSS_GRACE_NS 500000000L     /* local runs: let the launcher name a dead rank */

/* The tag's fields. */
#define TAG_KIND_SHIFT 62
#define TAG_SRC_SHIFT 46
#define TAG_CTX_SHIFT 31
#define TAG_TAG_MASK ((1ULL << TAG_CTX_SHIFT) - 1)
#define TAG_CTX_MASK (((1ULL << 15) - 1) << TAG_CTX_SHIFT)
#define TAG_SRC_MASK (((1ULL << 16) - 1) << TAG_SRC_SHIFT)
#define TAG_RTS_BIT (1ULL << TAG_KIND_SHIFT)
#define TAG_LOW62 ((1ULL << TAG_KIND_SHIFT) - 1)

enum { KIND_MSG, KIND_RTS, KIND_CTRL, KIND_DATA };              /* the tag's kind */
enum { H_EAGER = 1, H_RTS, H_FIN, H_NACK, H_CTS, H_BYE };        /* a header's kind */
enum { OP_RECV = 1, OP_READ, OP_DATA_RECV, OP_DATA_SEND, OP_BOUNCE, OP_CTRL }; /* contexts */

typedef struct rdma_hdr {
    uint16_t magic;  /* RDMA_MAGIC */
    uint16_t kind;   /* H_* */
    int32_t src;     /* the sender's rank */
    int32_t tag;
    uint32_t ctx;    /* the full context id */
    uint64_t k;      /* the k-th message from src to its destination */
    uint64_t total;  /* message bytes */
    uint64_t sum;    /* checksum (--check) */
    uint64_t addr;   /* RTS: where to read; FIN: when the read began (double bits) */
    uint64_t key;    /* RTS: the registration's key; CTS: the receive's id */
    uint64_t id;     /* RTS, FIN, NACK, CTS: the send's id */
} rdma_hdr;

_Static_assert(sizeof(rdma_hdr) == 64, "a header is 64 bytes");

/* What an operation's completion comes back as: every libfabric call gets
 * one of these as its context (FI_CONTEXT2 room first). */
typedef struct rdma_op {
    struct fi_context2 fc;
    int what; /* OP_* */
} rdma_op;

typedef struct rdma_req {
    xfer_req x;             /* first */
    rdma_op op;             /* the one operation in flight for it */
    struct rdma_req *lnext; /* rendezvous sends waiting for FIN, NACK or CTS */
    uint64_t id;            /* rendezvous: our send or receive id */
    rdma_hdr hdr;           /* receive: the header lands here */
    rdma_mr *mr;            /* rendezvous send: its registration */
    uint64_t send_id;       /* rendezvous receive: the sender's id */
    uint64_t raddr, rkey;   /* ... where to read */
    uint64_t off, chunk;    /* ... bytes read, bytes of the read in flight */
    fi_addr_t from;         /* ... the sender's address */
} rdma_req;

typedef struct rdma_bounce { /* an eager message's copy, until sent */
    rdma_op op;              /* first */
    struct rdma_bounce *prev, *next;
    size_t len;
    _Alignas(16) unsigned char data[]; /* header and payload */
} rdma_bounce;

typedef struct rdma_ctrl { /* a posted control receive */
    rdma_op op;            /* first */
    rdma_hdr hdr;
} rdma_ctrl;

typedef struct rdma_rank {
    xfer_rank x;               /* first */
    rdma_area *area;
    struct fi_info *info;      /* the entry opened (its own copy) */
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_cq *cq;
    struct fid_ep *ep;
    bool cq_waits;             /* the queue has a wait object: fi_cq_sread blocks */
    fi_addr_t *addr;           /* n: every rank's address */
    uint64_t *nmsg;            /* n: messages sent to each rank */
    rdma_mr_cache mrs;
    rdma_ctrl *ctrl;           /* CTRL_RECVS */
    rdma_req *rdv_sends;       /* rendezvous sends waiting for the receiver */
    rdma_bounce *bounces;      /* eager copies the provider still holds */
    int bounces_out;
    int byes;                  /* BYEs received */
    uint64_t eager_limit;      /* bytes */
    size_t inject;             /* bytes fi_tinject takes */
    uint64_t max_msg;          /* bytes one message or read may have */
    uint64_t next_id;
    bool use_rma;
    uint64_t read_flags;       /* fi_readmsg's flags (see open_endpoint) */
    bool closing;
    int n, me;
    char prov[RDMA_PROV_MAX];
    rdma_stats stats;
    unsigned char *spill;      /* eager_limit bytes: where what overflows a receive goes */
} rdma_rank;

static const comm_ops rdma_ops;

/* ---- helpers ---- */

static void fatal(rdma_rank *t, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void fatal(rdma_rank *t, int err, const char *fmt, ...)
{
    if (t->x.failed)
        return;
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    xfer_fatal(&t->x, err, "%s", msg);
}

/* A peer is most likely dead: the launcher reports that better, so a
 * local rank lets it (it is killed meanwhile) before failing itself. */
static void peer_lost(rdma_rank *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void peer_lost(rdma_rank *t, const char *fmt, ...)
{
    if (t->x.failed || t->closing)
        return;
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fatal(t, CL_EPEER, "%s", msg);
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

static rdma_req *req_of_op(rdma_op *op)
{
    return (rdma_req *)((char *)op - offsetof(rdma_req, op));
}

/* A post refused for now (-FI_EAGAIN): progress, then try again.  False
 * once the rank failed or the provider refused for RETRY_SECONDS. */
static int progress(rdma_rank *t, bool block);

static bool retry(rdma_rank *t, double *until, const char *what)
{
    double now = job_now();
    if (*until == 0)
        *until = now + RETRY_SECONDS;
    if (now > *until) {
        fatal(t, CL_ETIMEOUT, "the provider refused %s for %.0f s", what, RETRY_SECONDS);
        return false;
    }
    progress(t, false);
    return !t->x.failed;
}

/* ---- sending ---- */

/* Sends len bytes at data (a header, then maybe a payload) to rank dst:
 * injected when small, else from a copy.  The caller's bytes are free to
 * reuse on return.  0, or the rank failed. */
static int post_bytes(rdma_rank *t, int dst, uint64_t tag, const rdma_hdr *h,
                      const void *payload, size_t plen)
{
    size_t len = sizeof *h + plen;
    double until = 0;
    ssize_t rc;
    if (len <= t->inject) {
        unsigned char buf[len];
        memcpy(buf, h, sizeof *h);
        if (plen)
            memcpy(buf + sizeof *h, payload, plen);
        while ((rc = fi_tinject(t->ep, buf, len, t->addr[dst], tag)) == -FI_EAGAIN &&
               retry(t, &until, "an injected message"))
            ;
        if (rc && !t->x.failed)
            fatal(t, CL_EIO, "fi_tinject to rank %d: %s", dst, fi_strerror((int)-rc));
        t->stats.injects++;
        return t->x.failed;
    }
    rdma_bounce *b = malloc(sizeof *b + len);
    if (!b) {
        fatal(t, CL_ENOMEM, "out of memory copying a %zu-byte message", len);
        return t->x.failed;
    }
    b->op.what = OP_BOUNCE;
    b->len = len;
    memcpy(b->data, h, sizeof *h);
    if (plen)
        memcpy(b->data + sizeof *h, payload, plen);
    while ((rc = fi_tsend(t->ep, b->data, len, NULL, t->addr[dst], tag, &b->op)) == -FI_EAGAIN &&
           retry(t, &until, "a message"))
        ;
    if (rc) {
        free(b);
        if (!t->x.failed)
            fatal(t, CL_EIO, "fi_tsend to rank %d: %s", dst, fi_strerror((int)-rc));
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
    free(b);
}

static void send_ctrl(rdma_rank *t, int dst, int kind, uint64_t id, uint64_t key, uint64_t addr)
{
    rdma_hdr h = {.magic = RDMA_MAGIC, .kind = (uint16_t)kind, .src = t->me, .id = id,
                  .key = key, .addr = addr};
    post_bytes(t, dst, (uint64_t)KIND_CTRL << TAG_KIND_SHIFT, &h, NULL, 0);
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
    rdma_hdr h = {.magic = RDMA_MAGIC, .kind = r->x.eager ? H_EAGER : H_RTS, .src = t->me,
                  .tag = tag, .ctx = ctx, .k = t->nmsg[dst], .total = bytes, .sum = r->x.sum};
    if (r->x.eager) {
        if (post_bytes(t, dst, tag_of(KIND_MSG, t->me, ctx, tag), &h, buf, bytes)) {
            xfer_req_free(&t->x, &r->x);
            return t->x.failed;
        }
        t->stats.eager_sends++;
        *out = &r->x.base;
        xfer_complete(&t->x, &r->x, 0);
        return 0;
    }
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
        h.addr = rdma__mr_addr(&t->mrs, r->mr, buf);
        h.key = r->mr->key;
    }
    h.id = r->id = ++t->next_id;
    r->lnext = t->rdv_sends;
    t->rdv_sends = r;
    *out = &r->x.base;
    /* From here the request is the pattern's: a failure shows in its wait. */
    post_bytes(t, dst, tag_of(KIND_RTS, t->me, ctx, tag), &h, NULL, 0);
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

/* ---- receiving ---- */

static int post_recv(rdma_rank *t, rdma_req *r)
{
    int src = r->x.peer, tag = r->x.tag;
    uint64_t want = tag_of(KIND_MSG, src < 0 ? 0 : src, r->x.ctx, tag < 0 ? 0 : tag);
    uint64_t ignore = TAG_RTS_BIT | (src < 0 ? TAG_SRC_MASK : 0) | (tag < 0 ? TAG_TAG_MASK : 0);
    /* Header, buffer, and room for the rest of any eager message: the
     * provider never truncates, commlab judges (recv_arrived). */
    struct iovec iov[3] = {{&r->hdr, sizeof r->hdr}};
    size_t count = 1;
    if (r->x.bytes)
        iov[count++] = (struct iovec){r->x.buf, (size_t)r->x.bytes};
    if (r->x.bytes < t->eager_limit)
        iov[count++] = (struct iovec){t->spill, (size_t)(t->eager_limit - r->x.bytes)};
    void *desc[3] = {NULL, NULL, NULL};
    r->op.what = OP_RECV;
    double until = 0;
    ssize_t rc;
    while ((rc = fi_trecvv(t->ep, iov, desc, count, FI_ADDR_UNSPEC, want, ignore,
                           &r->op)) == -FI_EAGAIN &&
           retry(t, &until, "a receive"))
        ;
    if (rc && !t->x.failed)
        fatal(t, CL_EIO, "fi_trecvv: %s", fi_strerror((int)-rc));
    return t->x.failed;
}

static int rdma_irecv(cl_comm *c, void *buf, size_t bytes, int src, int tag, uint32_t ctx,
                      cl_request **out)
{
    rdma_rank *t = c->world->backend;
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

/* Whether h is a header rank t can act on; if not the rank failed. */
static bool hdr_ok(rdma_rank *t, const rdma_hdr *h, size_t len)
{
    if (len < sizeof *h || h->magic != RDMA_MAGIC || h->kind < H_EAGER || h->kind > H_BYE ||
        h->src < 0 || h->src >= t->n) {
        fatal(t, CL_EPROTO, "a message with a bad header (%zu bytes, magic %#x, kind %u, "
              "rank %d)", len, h->magic, h->kind, h->src);
        return false;
    }
    return true;
}

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
           retry(t, &until, "an RDMA read"))
        ;
    if (rc && !t->x.failed)
        fatal(t, CL_EIO, "fi_read of %llu bytes from rank %d: %s",
              (unsigned long long)r->chunk, r->x.base.status.source, fi_strerror((int)-rc));
}

/* Receive r matched the request to send in r->hdr: pull the data. */
static void rendezvous(rdma_rank *t, rdma_req *r)
{
    const rdma_hdr *h = &r->hdr;
    int src = h->src;
    if (xfer_truncated(&t->x, &r->x, src, h->total)) {
        send_ctrl(t, src, H_NACK, h->id, 0, 0);
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
        fatal(t, CL_EIO, "a %llu-byte message from rank %d is larger than the provider's "
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
           retry(t, &until, "a receive"))
        ;
    if (rc) {
        if (!t->x.failed)
            fatal(t, CL_EIO, "fi_trecv: %s", fi_strerror((int)-rc));
        return;
    }
    send_ctrl(t, src, H_CTS, h->id, r->id, 0);
}

/* Receive r's header (and, eager, its data) arrived: len bytes. */
static void recv_arrived(rdma_rank *t, rdma_req *r, size_t len)
{
    const rdma_hdr *h = &r->hdr;
    if (!hdr_ok(t, h, len))
        return;
    if (h->ctx != r->x.ctx) {
        fatal(t, CL_EPROTO, "a receive of context %#x matched a message of context %#x: the "
              "two collide in the 15 bits a tag gives a context", r->x.ctx, h->ctx);
        return;
    }
    xfer_take_envelope(&r->x, h->src, h->tag, h->total, rank_msg_id(h->src, t->me, h->k));
    if (h->kind == H_RTS) {
        rendezvous(t, r);
        return;
    }
    if (h->kind != H_EAGER || len - sizeof *h != h->total) {
        fatal(t, CL_EPROTO, "rank %d sent %zu bytes for a %llu-byte message", h->src,
              len - sizeof *h, (unsigned long long)h->total);
        return;
    }
    if (xfer_truncated(&t->x, &r->x, h->src, h->total)) {
        xfer_complete(&t->x, &r->x, CL_ETRUNC);
        return;
    }
    if (t->x.base.tracing)
        r->x.started = rank_now(&t->x.base);
    xfer_finish_recv(&t->x, &r->x, h->sum);
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
    send_ctrl(t, r->x.base.status.source, H_FIN, r->send_id, 0, bits);
    xfer_finish_recv(&t->x, &r->x, r->x.sum);
}

/* ---- control records ---- */

static int post_ctrl(rdma_rank *t, rdma_ctrl *c)
{
    c->op.what = OP_CTRL;
    ssize_t rc = fi_trecv(t->ep, &c->hdr, sizeof c->hdr, NULL, FI_ADDR_UNSPEC,
                          (uint64_t)KIND_CTRL << TAG_KIND_SHIFT, TAG_LOW62, &c->op);
    return (int)rc;
}

static void ctrl_arrived(rdma_rank *t, rdma_ctrl *c, size_t len)
{
    rdma_hdr h = c->hdr;
    double until = 0;
    int rc;
    while ((rc = post_ctrl(t, c)) == -FI_EAGAIN && retry(t, &until, "a control receive"))
        ;
    if (rc && !t->x.failed)
        fatal(t, CL_EIO, "fi_trecv: %s", fi_strerror(-rc));
    if (!hdr_ok(t, &h, len))
        return;
    if (h.kind == H_BYE) {
        t->byes++;
        return;
    }
    rdma_req *r = take_send(t, h.id);
    if (!r || (h.kind != H_FIN && h.kind != H_NACK && h.kind != H_CTS) || r->x.peer != h.src) {
        fatal(t, CL_EPROTO, "rank %d answered (kind %u) a send of ours that is not waiting",
              h.src, h.kind);
        return;
    }
    if (h.kind == H_CTS) {
        if (t->x.base.tracing)
            r->x.started = rank_now(&t->x.base);
        r->op.what = OP_DATA_SEND;
        uint64_t tag = (uint64_t)KIND_DATA << TAG_KIND_SHIFT | (h.key & TAG_LOW62);
        ssize_t sr;
        until = 0;
        while ((sr = fi_tsend(t->ep, r->x.sbuf, (size_t)r->x.bytes, NULL, t->addr[h.src], tag,
                              &r->op)) == -FI_EAGAIN &&
               retry(t, &until, "rendezvous data"))
            ;
        if (sr && !t->x.failed)
            fatal(t, CL_EIO, "fi_tsend of %llu bytes to rank %d: %s",
                  (unsigned long long)r->x.bytes, h.src, fi_strerror((int)-sr));
        return;
    }
    if (h.kind == H_FIN && t->x.base.tracing) {
        double began;
        memcpy(&began, &h.addr, sizeof began);
        double now = rank_now(&t->x.base);
        r->x.started = began < r->x.posted ? r->x.posted : began > now ? now : began;
    }
    send_done(t, r);
}

/* ---- the progress engine ---- */

static void completed(rdma_rank *t, rdma_op *op, size_t len)
{
    switch (op->what) {
    case OP_RECV:
        recv_arrived(t, req_of_op(op), len);
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
        ctrl_arrived(t, (rdma_ctrl *)op, len);
        break;
    }
}

static void failed_op(rdma_rank *t, const struct fi_cq_err_entry *e)
{
    rdma_op *op = e->op_context;
    if (e->err == FI_ECANCELED)
        return;
    int w = op && op->what >= OP_RECV && op->what <= OP_CTRL ? op->what : 0;
    if (w == OP_BOUNCE)
        bounce_done(t, (rdma_bounce *)op);
    char prov[160] = "";
    if (t->cq)
        fi_cq_strerror(t->cq, e->prov_errno, e->err_data, prov, sizeof prov);
    static const char *const what[] = {"?", "a receive", "an RDMA read", "rendezvous data",
                                       "rendezvous data", "a message", "a control receive"};
    peer_lost(t, "libfabric failed %s: %s%s%s", what[w], fi_strerror(e->err), prov[0] ? ": " : "",
              prov);
}

/* One look at the completion queue, blocking up to BLOCK_MS when block
 * and the queue can.  Returns how many operations completed, or the rank's
 * fatal CL_E*. */
static int progress(rdma_rank *t, bool block)
{
    struct fi_cq_tagged_entry e[CQ_BATCH];
    ssize_t k = block && t->cq_waits ? fi_cq_sread(t->cq, e, CQ_BATCH, NULL, BLOCK_MS)
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
        fatal(t, CL_EIO, "fi_cq_read: %s", fi_strerror((int)-k));
        return t->x.failed;
    }
    for (ssize_t i = 0; i < k; i++)
        completed(t, e[i].op_context, e[i].len);
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
    if (o->nranks > RDMA_MAX_RANKS)
        return diag_set(d, CL_EINVAL, "the rdma backend runs at most %d ranks, got %d",
                        RDMA_MAX_RANKS, o->nranks);
    const char *want = o->provider && *o->provider ? o->provider : "auto";
    int err = rdma_provider_check(want, d);
    if (err)
        return err;
    if (strcmp(want, "auto") == 0)
        err = rdma_provider_auto(a->provider, sizeof a->provider, false, d);
    else
        snprintf(a->provider, sizeof a->provider, "%s", want);
    if (err)
        return err;
    /* With RDMA reads if the provider has them. */
    struct fi_info *hints = rdma__hints(a->provider, true), *list = NULL;
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
    a->nranks = (uint32_t)o->nranks;
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
    for (int i = 0; i < o->nranks; i++) {
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
    struct fi_info *hints = rdma__hints(t->area->provider, t->area->use_rma), *list = NULL;
    if (!hints)
        return diag_set(d, CL_ENOMEM, "rank %d: out of memory", t->me);
    int ret = fi_getinfo(RDMA_FI_VERSION, NULL, NULL, 0, hints, &list);
    fi_freeinfo(hints);
    if (ret || !list)
        return rdma__fail(d, CL_EIO, "fi_getinfo", ret ? ret : -FI_ENODATA,
                          "rank %d: provider '%s'", t->me, t->area->provider);
    t->info = fi_dupinfo(rdma__pick(list));
    fi_freeinfo(list);
    if (!t->info)
        return diag_set(d, CL_ENOMEM, "rank %d: out of memory", t->me);
    struct fi_info *fi = t->info;
    rdma__prov_name(fi, t->prov, sizeof t->prov);
    t->inject = fi->tx_attr->inject_size;
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

static int rdma_rank_open(real_rank **out, const job *j, int rank, const real_opts *o, cl_diag *d)
{
    rdma_rank *t = calloc(1, sizeof *t);
    size_t n = (size_t)j->nranks;
    if (!t || !(t->addr = calloc(n, sizeof *t->addr)) || !(t->nmsg = calloc(n, sizeof *t->nmsg)) ||
        !(t->ctrl = calloc(CTRL_RECVS, sizeof *t->ctrl)) ||
        !(t->spill = malloc(o->eager_limit ? (size_t)o->eager_limit : 1))) {
        if (t) {
            free(t->ctrl);
            free(t->addr);
            free(t->nmsg);
            free(t);
        }
        return diag_set(d, CL_ENOMEM, "rank %d: out of memory", rank);
    }
    /* Matching is libfabric's: xfer's match queues and pull hook stay unused. */
    xfer_init(&t->x, &rdma_ops, j, rank, o->check, sizeof(rdma_req), sizeof(xfer_msg), NULL);
    t->x.base.poll = rdma_poll;
    t->x.base.block = rdma_block;
    t->area = j->transport;
    t->n = (int)n;
    t->me = rank;
    t->eager_limit = o->eager_limit;
    t->use_rma = t->area->use_rma;
    int err = open_endpoint(t, d);
    if (!err)
        err = exchange_addresses(t, j, d);
    for (int i = 0; i < CTRL_RECVS && !err; i++) {
        int ret = post_ctrl(t, &t->ctrl[i]);
        if (ret)
            err = rdma__fail(d, CL_EIO, "fi_trecv", ret, "rank %d: a control receive", t->me);
    }
    if (err)
        return open_fail(t, err);
    *out = &t->x.base;
    return 0;
}

/* Every rank says BYE to every other and waits for theirs (bounded), so no
 * endpoint closes under a message still on its way. */
static void say_bye(rdma_rank *t)
{
    for (int i = 0; i < t->n && !t->x.failed; i++) {
        if (i == t->me)
            continue;
        rdma_hdr h = {.magic = RDMA_MAGIC, .kind = H_BYE, .src = t->me};
        /* A tracked send (not an inject): its completion says it left. */
        size_t len = sizeof h;
        rdma_bounce *b = malloc(sizeof *b + len);
        if (!b)
            break;
        b->op.what = OP_BOUNCE;
        b->len = len;
        memcpy(b->data, &h, len);
        double until = 0;
        ssize_t rc;
        while ((rc = fi_tsend(t->ep, b->data, len, NULL, t->addr[i],
                              (uint64_t)KIND_CTRL << TAG_KIND_SHIFT, &b->op)) == -FI_EAGAIN &&
               retry(t, &until, "a closing message"))
            ;
        if (rc) {
            free(b);
            break;
        }
        b->prev = NULL;
        b->next = t->bounces;
        if (t->bounces)
            t->bounces->prev = b;
        t->bounces = b;
        t->bounces_out++;
    }
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
    while (t->bounces) {
        rdma_bounce *b = t->bounces;
        t->bounces = b->next;
        free(b);
    }
    /* Rendezvous sends still listed are the pattern's requests. */
    xfer_release(&t->x);
    free(t->ctrl);
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
