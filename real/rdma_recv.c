/*
 * rdma_recv.c - the rdma transport's receiving side (real/rdma.h says
 * which file does what; rdma.c says what the envelope and the protocols
 * are).
 *
 * The rendezvous, receiving side: a receive matched to a request to send
 * pulls the data by RDMA read (in pieces of at most READ_CHUNK) and answers
 * FIN, or, without RDMA reads, posts a tagged receive for the data and
 * answers CTS; a receive too small answers NACK.  Whose matching found the
 * pair does not matter here: libfabric's (below) or commlab's
 * (rdma_pool.c).
 *
 * Receiving with libfabric's matching: rdma__irecv posts the receive as up
 * to three pieces (the --check sum, the buffer, the scratch area for what
 * overflows it), and the completion says whether a message or its request
 * to send arrived.
 */
#include <string.h>
#include <sys/uio.h>

#include "real/rdma_impl.h"
#include "real/xfer.h"

/* ---- the rendezvous, receiving side ---- */

/* Posts the read of the next piece of a message of total bytes, off of
 * them read, from (raddr, rkey) at rank src into to: *chunk its bytes, op
 * its context (its what set by the caller).  On failure the rank fails. */
static void read_piece(rdma_rank *t, rdma_op *op, unsigned char *to, uint64_t total,
                       uint64_t off, uint64_t *chunk, int src, uint64_t raddr, uint64_t rkey)
{
    uint64_t left = total - off;
    uint64_t max = t->max_msg < READ_CHUNK ? t->max_msg : READ_CHUNK;
    *chunk = left < max ? left : max;
    double until = 0;
    ssize_t rc;
    struct iovec iov = {to + off, (size_t)*chunk};
    struct fi_rma_iov rma = {raddr + off, (size_t)*chunk, rkey};
    void *desc = NULL;
    struct fi_msg_rma msg = {.msg_iov = &iov, .desc = &desc, .iov_count = 1,
                             .addr = t->addr[src], .rma_iov = &rma, .rma_iov_count = 1,
                             .context = op};
    while ((rc = fi_readmsg(t->ep, &msg, t->read_flags)) == -FI_EAGAIN &&
           rdma__retry(t, &until, "an RDMA read"))
        ;
    if (rc && !t->x.failed)
        xfer_fatal(&t->x, CL_EIO, "fi_read of %llu bytes from rank %d: %s",
                   (unsigned long long)*chunk, src, fi_strerror((int)-rc));
}

static void read_next(rdma_rank *t, rdma_req *r)
{
    r->op.what = OP_READ;
    read_piece(t, &r->op, r->x.buf, r->x.total, r->off, &r->chunk, r->x.base.status.source,
               r->raddr, r->rkey);
}

/* Receive r (its envelope taken) matched the request to send h from src:
 * pull the data. */
void rdma__rendezvous(rdma_rank *t, rdma_req *r, const rdma_rts *h, int src)
{
    if (xfer_truncated(&t->x, &r->x, src, h->total)) {
        rdma__ctl_send(t, src, H_NACK, h->id, 0, 0, false);
        xfer_complete(&t->x, &r->x, CL_ETRUNC);
        return;
    }
    r->x.sum = h->sum;
    r->send_id = h->id;
    r->lazy = h->lazy != 0;
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
    rdma__ctl_send(t, src, H_CTS, h->id, r->id, 0, false);
}

void rdma__read_done(rdma_rank *t, rdma_req *r)
{
    r->off += r->chunk;
    rank_progressed(&t->x.base);
    if (r->off < r->x.total) {
        read_next(t, r);
        return;
    }
    if (r->x.total > t->eager_limit)
        t->stats.rma_reads++;
    rdma__fin(t, r->x.base.status.source, r->send_id, r->x.started, r->lazy);
    xfer_finish_recv(&t->x, &r->x, r->x.sum);
}

void rdma__msg_read(rdma_rank *t, rdma_msg *m, int src)
{
    m->src = src;
    m->x.got = 0;
    m->op.what = OP_MSG_READ;
    read_piece(t, &m->op, m->x.data, m->x.total, 0, &m->chunk, src, m->rts.addr, m->rts.key);
}

void rdma__msg_read_done(rdma_rank *t, rdma_msg *m)
{
    m->x.got += m->chunk;
    rank_progressed(&t->x.base);
    if (m->x.got < m->x.total) {
        read_piece(t, &m->op, m->x.data, m->x.total, m->x.got, &m->chunk, m->src, m->rts.addr,
                   m->rts.key);
        return;
    }
    rdma__fin(t, m->src, m->rts.id, m->x.arrived, m->rts.lazy != 0);
    if (m->x.waiting)
        xfer_deliver_copy(&t->x, m->x.waiting, &m->x);
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
    uint64_t want = rdma__tag_of(KIND_MSG, src < 0 ? 0 : src, r->x.ctx, tag < 0 ? 0 : tag);
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

int rdma__irecv(cl_comm *c, void *buf, size_t bytes, int src, int tag, uint32_t ctx,
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
void rdma__recv_arrived(rdma_rank *t, rdma_req *r, const struct fi_cq_tagged_entry *e)
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
