/*
 * tcp.c - the TCP transport's messages (tcp_conn.c makes the connections;
 * real/tcp.h has what both share and the wire's header layout).
 *
 * Frames.  Every frame's header is checked (magic, version, zero fields,
 * the sender's rank, the kind, the length against what the kind allows): a
 * bad one from an authenticated peer is a protocol error that names it.
 *   - EAGER (bytes <= eager limit): the data follows the header.  The send
 *     completes once every byte is written to the socket; what the socket
 *     does not take waits, in order, in the peer's output queue.
 *   - RTS (above the limit): the size and a send id.  When a receive matches
 *     it, the receiver answers CTS (send id, receive id), or NACK if the
 *     message does not fit; on CTS the sender streams one DATA frame and the
 *     receiver reads its body straight into the posted buffer.  The send
 *     completes when all of it is written: TCP keeps order, so no FIN is
 *     needed.  Ids from the wire are looked up in short per-peer lists,
 *     never dereferenced.  So a send above the limit waits for its receive,
 *     and the deadlock pattern deadlocks at the same size as on shm and in
 *     the model.
 *   - BYE: the sender finished its last barrier and will close.  EOF after
 *     BYE is the end; EOF or a reset before it is a lost peer: an error that
 *     names it, never a hang.
 * Messages to oneself never touch a socket: they are matched on the spot.
 *
 * Reading.  A peer's bytes go into its input buffer, and small bodies are
 * copied out of it; a body is read straight into its destination (the
 * posted receive, or an unexpected message's copy) for whatever did not come
 * with the header.  While a receive waits for DATA from a peer, that peer is
 * read one header at a time, so a rendezvous body lands in the receive
 * buffer without an intermediate copy.  Writing batches queued frames into
 * one sendmsg, each frame's payload in pieces of at most SEND_CHUNK (512
 * KiB) a call.  The best piece depends on the machine.  On an AMD VM a
 * whole 1 MiB body in one sendmsg made loopback's round trip bimodal (185
 * or 420 us, in phases) and 256 KiB pieces kept it at 197-203 us (128 KiB
 * pieces: 229 us, 64 KiB: 305 us).  On an Intel Xeon VM 256 KiB pieces
 * made 4 MiB slow (`bench tcp`, three runs of each, taking turns: 4 MiB
 * windowed bandwidth 0.81-0.94 x Open MPI's with 256 KiB pieces,
 * 1.03-1.15 x with 512 KiB, 1.07-1.25 x with 1 MiB; 1 MiB 0.94-1.30,
 * 0.90-1.22 and 0.89-0.95 x).
 *
 * Waiting: poll the epoll set without blocking for a bounded spin (200 us,
 * 5 us when ranks outnumber cores), then publish the wait to the watchdog
 * (as shm does) and block in epoll_wait for up to 50 ms at a time; data
 * that arrives in between wakes it at once (level-triggered).  A polling
 * cl_test counts as waiting from its second failure on.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/units.h"
#include "real/tcp.h"

#define MAX_MESSAGE ((uint64_t)1 << 48) /* no RTS announces more */
#define EVENTS 64                /* epoll events per call */
#define IOV_BATCH 16             /* iovecs per sendmsg */
#define SEND_CHUNK ((size_t)512 << 10) /* a frame's payload bytes per sendmsg, at most */

enum { PH_EAGER, PH_RTS, PH_WAIT_CTS, PH_DATA }; /* a send's phases */

struct tcp_req {
    xfer_req x;              /* first; x.next: in a peer's output queue */
    tcp_req *lnext;          /* in a peer's rendezvous list */
    uint64_t id;             /* rendezvous: our send or receive id */
    unsigned char hdr[WIRE_HDR];  /* the frame to write ... */
    const unsigned char *payload; /* ... and what follows it */
    uint64_t plen;
    uint64_t sent;           /* bytes of hdr + payload written */
};

struct tcp_msg {
    xfer_msg x;              /* first */
    tcp_req *self_send;      /* a rendezvous send to ourselves */
    uint64_t send_id;        /* rendezvous: the sender's id */
};

/* ---- requests and messages ---- */

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

/* ---- connections ---- */

static void close_peer(tcp_rank *t, tcp_peer *p)
{
    if (p->fd < 0)
        return;
    epoll_ctl(t->ep, EPOLL_CTL_DEL, p->fd, NULL);
    close(p->fd);
    p->fd = -1;
}

/* The connection to p broke before it said it was done: an error that
 * names it, after the grace a local run gives the launcher to name a
 * peer that died (xfer_peer_lost). */
static void lost(tcp_rank *t, tcp_peer *p, const char *why)
{
    bool mid = p->body_left || p->ilen > p->ioff || p->recvs || p->sends || p->head;
    close_peer(t, p);
    if (t->closing || t->x.failed)
        return;
    xfer_peer_lost(&t->x, t->loss_grace_ns, "connection to rank %d lost%s: %s", p->rank,
                   mid ? " in the middle of a message" : "", why);
}

static void arm_out(tcp_rank *t, tcp_peer *p, bool on)
{
    if (p->out_armed == on || p->fd < 0)
        return;
    struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0), .data.ptr = &p->ev};
    epoll_ctl(t->ep, EPOLL_CTL_MOD, p->fd, &ev);
    p->out_armed = on;
}

static void record_rdv_send(tcp_peer *p, tcp_req *r)
{
    r->lnext = p->sends;
    p->sends = r;
}

/* r's frame is all in the socket. */
static void written(tcp_rank *t, tcp_peer *p, tcp_req *r)
{
    if (r->x.kind == XFER_SEND && r->x.phase == PH_RTS) {
        r->x.phase = PH_WAIT_CTS;
        record_rdv_send(p, r);
        return;
    }
    xfer_complete(&t->x, &r->x, 0);
}

/* Writes as much of p's output queue as the socket takes, in order, several
 * frames per system call.  Returns how often bytes moved: a long message
 * moving is progress (for the watchdog, and for a wait deciding whether to
 * keep spinning) long before it is finished. */
static int flush(tcp_rank *t, tcp_peer *p)
{
    int done = 0;
    while (p->head && p->fd >= 0) {
        struct iovec iov[IOV_BATCH];
        int k = 0;
        size_t asked = 0;
        for (tcp_req *r = p->head; r && k + 2 <= IOV_BATCH; r = (tcp_req *)r->x.next) {
            if (r->sent < WIRE_HDR) {
                iov[k++] = (struct iovec){r->hdr + r->sent, WIRE_HDR - (size_t)r->sent};
                asked += WIRE_HDR - (size_t)r->sent;
            }
            uint64_t poff = r->sent > WIRE_HDR ? r->sent - WIRE_HDR : 0;
            if (r->plen > poff) {
                size_t n = r->plen - poff < SEND_CHUNK ? (size_t)(r->plen - poff) : SEND_CHUNK;
                iov[k++] = (struct iovec){(void *)(r->payload + poff), n};
                asked += n;
                if (n < r->plen - poff)
                    break; /* the rest of it in the next call */
            }
        }
        struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)k};
        ssize_t w = sendmsg(p->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                arm_out(t, p, true);
                return done;
            }
            lost(t, p, strerror(errno));
            return done;
        }
        done++;
        rank_progressed(&t->x.base);
        double now = t->x.base.tracing ? rank_now(&t->x.base) : 0;
        for (uint64_t left = (uint64_t)w; left > 0 && p->head;) {
            tcp_req *r = p->head;
            if (r->sent == 0 && r->x.kind == XFER_SEND && r->x.phase == PH_EAGER && !r->x.started)
                r->x.started = now;
            uint64_t need = WIRE_HDR + r->plen - r->sent, take = need < left ? need : left;
            r->sent += take;
            left -= take;
            if (take < need)
                break;
            p->head = (tcp_req *)r->x.next;
            if (!p->head)
                p->tail = NULL;
            r->x.next = NULL;
            written(t, p, r);
        }
        if ((size_t)w < asked) { /* the socket is full: wait until it is not */
            arm_out(t, p, true);
            return done;
        }
    }
    arm_out(t, p, false);
    return done;
}

static void enqueue(tcp_rank *t, tcp_peer *p, tcp_req *r)
{
    r->x.next = NULL;
    r->sent = 0;
    if (p->tail)
        p->tail->x.next = &r->x;
    else
        p->head = r;
    p->tail = r;
    if (p->head == r && !p->out_armed)
        flush(t, p);
}

/* A control frame toward p, behind whatever is queued. */
static void send_ctrl(tcp_rank *t, tcp_peer *p, uint8_t kind, uint64_t len, uint64_t a,
                      uint64_t b)
{
    tcp_req *r = (tcp_req *)xfer_req_new(&t->x);
    if (!r) {
        xfer_fatal(&t->x, CL_ENOMEM, "out of memory queueing a control frame for rank %d", p->rank);
        return;
    }
    r->x.kind = XFER_CTRL;
    wire_hdr_make(r->hdr, kind, t->me, 0, 0, len, a, b);
    enqueue(t, p, r);
}

/* ---- receiving ---- */

/* Rendezvous: receive r matched the RTS m from src.  A remote sender is
 * asked for the data (CTS) or told it does not fit (NACK); a send to
 * ourselves is one memcpy. */
static void pull(xfer_rank *x, xfer_req *xr, xfer_msg *xm, int src)
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
            send_ctrl(t, &t->peers[src], TCP_NACK, 0, m->send_id, 0);
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
    send_ctrl(t, p, TCP_CTS, m->x.total, m->send_id, r->id);
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
    close_peer(t, p);
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
        enqueue(t, p, r);
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
        close_peer(t, p);
        return false;
    }
    if (got == 0)
        lost(t, p, "it closed the connection");
    else
        lost(t, p, strerror(errno));
    return false;
}

/* Reads what p sent and handles every whole frame.  Returns how many reads
 * brought bytes (a long body arriving is progress; see flush()). */
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
    for (int i = 0; i < k; i++) {
        tcp_ev *e = ev[i].data.ptr;
        if (e->type == TCP_EV_LISTEN) {
            tcp__accept(t);
        } else if (e->type == TCP_EV_HANDSHAKE) {
            tcp__hs_event(t, e, ev[i].events);
        } else {
            tcp_peer *p = (tcp_peer *)e;
            if (ev[i].events & EPOLLOUT)
                handled += flush(t, p);
            if (ev[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
                handled += peer_read(t, p);
        }
    }
    if (t->hs)
        tcp__hs_expire(t);
    return t->x.failed ? t->x.failed : handled;
}

static int tcp_poll(real_rank *r)
{
    return tcp__progress((tcp_rank *)r, 0);
}

/* ---- comm_ops ---- */

/* A send to ourselves: matched here and now, never through a socket. */
static void self_send(tcp_rank *t, tcp_req *s)
{
    tcp_msg *m = (tcp_msg *)xfer_msg_new(&t->x);
    if (!m) {
        xfer_fatal(&t->x, CL_ENOMEM, "out of memory for a message to ourselves");
        return;
    }
    double now = t->x.base.tracing ? rank_now(&t->x.base) : 0;
    m->x.eager = s->x.eager;
    m->x.total = s->x.bytes;
    m->x.sum = s->x.sum;
    m->x.msg_id = s->x.msg_id;
    if (s->x.eager) {
        m->x.got = m->x.total;
        m->x.arrived = now;
        s->x.started = now;
    } else {
        m->self_send = s;
    }
    match_link_init(&m->x.link, t->me, s->x.tag, s->x.ctx);
    match_link *l = match_arrive(&t->x.mq, &m->x.link);
    if (l) {
        tcp_req *r = (tcp_req *)xfer_req_of(l);
        xfer_take_envelope(&r->x, t->me, s->x.tag, m->x.total, m->x.msg_id);
        if (!s->x.eager) {
            pull(&t->x, &r->x, &m->x, t->me);
            return;
        }
        r->x.started = now;
        if (xfer_truncated(&t->x, &r->x, t->me, m->x.total)) {
            xfer_complete(&t->x, &r->x, CL_ETRUNC);
        } else {
            if (m->x.total && r->x.buf && s->x.sbuf)
                memcpy(r->x.buf, s->x.sbuf, (size_t)m->x.total);
            xfer_finish_recv(&t->x, &r->x, s->x.sum);
        }
        xfer_msg_free(&t->x, &m->x);
    } else if (s->x.eager && m->x.total) {
        if (!(m->x.data = malloc((size_t)m->x.total))) {
            match_remove(&t->x.mq, &m->x.link);
            xfer_msg_free(&t->x, &m->x);
            xfer_fatal(&t->x, CL_ENOMEM, "out of memory keeping a message to ourselves");
            return;
        }
        memcpy(m->x.data, s->x.sbuf, (size_t)m->x.total);
    }
    if (s->x.eager)
        xfer_complete(&t->x, &s->x, 0);
}

static int tcp_isend(cl_comm *c, const void *buf, size_t bytes, int dst, int tag, uint32_t ctx,
                     cl_request **out)
{
    tcp_rank *t = c->world->backend;
    if (t->x.failed)
        return t->x.failed;
    rank_active(&t->x.base);
    tcp_peer *p = &t->peers[dst];
    if (dst != t->me && p->fd < 0) {
        if (p->bye)
            rank_detail(&t->x.base, "rank %d has already finished", dst);
        else
            rank_detail(&t->x.base, "no connection to rank %d", dst);
        return CL_EPEER;
    }
    tcp_req *r = (tcp_req *)xfer_send_new(&t->x, buf, bytes, dst, tag, ctx, t->eager_limit,
                                          &p->nmsg_out);
    if (!r)
        return CL_ENOMEM;
    *out = &r->x.base;
    if (dst == t->me) {
        self_send(t, r);
        return 0;
    }
    if (r->x.eager) {
        r->x.phase = PH_EAGER;
        wire_hdr_make(r->hdr, TCP_EAGER, t->me, tag, ctx, bytes, r->x.sum, 0);
        r->payload = buf;
        r->plen = bytes;
    } else {
        r->x.phase = PH_RTS;
        r->id = ++t->next_id;
        wire_hdr_make(r->hdr, TCP_RTS, t->me, tag, ctx, bytes, r->x.sum, r->id);
    }
    enqueue(t, p, r);
    return 0;
}

/* rank_wait's block hook: publish the wait, then block in epoll.  Data
 * that came in between wakes epoll at once (level-triggered), so no
 * wake-up is lost. */
static void tcp_block(real_rank *base, cl_request **reqs, int n, wf_op call)
{
    rank_publish_stale(base, reqs, n, call);
    tcp__progress((tcp_rank *)base, RANK_IDLE_MS);
}

static const comm_ops tcp_ops = XFER_OPS(tcp_isend);

static void tcp_rank_close(real_rank *base);

static int tcp_rank_open(real_rank **out, const job *j, int rank, const real_opts *o, cl_diag *d)
{
    tcp_rank *t = calloc(1, sizeof *t);
    size_t n = (size_t)j->nranks;
    if (!t || !(t->peers = calloc(n, sizeof *t->peers)) ||
        !(t->addrs = calloc(n, sizeof *t->addrs)) ||
        !(t->addr_len = calloc(n, sizeof *t->addr_len))) {
        if (t) {
            free(t->peers);
            free(t->addrs);
            free(t);
        }
        return diag_set(d, CL_ENOMEM, "rank %d: out of memory", rank);
    }
    xfer_init(&t->x, &tcp_ops, j, rank, o->job.check, sizeof(tcp_req), sizeof(tcp_msg), pull);
    t->x.base.poll = tcp_poll;
    t->x.base.block = tcp_block;
    t->area = j->transport;
    t->n = (int)n;
    t->me = rank;
    t->eager_limit = o->job.eager_limit;
    /* Input buffers: one per peer that sends, smaller for big jobs. */
    t->icap = n <= 8 ? 64 * 1024 : n <= 32 ? 16 * 1024 : 4 * 1024;
    t->listen_ev.type = TCP_EV_LISTEN;
    t->lfd = -1;
    for (size_t i = 0; i < n; i++) {
        t->peers[i].ev.type = TCP_EV_PEER;
        t->peers[i].fd = -1;
        t->peers[i].rank = (int)i;
    }
    int err = 0;
    if ((t->ep = epoll_create1(EPOLL_CLOEXEC)) < 0)
        err = diag_set(d, CL_EIO, "rank %d: epoll_create1: %s", rank, strerror(errno));
    if (!err)
        err = tcp__connect(t, j, d);
    if (err) {
        t->closing = true;
        tcp_rank_close(&t->x.base);
        return err;
    }
    *out = &t->x.base;
    return 0;
}

/* Tells p we are done and sends what is still queued, waiting up to a
 * second for room; then reads what p sent, so closing sends FIN, not RST
 * (a reset could cost p the BYE it has not read yet). */
static void say_bye(tcp_rank *t, tcp_peer *p)
{
    send_ctrl(t, p, TCP_BYE, 0, 0, 0);
    double until = job_now() + 1.0;
    while (p->head && p->fd >= 0 && job_now() < until) {
        struct pollfd pf = {.fd = p->fd, .events = POLLOUT};
        poll(&pf, 1, 100);
        flush(t, p);
    }
    unsigned char sink[4096];
    while (p->fd >= 0 && recv(p->fd, sink, sizeof sink, MSG_DONTWAIT) > 0)
        ;
}

static void tcp_rank_close(real_rank *base)
{
    tcp_rank *t = (tcp_rank *)base;
    bool clean = !t->x.failed &&
                 atomic_load_explicit(&t->x.base.slot->state, memory_order_acquire) == JOB_DONE;
    t->closing = true;
    for (int i = 0; i < t->n; i++) {
        tcp_peer *p = &t->peers[i];
        if (clean && p->fd >= 0)
            say_bye(t, p);
        close_peer(t, p);
        for (tcp_req *r = p->head, *next; r; r = next) {
            next = (tcp_req *)r->x.next;
            if (r->x.kind == XFER_CTRL) /* user requests belong to the pattern */
                free(r);
        }
        if (p->body_msg && p->body_msg->x.link.queue == MATCH_NONE) {
            free(p->body_msg->x.data);
            free(p->body_msg);
        }
        free(p->ibuf);
    }
    tcp__disconnect(t);
    if (t->ep >= 0)
        close(t->ep);
    xfer_release(&t->x);
    auth_wipe(t->secret, sizeof t->secret);
    free(t->peers);
    free(t->addrs);
    free(t->addr_len);
    free(t);
}

const real_transport tcp_transport = {
    .name = "tcp",
    .shared_bytes = tcp__shared_bytes,
    .shared_init = tcp__shared_init,
    .rank_open = tcp_rank_open,
    .rank_close = tcp_rank_close,
};
