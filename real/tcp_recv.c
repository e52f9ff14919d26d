/*
 * tcp_recv.c - the TCP transport's receiving side: reading a peer's
 * bytes, checking and acting on its frames, the rendezvous receive, and
 * the progress engine (real/tcp.c says what the frames are).
 *
 * Reading.  A peer's bytes go into its input buffer, and small bodies are
 * copied out of it; a body is read straight into its destination (the
 * posted receive, or an unexpected message's copy) for whatever did not come
 * with the header.  While a receive waits for DATA from a peer, that peer is
 * read one header at a time, so a rendezvous body lands in the receive
 * buffer without an intermediate copy.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "real/tcp.h"

#define MAX_MESSAGE ((uint64_t)1 << 48) /* no RTS announces more */
#define EVENTS 64                /* epoll events per call */

/* Takes r out of a rendezvous list by id; NULL if no such request. */
static tcp_req *list_take(tcp_req **list, uint64_t id)
{
    for (tcp_req **at = list; *at; at = &(*at)->lnext)
        if ((*at)->id == id) {
            tcp_req *r = *at;
            *at = r->lnext;
            r->lnext = NULL;
            return r;
        }
    return NULL;
}

/* ---- receiving ---- */

/* Rendezvous: receive r matched the RTS m from src.  A remote sender is
 * asked for the data (CTS) or told it does not fit (NACK); a send to
 * ourselves is one memcpy. */
void tcp__pull(xfer_rank *x, xfer_req *xr, xfer_msg *xm, int src)
{
    tcp_rank *t = (tcp_rank *)x;
    tcp_req *r = (tcp_req *)xr;
    tcp_msg *m = (tcp_msg *)xm;
    r->x.started = t->x.base.tracing ? rank_now(&t->x.base) : 0;
    tcp_req *self = m->self_send;
    if (xfer_truncated(x, xr, src, m->x.total)) {
        if (self)
            xfer_complete(&t->x, &self->x, 0);
        else
            tcp__send_ctrl(t, &t->peers[src], TCP_NACK, 0, m->send_id, 0);
        xfer_complete(&t->x, &r->x, CL_ETRUNC);
        xfer_msg_free(&t->x, &m->x);
        return;
    }
    r->x.sum = m->x.sum;
    if (self) {
        if (m->x.total && r->x.buf && self->x.sbuf)
            memcpy(r->x.buf, self->x.sbuf, (size_t)m->x.total);
        self->x.started = r->x.started;
        xfer_msg_free(&t->x, &m->x);
        xfer_complete(&t->x, &self->x, 0);
        xfer_finish_recv(&t->x, &r->x, r->x.sum);
        return;
    }
    tcp_peer *p = &t->peers[src];
    r->id = ++t->next_id;
    r->lnext = p->recvs;
    p->recvs = r;
    tcp__send_ctrl(t, p, TCP_CTS, m->x.total, m->send_id, r->id);
    xfer_msg_free(&t->x, &m->x);
}

/* The body of p's current frame is all here. */
static void body_done(tcp_rank *t, tcp_peer *p)
{
    tcp_req *r = p->body_req;
    tcp_msg *m = p->body_msg;
    p->body_req = NULL;
    p->body_msg = NULL;
    p->body_dst = NULL;
    if (r) {
        xfer_finish_recv(&t->x, &r->x, r->x.sum);
    } else if (m) {
        m->x.got = m->x.total;
        if (m->x.waiting)
            xfer_deliver_copy(&t->x, m->x.waiting, &m->x);
    }
}

static void body_start(tcp_rank *t, tcp_peer *p, void *dst, uint64_t len, tcp_req *r,
                       tcp_msg *m)
{
    p->body_dst = dst;
    p->body_left = len;
    p->body_req = r;
    p->body_msg = m;
    if (len == 0)
        body_done(t, p);
}

/* A new message's envelope from p: matched to a posted receive, or kept. */
static void arrive(tcp_rank *t, tcp_peer *p, const wire_hdr *f, bool eager)
{
    int src = p->rank;
    tcp_msg *m = (tcp_msg *)xfer_msg_new(&t->x);
    if (!m) {
        xfer_fatal(&t->x, CL_ENOMEM, "out of memory for a message from rank %d", src);
        return;
    }
    m->x.eager = eager;
    m->x.total = f->len;
    m->x.sum = f->a;
    m->send_id = f->b;
    m->x.msg_id = rank_msg_id(src, t->me, ++p->nmsg_in);
    xfer_req *r;
    switch (xfer_arrive(&t->x, &m->x, src, f->tag, f->ctx, &r)) {
    case XFER_INTO_RECV:
        body_start(t, p, r->buf, f->len, (tcp_req *)r, NULL);
        break;
    case XFER_INTO_MSG:
        body_start(t, p, m->x.data, f->len, NULL, m);
        break;
    case XFER_INTO_DROP:
        body_start(t, p, NULL, f->len, NULL, NULL);
        break;
    }
}

static void bad_frame(tcp_rank *t, tcp_peer *p, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void bad_frame(tcp_rank *t, tcp_peer *p, const char *fmt, ...)
{
    cl_diag why;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why.msg, sizeof why.msg, fmt, ap);
    va_end(ap);
    xfer_fatal(&t->x, CL_EPROTO, "rank %d sent a bad frame: %s", p->rank, why.msg);
    tcp__close_peer(t, p);
}

/* One whole header from p: checked, then acted on. */
static void frame_handle(tcp_rank *t, tcp_peer *p, const wire_hdr *f)
{
    if (!wire_hdr_valid(f)) {
        bad_frame(t, p, "magic %#x, version %u", f->magic, f->version);
        return;
    }
    if (f->src != (uint32_t)p->rank) {
        bad_frame(t, p, "it claims to come from rank %u", f->src);
        return;
    }
    if (p->bye) {
        bad_frame(t, p, "kind %u after it said it was done", f->kind);
        return;
    }
    tcp_req *r;
    switch (f->kind) {
    case TCP_EAGER:
        if (f->len > t->eager_limit || f->tag < 0) {
            bad_frame(t, p, "an eager message of %llu bytes (limit %llu), tag %d",
                      (unsigned long long)f->len, (unsigned long long)t->eager_limit, f->tag);
            return;
        }
        arrive(t, p, f, true);
        break;
    case TCP_RTS:
        if (f->len > MAX_MESSAGE || f->tag < 0) {
            bad_frame(t, p, "a request to send %llu bytes, tag %d", (unsigned long long)f->len,
                      f->tag);
            return;
        }
        arrive(t, p, f, false);
        break;
    case TCP_CTS:
        r = list_take(&p->sends, f->a);
        if (!r || f->len != r->x.bytes) {
            bad_frame(t, p, "a clear-to-send for %llu bytes of no send of ours",
                      (unsigned long long)f->len);
            return;
        }
        if (t->x.base.tracing)
            r->x.started = rank_now(&t->x.base);
        r->x.phase = PH_DATA;
        wire_hdr_make(r->hdr, TCP_DATA, t->me, 0, 0, r->x.bytes, f->b, 0);
        r->payload = r->x.sbuf;
        r->plen = r->x.bytes;
        tcp__enqueue(t, p, r);
        break;
    case TCP_NACK:
        r = list_take(&p->sends, f->a);
        if (!r) {
            bad_frame(t, p, "a refusal of no send of ours");
            return;
        }
        xfer_complete(&t->x, &r->x, 0);
        break;
    case TCP_DATA:
        r = list_take(&p->recvs, f->a);
        if (!r || f->len != r->x.total) {
            bad_frame(t, p, "%llu bytes of data for no receive of ours",
                      (unsigned long long)f->len);
            return;
        }
        body_start(t, p, r->x.buf, f->len, r, NULL);
        break;
    case TCP_BYE:
        p->bye = true;
        break;
    default:
        bad_frame(t, p, "unknown kind %u", f->kind);
        return;
    }
}

/* After recv returned got <= 0 on p: false when there is nothing more to
 * read for now. */
static bool read_failed(tcp_rank *t, tcp_peer *p, ssize_t got)
{
    if (got < 0 && errno == EINTR)
        return true;
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return false;
    if (p->bye) { /* the end it announced */
        tcp__close_peer(t, p);
        return false;
    }
    if (got == 0)
        tcp__lost(t, p, "it closed the connection");
    else
        tcp__lost(t, p, strerror(errno));
    return false;
}

/* Reads what p sent and handles every whole frame.  Returns how many reads
 * brought bytes (a long body arriving is progress; see tcp__flush()). */
static int peer_read(tcp_rank *t, tcp_peer *p)
{
    int handled = 0;
    bool drained = false; /* the last read was short: the socket is empty */
    if (!p->ibuf && !(p->ibuf = malloc(t->icap))) {
        xfer_fatal(&t->x, CL_ENOMEM, "out of memory for an input buffer");
        return 0;
    }
    while (p->fd >= 0 && !t->x.failed) {
        if (p->body_left) {
            uint64_t take = 0;
            if (p->ioff < p->ilen) { /* what came with the header */
                take = p->ilen - p->ioff < p->body_left ? p->ilen - p->ioff : p->body_left;
                if (p->body_dst)
                    memcpy(p->body_dst, p->ibuf + p->ioff, (size_t)take);
                p->ioff += (size_t)take;
            } else if (drained) {
                break;
            } else if (p->body_dst) { /* straight into the destination */
                ssize_t got = recv(p->fd, p->body_dst, (size_t)p->body_left, MSG_DONTWAIT);
                if (got <= 0) {
                    if (read_failed(t, p, got))
                        continue;
                    break;
                }
                take = (uint64_t)got;
                drained = take < p->body_left;
                handled++;
                p->owes_ack = true;
                rank_progressed(&t->x.base);
            } else { /* discarded, through the input buffer */
                size_t want = p->body_left < t->icap ? (size_t)p->body_left : t->icap;
                ssize_t got = recv(p->fd, p->ibuf, want, MSG_DONTWAIT);
                if (got <= 0) {
                    if (read_failed(t, p, got))
                        continue;
                    break;
                }
                p->ioff = 0;
                p->ilen = (size_t)got;
                drained = (size_t)got < want;
                handled++;
                p->owes_ack = true;
                rank_progressed(&t->x.base);
                continue;
            }
            if (p->body_dst)
                p->body_dst += take;
            p->body_left -= take;
            if (!p->body_left)
                body_done(t, p);
            continue;
        }
        if (p->ilen - p->ioff >= WIRE_HDR) {
            wire_hdr f;
            wire_hdr_decode(p->ibuf + p->ioff, &f);
            p->ioff += WIRE_HDR;
            frame_handle(t, p, &f);
            continue;
        }
        if (drained)
            break;
        size_t have = p->ilen - p->ioff;
        memmove(p->ibuf, p->ibuf + p->ioff, have);
        p->ilen = have;
        p->ioff = 0;
        /* Waiting for DATA: read one header at a time, so the body that
         * may follow lands in the receive buffer, not here. */
        size_t want = p->recvs ? WIRE_HDR - have : t->icap - have;
        ssize_t got = recv(p->fd, p->ibuf + have, want, MSG_DONTWAIT);
        if (got <= 0) {
            if (read_failed(t, p, got))
                continue;
            break;
        }
        p->ilen += (size_t)got;
        drained = (size_t)got < want;
        handled++;
        p->owes_ack = true;
        rank_progressed(&t->x.base);
    }
    return handled;
}

/* ---- the progress engine ---- */

/* One look at every socket, waiting up to timeout_ms for something to
 * happen.  Returns how often bytes moved between this rank and its peers
 * (0: nothing happened), or a negative CL_E* after a fatal error.
 * Strangers do not count: they are no progress of the run. */
int tcp__progress(tcp_rank *t, int timeout_ms)
{
    struct epoll_event ev[EVENTS];
    int k = epoll_wait(t->ep, ev, EVENTS, timeout_ms);
    if (k < 0 && errno != EINTR)
        xfer_fatal(&t->x, CL_EIO, "epoll_wait: %s", strerror(errno));
    int handled = 0;
    bool accept = false;
    /* New connections are taken after the batch's other events: taking
     * one may shut out the oldest incoming handshake (hs_incoming), whose
     * memory a later event of this batch would still point to. */
    for (int i = 0; i < k; i++) {
        tcp_ev *e = ev[i].data.ptr;
        if (e->type == TCP_EV_LISTEN) {
            accept = true;
        } else if (e->type == TCP_EV_HANDSHAKE) {
            tcp__hs_event(t, e, ev[i].events);
        } else {
            tcp_peer *p = (tcp_peer *)e;
            if (ev[i].events & EPOLLOUT)
                handled += tcp__flush(t, p);
            if (ev[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
                handled += peer_read(t, p);
        }
    }
    if (accept)
        tcp__accept(t);
    if (t->hs)
        tcp__hs_expire(t);
    return t->x.failed ? t->x.failed : handled;
}
