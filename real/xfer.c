/*
 * xfer.c - a measured rank's messages: the pools, matching, completion and
 * records that every real transport (shm, tcp and rdma) shares (see xfer.h).
 */
#include "real/xfer.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/units.h"

void xfer_init(xfer_rank *x, const comm_ops *ops, const job *j, int rank, bool check,
               size_t req_size, size_t msg_size, xfer_pull_fn *pull)
{
    rank_init(&x->base, ops, j, rank, check);
    x->base.describe = xfer_describe;
    match_queues_init(&x->mq);
    x->free_reqs = NULL;
    x->free_msgs = NULL;
    x->req_size = req_size;
    x->msg_size = msg_size;
    x->check = check;
    x->failed = 0;
    x->pull = pull;
}

void xfer_release(xfer_rank *x)
{
    while (x->mq.unexpected.head) {
        match_link *l = x->mq.unexpected.head;
        match_remove(&x->mq, l);
        xfer_msg *m = xfer_msg_of(l);
        free(m->data);
        free(m);
    }
    match_queues_release(&x->mq);
    while (x->free_reqs) {
        xfer_req *r = x->free_reqs;
        x->free_reqs = r->next;
        free(r);
    }
    while (x->free_msgs) {
        xfer_msg *m = x->free_msgs;
        x->free_msgs = m->next_free;
        free(m);
    }
    rank_release(&x->base);
}

/* The first fatal error wins; false when one came before. */
static bool vfatal(xfer_rank *x, int err, const char *fmt, va_list ap)
{
    if (x->failed)
        return false;
    x->failed = err;
    diag_vfirst(&x->base.detail, err, fmt, ap);
    return true;
}

void xfer_fatal(xfer_rank *x, int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfatal(x, err, fmt, ap);
    va_end(ap);
}

void xfer_peer_lost(xfer_rank *x, long grace_ns, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    bool first = vfatal(x, CL_EPEER, fmt, ap);
    va_end(ap);
    if (first && grace_ns > 0) {
        struct timespec ts = {grace_ns / 1000000000L, grace_ns % 1000000000L};
        nanosleep(&ts, NULL);
    }
}

/* ---- pools ---- */

xfer_req *xfer_req_new(xfer_rank *x)
{
    xfer_req *r = x->free_reqs;
    if (r)
        x->free_reqs = r->next;
    else if (!(r = malloc(x->req_size)))
        return NULL;
    memset(r, 0, x->req_size);
    return r;
}

void xfer_req_free(xfer_rank *x, xfer_req *r)
{
    r->next = x->free_reqs;
    x->free_reqs = r;
}

xfer_msg *xfer_msg_new(xfer_rank *x)
{
    xfer_msg *m = x->free_msgs;
    if (m)
        x->free_msgs = m->next_free;
    else if (!(m = malloc(x->msg_size)))
        return NULL;
    memset(m, 0, x->msg_size);
    return m;
}

void xfer_msg_free(xfer_rank *x, xfer_msg *m)
{
    free(m->data);
    m->data = NULL;
    m->next_free = x->free_msgs;
    x->free_msgs = m;
}

/* ---- completion ---- */

void xfer_complete(xfer_rank *x, xfer_req *r, int err)
{
    r->base.err = err;
    r->base.done = true;
    rank_progressed(&x->base);
    if (r->kind == XFER_CTRL || r->kind == XFER_STREAM) {
        xfer_req_free(x, r);
        return;
    }
    if (!x->base.tracing || !rank_user_ctx(r->ctx))
        return; /* the barrier's own messages show as its span */
    double now = rank_now(&x->base);
    double started = r->started > 0 ? r->started : now;
    if (r->kind == XFER_SEND)
        rank_record(&x->base, REC_SEND, r->peer, r->tag, r->bytes, r->msg_id, r->posted,
                    started, now, r->base.blocking);
    else
        rank_record(&x->base, REC_RECV, r->base.status.source, r->base.status.tag,
                    r->base.status.bytes, r->msg_id, r->posted, started, now,
                    r->base.blocking);
}

bool xfer_truncated(xfer_rank *x, xfer_req *r, int src, uint64_t total)
{
    if (total <= r->bytes)
        return false;
    char a[UNITS_BUF], b[UNITS_BUF];
    rank_detail(&x->base, "a %s message from rank %d (tag %d) does not fit the %s receive "
                "buffer of rank %d", units_size_str(a, total), src, r->base.status.tag,
                units_size_str(b, r->bytes), x->base.rank);
    return true;
}

void xfer_take_envelope(xfer_req *r, int src, int tag, uint64_t total, uint64_t id)
{
    r->base.status.source = src;
    r->base.status.tag = tag;
    r->base.status.bytes = total;
    r->total = total;
    r->msg_id = id;
}

void xfer_finish_recv(xfer_rank *x, xfer_req *r, uint64_t sum)
{
    int err = 0;
    if (x->check && r->buf && rank_checksum(r->buf, r->total) != sum) {
        char a[UNITS_BUF];
        rank_detail(&x->base, "the %s message from rank %d (tag %d) arrived corrupted "
                    "(checksum mismatch)", units_size_str(a, r->total),
                    r->base.status.source, r->base.status.tag);
        err = CL_ECHECK;
    }
    xfer_complete(x, r, err);
}

void xfer_deliver_copy(xfer_rank *x, xfer_req *r, xfer_msg *m)
{
    if (xfer_truncated(x, r, r->base.status.source, m->total)) {
        xfer_complete(x, r, CL_ETRUNC);
    } else {
        if (m->total && r->buf && m->data)
            memcpy(r->buf, m->data, (size_t)m->total);
        if (!r->started) /* data that came before the receive starts when posted */
            r->started = m->arrived > r->posted ? m->arrived : r->posted;
        xfer_finish_recv(x, r, m->sum);
    }
    xfer_msg_free(x, m);
}

/* ---- posting and arriving ---- */

xfer_req *xfer_send_new(xfer_rank *x, const void *buf, size_t bytes, int dst, int tag,
                        uint32_t ctx, uint64_t eager_limit, uint64_t *nmsg)
{
    xfer_req *r = xfer_req_new(x);
    if (!r)
        return NULL;
    r->kind = XFER_SEND;
    r->base.is_send = true;
    r->base.blocking = x->base.comm.blocking_call;
    r->sbuf = buf;
    r->bytes = bytes;
    r->peer = dst;
    r->tag = tag;
    r->ctx = ctx;
    r->eager = bytes <= eager_limit;
    r->msg_id = rank_msg_id(x->base.rank, dst, ++*nmsg);
    if (x->check && (buf || !bytes)) /* no bytes have a sum too: the receiver's */
        r->sum = rank_checksum(buf, bytes);
    if (x->base.tracing)
        r->posted = rank_now(&x->base);
    if (rank_user_ctx(ctx))
        x->base.messages++;
    return r;
}

int xfer_arrive(xfer_rank *x, xfer_msg *m, int src, int tag, uint32_t ctx, xfer_req **rp)
{
    *rp = NULL;
    match_link_init(&m->link, src, tag, ctx);
    match_link *l = match_arrive(&x->mq, &m->link);
    if (l) {
        xfer_req *r = xfer_req_of(l);
        uint64_t total = m->total, sum = m->sum;
        xfer_take_envelope(r, src, tag, total, m->msg_id);
        if (!m->eager) {
            x->pull(x, r, m, src);
            return XFER_INTO_NONE;
        }
        if (x->base.tracing)
            r->started = rank_now(&x->base);
        xfer_msg_free(x, m);
        if (xfer_truncated(x, r, src, total)) {
            xfer_complete(x, r, CL_ETRUNC);
            return XFER_INTO_DROP;
        }
        r->sum = sum;
        *rp = r;
        return XFER_INTO_RECV;
    }
    if (!m->eager)
        return XFER_INTO_NONE;
    if (x->base.tracing)
        m->arrived = rank_now(&x->base);
    if (m->total && !(m->data = malloc((size_t)m->total))) {
        uint64_t total = m->total;
        match_remove(&x->mq, &m->link);
        xfer_msg_free(x, m);
        xfer_fatal(x, CL_ENOMEM, "out of memory keeping a %llu-byte message from rank %d",
                   (unsigned long long)total, src);
        return XFER_INTO_NONE;
    }
    return XFER_INTO_MSG;
}

/* ---- comm_ops ---- */

int xfer_op_irecv(cl_comm *c, void *buf, size_t bytes, int src, int tag, uint32_t ctx,
                  cl_request **out)
{
    xfer_rank *x = c->world->backend;
    if (x->failed)
        return x->failed;
    rank_active(&x->base);
    xfer_req *r = xfer_req_new(x);
    if (!r)
        return CL_ENOMEM;
    r->kind = XFER_RECV;
    r->base.blocking = x->base.comm.blocking_call;
    r->buf = buf;
    r->bytes = bytes;
    r->peer = src;
    r->tag = tag;
    r->ctx = ctx;
    if (x->base.tracing)
        r->posted = rank_now(&x->base);
    *out = &r->base;
    match_link_init(&r->link, src, tag, ctx);
    match_link *l = match_post_recv(&x->mq, &r->link);
    if (l) {
        xfer_msg *m = xfer_msg_of(l);
        int from = l->src;
        xfer_take_envelope(r, from, l->tag, m->total, m->msg_id);
        if (!m->eager)
            x->pull(x, r, m, from);
        else if (m->got >= m->total)
            xfer_deliver_copy(x, r, m);
        else
            m->waiting = r;
    }
    return 0;
}

void xfer_op_release(cl_comm *c, cl_request *req)
{
    xfer_req_free(c->world->backend, (xfer_req *)req);
}

void xfer_describe(const cl_request *req, wf_pending *out)
{
    const xfer_req *r = (const xfer_req *)req;
    *out = (wf_pending){.op = r->kind == XFER_SEND ? WF_SEND : WF_RECV, .peer = r->peer,
                        .tag = r->tag, .bytes = r->bytes};
}
