/*
 * rdma_pool.c - commlab's own matching for the rdma transport, on
 * providers whose tagged matching is not trusted (rdma_info.c's
 * rdma__own_match(): libfabric 1.17's shm provider loses a tagged message
 * that arrives before its receive is posted once two ranks have exchanged
 * a rendezvous; README: rdma).
 *
 * Every message, request to send and control record is then an untagged
 * message, its envelope (rdma_env) first, into a few large receive
 * buffers kept posted with FI_MULTI_RECV, so no message ever arrives
 * unexpected at the libfabric level.  commlab matches the envelope with
 * core/match.h (xfer_arrive, as shm and tcp do) and copies an eager
 * payload from the buffer into the receive's, or keeps a copy until a
 * receive wants it; a request to send goes to rdma_recv.c's rendezvous.  The
 * provider hands a buffer back (FI_MULTI_RECV in a completion's flags)
 * once it has less room than the largest message (FI_OPT_MIN_MULTI_RECV,
 * set by rdma_open.c), and it is posted again at once.
 *
 * With RDMA reads only messages up to the inject size land here (larger
 * eager ones are read: rdma.c), so the buffers are small (POOL_MIN_BYTES)
 * and stay in the cache (4 MiB ones, sized for the largest eager
 * message, made both copies of a 4 KiB message miss it: one-way 2.5 us
 * against 1.4-1.7 us with these, medians on a loaded 2-core machine).
 *
 * The limit, named: a burst of more messages than the buffers hold within
 * one progress pass (POOL_BUFS buffers of at least POOL_MIN_MSGS largest
 * messages each) would still reach the provider's own queue.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "real/rdma_impl.h"

#define POOL_BUFS 4                        /* receive buffers kept posted */
#define POOL_MIN_BYTES ((size_t)64 << 10)  /* ... of at least this many bytes */
#define POOL_MIN_MSGS 16                   /* ... holding at least this many largest messages */

int rdma__pool_create(rdma_rank *t)
{
    size_t body = (size_t)t->eager_limit + sizeof(uint64_t);
    if (t->use_rma && body > INJECT_MAX) /* larger eager messages are read: rdma.c */
        body = INJECT_MAX;
    if (body < sizeof(rdma_rts))
        body = sizeof(rdma_rts);
    t->pool_msg_max = sizeof(rdma_env) + body;
    size_t len = POOL_MIN_MSGS * t->pool_msg_max;
    if (len < POOL_MIN_BYTES)
        len = POOL_MIN_BYTES;
    if (!(t->pool = calloc(POOL_BUFS, sizeof *t->pool)))
        return CL_ENOMEM;
    for (int i = 0; i < POOL_BUFS; i++) {
        t->pool[i].len = len;
        if (!(t->pool[i].mem = malloc(len)))
            return CL_ENOMEM;
    }
    return 0;
}

void rdma__pool_destroy(rdma_rank *t)
{
    for (int i = 0; t->pool && i < POOL_BUFS; i++)
        free(t->pool[i].mem);
    free(t->pool);
    t->pool = NULL;
}

static int post_pool(rdma_rank *t, rdma_pool *p)
{
    p->op.what = OP_POOL;
    struct iovec iov = {p->mem, p->len};
    struct fi_msg msg = {.msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC,
                         .context = &p->op};
    return (int)fi_recvmsg(t->ep, &msg, FI_MULTI_RECV);
}

int rdma__pool_post_all(rdma_rank *t, cl_diag *d)
{
    for (int i = 0; i < POOL_BUFS; i++) {
        int ret = post_pool(t, &t->pool[i]);
        if (ret)
            return rdma__fail(d, CL_EIO, "fi_recvmsg", ret, "rank %d: a receive buffer", t->me);
    }
    return 0;
}

void rdma__pool_pull(xfer_rank *x, xfer_req *r, xfer_msg *m, int src)
{
    rdma_rank *t = (rdma_rank *)x;
    rdma_rts h = ((rdma_msg *)m)->rts;
    xfer_msg_free(x, m);
    rdma__rendezvous(t, (rdma_req *)r, &h, src);
}

/* One message of len bytes at buf (in a pool buffer) arrived, as
 * completion e from address from says: matched here, its payload copied
 * out before anything else runs. */
/* A message's envelope into *env: from the completion's data (a short
 * envelope: rdma_impl.h) or from the head of the buffer, which *buf and
 * *len then step past.  false, the rank failed, when there is none. */
static bool take_envelope(rdma_rank *t, const unsigned char **buf, size_t *len,
                          const struct fi_cq_tagged_entry *e, fi_addr_t from, rdma_env *env)
{
    if (e->flags & FI_REMOTE_CQ_DATA) {
        if (from >= (fi_addr_t)t->n) {
            xfer_fatal(&t->x, CL_EPROTO, "a %zu-byte message from an unknown address", *len);
            return false;
        }
        int tag = (int)(e->data & TAG_TAG_MASK);
        uint32_t ctx = (uint32_t)(e->data >> ENV_SHORT_TAG_BITS);
        env->tag = rdma__tag_of(KIND_MSG, (int)from, ctx, tag);
        env->data = (uint64_t)ctx << 32 | ((t->nrecv[from] + 1) & 0xffffffffu);
        return true;
    }
    if (*len < sizeof *env) {
        xfer_fatal(&t->x, CL_EPROTO, "a %zu-byte message without commlab's envelope", *len);
        return false;
    }
    memcpy(env, *buf, sizeof *env);
    *buf += sizeof *env;
    *len -= sizeof *env;
    return true;
}

static void pool_arrived(rdma_rank *t, const unsigned char *buf, size_t len,
                         const struct fi_cq_tagged_entry *e, fi_addr_t from)
{
    rdma_env env;
    if (!take_envelope(t, &buf, &len, e, from, &env))
        return;
    int kind = rdma__kind_of(env.tag), src = rdma__src_of(env.tag);
    if (kind == KIND_CTRL) {
        rdma_ctl h = {0};
        memcpy(&h, buf, len < sizeof h ? len : sizeof h);
        rdma__ctl_arrived(t, &h, len);
        return;
    }
    size_t pre = t->x.check ? sizeof(uint64_t) : 0;
    if (src >= t->n || kind == KIND_DATA || (kind == KIND_RTS && len != sizeof(rdma_rts)) ||
        len < pre) {
        xfer_fatal(&t->x, CL_EPROTO, "a message with a bad envelope (tag %#llx, %zu bytes)",
              (unsigned long long)env.tag, len);
        return;
    }
    xfer_msg *m = xfer_msg_new(&t->x);
    if (!m) {
        xfer_fatal(&t->x, CL_ENOMEM, "out of memory for a message from rank %d", src);
        return;
    }
    /* Messages from one rank arrive in the order it sent them (FI_ORDER_SAS),
     * so the receiver counts what a short envelope leaves out. */
    t->nrecv[src] = env.data & 0xffffffffu;
    m->msg_id = rank_msg_id(src, t->me, env.data & 0xffffffffu);
    t->stats.own_matched++;
    rdma_rts *h = &((rdma_msg *)m)->rts;
    if (kind == KIND_RTS) {
        memcpy(h, buf, sizeof *h);
        if (h->fin) { /* sent before this request: rdma.c */
            rdma__fin_arrived(t, src, h->fin);
            if (t->x.failed) {
                xfer_msg_free(&t->x, m);
                return;
            }
        }
        m->total = h->total;
        m->sum = h->sum;
    } else {
        m->total = len - pre;
        if (pre)
            memcpy(&m->sum, buf, pre);
    }
    /* A request to send within the eager limit (every rank has the same)
     * is an eager message the receiver reads: rdma.c. */
    bool by_read = kind == KIND_RTS && m->total <= t->eager_limit;
    m->eager = kind == KIND_MSG || by_read;
    rdma_rts rts = *h; /* m may be gone once matched */
    const unsigned char *payload = buf + pre;
    uint64_t total = m->total;
    xfer_req *r;
    switch (xfer_arrive(&t->x, m, src, (int)(env.tag & TAG_TAG_MASK), (uint32_t)(env.data >> 32),
                        &r)) {
    case XFER_INTO_RECV:
        if (by_read)
            rdma__rendezvous(t, (rdma_req *)r, &rts, src);
        else {
            if (total)
                memcpy(r->buf, payload, (size_t)total);
            xfer_finish_recv(&t->x, r, r->sum);
        }
        break;
    case XFER_INTO_MSG:
        if (by_read)
            rdma__msg_read(t, (rdma_msg *)m, src);
        else {
            if (total)
                memcpy(m->data, payload, (size_t)total);
            m->got = total;
        }
        break;
    case XFER_INTO_DROP: /* too large for its receive: the send completes all the same */
        if (by_read)
            rdma__ctl_send(t, src, H_NACK, rts.id, 0, 0, false);
        break;
    default: /* pulled, or the rank failed */
        break;
    }
}

void rdma__pool_done(rdma_rank *t, rdma_pool *p, const struct fi_cq_tagged_entry *e,
                     fi_addr_t from)
{
    if (e->len || (e->flags & FI_REMOTE_CQ_DATA))
        pool_arrived(t, e->buf, e->len, e, from);
    if (!(e->flags & FI_MULTI_RECV))
        return;
    double until = 0;
    int rc;
    while ((rc = post_pool(t, p)) == -FI_EAGAIN && rdma__retry(t, &until, "a receive buffer"))
        ;
    if (rc && !t->x.failed)
        xfer_fatal(&t->x, CL_EIO, "fi_recvmsg: %s", fi_strerror(-rc));
}
