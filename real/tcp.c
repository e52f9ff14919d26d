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
 * one sendmsg.
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

enum { KIND_SEND, KIND_RECV, KIND_CTRL };
enum { PH_EAGER, PH_RTS, PH_WAIT_CTS, PH_DATA }; /* a send's phases */

struct tcp_req {
    struct cl_request base;  /* first: core/comm reads it */
    match_link link;         /* a posted receive in the rank's queues */
    tcp_req *next;           /* in a peer's output queue */
    tcp_req *lnext;          /* in a peer's rendezvous list */
    void *buf;               /* receive: destination */
    const void *sbuf;        /* send: source */
    uint64_t bytes;          /* send: size; receive: capacity */
    uint64_t total;          /* receive: the matched message's size */
    uint64_t sum;            /* the message's checksum (--check) */
    uint64_t msg_id;
    uint64_t id;             /* rendezvous: our send or receive id */
    unsigned char hdr[TCP_HDR];  /* the frame to write ... */
    const unsigned char *payload; /* ... and what follows it */
    uint64_t plen;
    uint64_t sent;           /* bytes of hdr + payload written */
    double posted, started;
    int32_t peer;            /* world rank; CL_ANY_SOURCE in a receive */
    int32_t tag;
    uint32_t ctx;
    uint8_t kind, phase;
    bool eager;
};

struct tcp_msg {
    match_link link;     /* in the unexpected queue */
    tcp_msg *next_free;
    tcp_req *waiting;    /* a receive matched before the eager data was all here */
    tcp_req *self_send;  /* a rendezvous send to ourselves */
    void *data;          /* eager: the copy */
    uint64_t total, got; /* bytes; got == total once the copy is whole */
    uint64_t sum, msg_id;
    uint64_t send_id;    /* rendezvous: the sender's id */
    double arrived;
    bool eager;
};

static const comm_ops tcp_ops;

/* ---- wire encoding ---- */

static void put64(unsigned char *p, uint64_t v)
{
    tcp__put32(p, (uint32_t)(v >> 32));
    tcp__put32(p + 4, (uint32_t)v);
}

static uint64_t get64(const unsigned char *p)
{
    return (uint64_t)tcp__get32(p) << 32 | tcp__get32(p + 4);
}

void tcp__frame_make(unsigned char *out, uint8_t kind, int src, int tag, uint32_t ctx,
                     uint64_t len, uint64_t a, uint64_t b)
{
    tcp__put32(out, TCP_MAGIC);
    out[4] = TCP_VERSION;
    out[5] = kind;
    out[6] = out[7] = 0;
    tcp__put32(out + 8, (uint32_t)src);
    tcp__put32(out + 12, (uint32_t)tag);
    tcp__put32(out + 16, ctx);
    tcp__put32(out + 20, 0);
    put64(out + 24, len);
    put64(out + 32, a);
    put64(out + 40, b);
}

void tcp__frame_decode(const unsigned char *in, tcp_frame *f)
{
    f->magic = tcp__get32(in);
    f->version = in[4];
    f->kind = in[5];
    f->flags = (uint16_t)(in[6] << 8 | in[7]);
    f->src = tcp__get32(in + 8);
    f->tag = (int32_t)tcp__get32(in + 12);
    f->ctx = tcp__get32(in + 16);
    f->zero = tcp__get32(in + 20);
    f->len = get64(in + 24);
    f->a = get64(in + 32);
    f->b = get64(in + 40);
}

void tcp__fatal(tcp_rank *t, int err, const char *fmt, ...)
{
    if (t->failed)
        return;
    t->failed = err;
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    rank_detail(&t->base, "%s", msg);
}

/* ---- requests and messages ---- */

static tcp_req *req_new(tcp_rank *t)
{
    tcp_req *r = t->free_reqs;
    if (r)
        t->free_reqs = r->next;
    else if (!(r = malloc(sizeof *r)))
        return NULL;
    memset(r, 0, sizeof *r);
    return r;
}

static void req_free(tcp_rank *t, tcp_req *r)
{
    r->next = t->free_reqs;
    t->free_reqs = r;
}

static tcp_msg *msg_new(tcp_rank *t)
{
    tcp_msg *m = t->free_msgs;
    if (m)
        t->free_msgs = m->next_free;
    else if (!(m = malloc(sizeof *m)))
        return NULL;
    memset(m, 0, sizeof *m);
    return m;
}

static void msg_free(tcp_rank *t, tcp_msg *m)
{
    free(m->data);
    m->data = NULL;
    m->next_free = t->free_msgs;
    t->free_msgs = m;
}

static tcp_req *req_of(match_link *l)
{
    return (tcp_req *)((char *)l - offsetof(tcp_req, link));
}

static tcp_msg *msg_of(match_link *l)
{
    return (tcp_msg *)((char *)l - offsetof(tcp_msg, link));
}

/* A request is complete: its status is final, the record is written. */
static void complete(tcp_rank *t, tcp_req *r, int err)
{
    r->base.err = err;
    r->base.done = true;
    rank_progressed(&t->base);
    if (r->kind == KIND_CTRL) {
        req_free(t, r);
        return;
    }
    if (!t->base.tracing || !rank_user_ctx(r->ctx))
        return; /* the barrier's own messages show as its span */
    double now = rank_now(&t->base);
    double started = r->started > 0 ? r->started : now;
    if (r->kind == KIND_SEND)
        rank_record(&t->base, REC_SEND, r->peer, r->tag, r->bytes, r->msg_id, r->posted,
                    started, now, r->base.blocking);
    else
        rank_record(&t->base, REC_RECV, r->base.status.source, r->base.status.tag,
                    r->base.status.bytes, r->msg_id, r->posted, started, now,
                    r->base.blocking);
}

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
 * names it.  In a local run the peer is most likely a process that just
 * died, which the launcher reports better ("rank 1 was killed by signal
 * 9"): the launcher reports the first failure it reaps, so this rank waits
 * a moment (it is killed in the meantime) before failing itself.  A
 * multi-host bootstrap without a launcher sets no grace. */
static void lost(tcp_rank *t, tcp_peer *p, const char *why)
{
    bool mid = p->body_left || p->ilen > p->ioff || p->recvs || p->sends || p->head;
    close_peer(t, p);
    if (t->closing || t->failed)
        return;
    tcp__fatal(t, CL_EPEER, "connection to rank %d lost%s: %s", p->rank,
               mid ? " in the middle of a message" : "", why);
    if (t->loss_grace_ns > 0) {
        struct timespec ts = {0, t->loss_grace_ns};
        nanosleep(&ts, NULL);
    }
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
    if (r->kind == KIND_SEND && r->phase == PH_RTS) {
        r->phase = PH_WAIT_CTS;
        record_rdv_send(p, r);
        return;
    }
    complete(t, r, 0);
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
        for (tcp_req *r = p->head; r && k + 2 <= IOV_BATCH; r = r->next) {
            if (r->sent < TCP_HDR) {
                iov[k++] = (struct iovec){r->hdr + r->sent, TCP_HDR - (size_t)r->sent};
                asked += TCP_HDR - (size_t)r->sent;
            }
            uint64_t poff = r->sent > TCP_HDR ? r->sent - TCP_HDR : 0;
            if (r->plen > poff) {
                iov[k++] = (struct iovec){(void *)(r->payload + poff), (size_t)(r->plen - poff)};
                asked += (size_t)(r->plen - poff);
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
        rank_progressed(&t->base);
        double now = t->base.tracing ? rank_now(&t->base) : 0;
        for (uint64_t left = (uint64_t)w; left > 0 && p->head;) {
            tcp_req *r = p->head;
            if (r->sent == 0 && r->kind == KIND_SEND && r->phase == PH_EAGER && !r->started)
                r->started = now;
            uint64_t need = TCP_HDR + r->plen - r->sent, take = need < left ? need : left;
            r->sent += take;
            left -= take;
            if (take < need)
                break;
            p->head = r->next;
            if (!p->head)
                p->tail = NULL;
            r->next = NULL;
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
    r->next = NULL;
    r->sent = 0;
    if (p->tail)
        p->tail->next = r;
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
    tcp_req *r = req_new(t);
    if (!r) {
        tcp__fatal(t, CL_ENOMEM, "out of memory queueing a control frame for rank %d", p->rank);
        return;
    }
    r->kind = KIND_CTRL;
    tcp__frame_make(r->hdr, kind, t->me, 0, 0, len, a, b);
    enqueue(t, p, r);
}

/* ---- receiving ---- */

static bool truncated(tcp_rank *t, tcp_req *r, int src, uint64_t total)
{
    if (total <= r->bytes)
        return false;
    char a[UNITS_BUF], b[UNITS_BUF];
    rank_detail(&t->base, "a %s message from rank %d (tag %d) does not fit the %s receive "
                "buffer of rank %d", units_size_str(a, total), src, r->base.status.tag,
                units_size_str(b, r->bytes), t->me);
    return true;
}

/* The receive r takes a message's envelope. */
static void take_envelope(tcp_req *r, int src, int tag, uint64_t total, uint64_t id)
{
    r->base.status.source = src;
    r->base.status.tag = tag;
    r->base.status.bytes = total;
    r->total = total;
    r->msg_id = id;
}

static void finish_recv(tcp_rank *t, tcp_req *r, uint64_t sum)
{
    int err = 0;
    if (t->check && r->buf && rank_checksum(r->buf, r->total) != sum) {
        char a[UNITS_BUF];
        rank_detail(&t->base, "the %s message from rank %d (tag %d) arrived corrupted "
                    "(checksum mismatch)", units_size_str(a, r->total),
                    r->base.status.source, r->base.status.tag);
        err = CL_ECHECK;
    }
    complete(t, r, err);
}

/* An unexpected eager message is whole, and r wants it. */
static void deliver_copy(tcp_rank *t, tcp_req *r, tcp_msg *m)
{
    if (truncated(t, r, r->base.status.source, m->total)) {
        complete(t, r, CL_ETRUNC);
    } else {
        if (m->total && r->buf && m->data)
            memcpy(r->buf, m->data, (size_t)m->total);
        if (!r->started) /* data that came before the receive starts when posted */
            r->started = m->arrived > r->posted ? m->arrived : r->posted;
        finish_recv(t, r, m->sum);
    }
    msg_free(t, m);
}

/* Rendezvous: receive r matched the RTS m from src.  A remote sender is
 * asked for the data (CTS) or told it does not fit (NACK); a send to
 * ourselves is one memcpy. */
static void pull(tcp_rank *t, tcp_req *r, tcp_msg *m, int src)
{
    r->started = t->base.tracing ? rank_now(&t->base) : 0;
    tcp_req *self = m->self_send;
    if (truncated(t, r, src, m->total)) {
        if (self)
            complete(t, self, 0);
        else
            send_ctrl(t, &t->peers[src], TCP_NACK, 0, m->send_id, 0);
        complete(t, r, CL_ETRUNC);
        msg_free(t, m);
        return;
    }
    r->sum = m->sum;
    if (self) {
        if (m->total && r->buf && self->sbuf)
            memcpy(r->buf, self->sbuf, (size_t)m->total);
        self->started = r->started;
        msg_free(t, m);
        complete(t, self, 0);
        finish_recv(t, r, r->sum);
        return;
    }
    tcp_peer *p = &t->peers[src];
    r->id = ++t->next_id;
    r->lnext = p->recvs;
    p->recvs = r;
    send_ctrl(t, p, TCP_CTS, m->total, m->send_id, r->id);
    msg_free(t, m);
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
        finish_recv(t, r, r->sum);
    } else if (m) {
        m->got = m->total;
        if (m->waiting)
            deliver_copy(t, m->waiting, m);
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
static void arrive(tcp_rank *t, tcp_peer *p, const tcp_frame *f, bool eager)
{
    int src = p->rank;
    tcp_msg *m = msg_new(t);
    if (!m) {
        tcp__fatal(t, CL_ENOMEM, "out of memory for a message from rank %d", src);
        return;
    }
    m->eager = eager;
    m->total = f->len;
    m->sum = f->a;
    m->send_id = f->b;
    m->msg_id = rank_msg_id(src, t->me, ++p->nmsg_in);
    match_link_init(&m->link, src, f->tag, f->ctx);
    match_link *l = match_arrive(&t->mq, &m->link);
    if (l) {
        tcp_req *r = req_of(l);
        take_envelope(r, src, f->tag, m->total, m->msg_id);
        if (!eager) {
            pull(t, r, m, src);
            return;
        }
        if (t->base.tracing)
            r->started = rank_now(&t->base);
        msg_free(t, m);
        if (truncated(t, r, src, f->len)) {
            complete(t, r, CL_ETRUNC);
            body_start(t, p, NULL, f->len, NULL, NULL);
        } else {
            r->sum = f->a;
            body_start(t, p, r->buf, f->len, r, NULL);
        }
    } else if (eager) {
        if (t->base.tracing)
            m->arrived = rank_now(&t->base);
        if (m->total && !(m->data = malloc((size_t)m->total))) {
            match_remove(&t->mq, &m->link);
            msg_free(t, m);
            tcp__fatal(t, CL_ENOMEM, "out of memory keeping a %llu-byte message from rank %d",
                       (unsigned long long)f->len, src);
            return;
        }
        body_start(t, p, m->data, f->len, NULL, m);
    }
}

static void bad_frame(tcp_rank *t, tcp_peer *p, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void bad_frame(tcp_rank *t, tcp_peer *p, const char *fmt, ...)
{
    char why[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    tcp__fatal(t, CL_EPROTO, "rank %d sent a bad frame: %s", p->rank, why);
    close_peer(t, p);
}

/* One whole header from p: checked, then acted on. */
static void frame_handle(tcp_rank *t, tcp_peer *p, const tcp_frame *f)
{
    if (f->magic != TCP_MAGIC || f->version != TCP_VERSION || f->flags || f->zero) {
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
        if (!r || f->len != r->bytes) {
            bad_frame(t, p, "a clear-to-send for %llu bytes of no send of ours",
                      (unsigned long long)f->len);
            return;
        }
        if (t->base.tracing)
            r->started = rank_now(&t->base);
        r->phase = PH_DATA;
        tcp__frame_make(r->hdr, TCP_DATA, t->me, 0, 0, r->bytes, f->b, 0);
        r->payload = r->sbuf;
        r->plen = r->bytes;
        enqueue(t, p, r);
        break;
    case TCP_NACK:
        r = list_take(&p->sends, f->a);
        if (!r) {
            bad_frame(t, p, "a refusal of no send of ours");
            return;
        }
        complete(t, r, 0);
        break;
    case TCP_DATA:
        r = list_take(&p->recvs, f->a);
        if (!r || f->len != r->total) {
            bad_frame(t, p, "%llu bytes of data for no receive of ours",
                      (unsigned long long)f->len);
            return;
        }
        body_start(t, p, r->buf, f->len, r, NULL);
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
        tcp__fatal(t, CL_ENOMEM, "out of memory for an input buffer");
        return 0;
    }
    while (p->fd >= 0 && !t->failed) {
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
                rank_progressed(&t->base);
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
                rank_progressed(&t->base);
                continue;
            }
            if (p->body_dst)
                p->body_dst += take;
            p->body_left -= take;
            if (!p->body_left)
                body_done(t, p);
            continue;
        }
        if (p->ilen - p->ioff >= TCP_HDR) {
            tcp_frame f;
            tcp__frame_decode(p->ibuf + p->ioff, &f);
            p->ioff += TCP_HDR;
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
        size_t want = p->recvs ? TCP_HDR - have : t->icap - have;
        ssize_t got = recv(p->fd, p->ibuf + have, want, MSG_DONTWAIT);
        if (got <= 0) {
            if (read_failed(t, p, got))
                continue;
            break;
        }
        p->ilen += (size_t)got;
        drained = (size_t)got < want;
        handled++;
        rank_progressed(&t->base);
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
        tcp__fatal(t, CL_EIO, "epoll_wait: %s", strerror(errno));
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
    return t->failed ? t->failed : handled;
}

static int tcp_poll(real_rank *r)
{
    return tcp__progress((tcp_rank *)r, 0);
}

/* ---- comm_ops ---- */

/* A send to ourselves: matched here and now, never through a socket. */
static void self_send(tcp_rank *t, tcp_req *s)
{
    tcp_msg *m = msg_new(t);
    if (!m) {
        tcp__fatal(t, CL_ENOMEM, "out of memory for a message to ourselves");
        return;
    }
    double now = t->base.tracing ? rank_now(&t->base) : 0;
    m->eager = s->eager;
    m->total = s->bytes;
    m->sum = s->sum;
    m->msg_id = s->msg_id;
    if (s->eager) {
        m->got = m->total;
        m->arrived = now;
        s->started = now;
    } else {
        m->self_send = s;
    }
    match_link_init(&m->link, t->me, s->tag, s->ctx);
    match_link *l = match_arrive(&t->mq, &m->link);
    if (l) {
        tcp_req *r = req_of(l);
        take_envelope(r, t->me, s->tag, m->total, m->msg_id);
        if (!s->eager) {
            pull(t, r, m, t->me);
            return;
        }
        r->started = now;
        if (truncated(t, r, t->me, m->total)) {
            complete(t, r, CL_ETRUNC);
        } else {
            if (m->total && r->buf && s->sbuf)
                memcpy(r->buf, s->sbuf, (size_t)m->total);
            finish_recv(t, r, s->sum);
        }
        msg_free(t, m);
    } else if (s->eager && m->total) {
        if (!(m->data = malloc((size_t)m->total))) {
            match_remove(&t->mq, &m->link);
            msg_free(t, m);
            tcp__fatal(t, CL_ENOMEM, "out of memory keeping a message to ourselves");
            return;
        }
        memcpy(m->data, s->sbuf, (size_t)m->total);
    }
    if (s->eager)
        complete(t, s, 0);
}

static int tcp_isend(cl_comm *c, const void *buf, size_t bytes, int dst, int tag, uint32_t ctx,
                     cl_request **out)
{
    tcp_rank *t = c->world->backend;
    if (t->failed)
        return t->failed;
    rank_active(&t->base);
    tcp_peer *p = &t->peers[dst];
    if (dst != t->me && p->fd < 0) {
        if (p->bye)
            rank_detail(&t->base, "rank %d has already finished", dst);
        else
            rank_detail(&t->base, "no connection to rank %d", dst);
        return CL_EPEER;
    }
    tcp_req *r = req_new(t);
    if (!r)
        return CL_ENOMEM;
    r->kind = KIND_SEND;
    r->base.is_send = true;
    r->base.blocking = t->base.comm.blocking_call;
    r->sbuf = buf;
    r->bytes = bytes;
    r->peer = dst;
    r->tag = tag;
    r->ctx = ctx;
    r->eager = bytes <= t->eager_limit;
    r->msg_id = rank_msg_id(t->me, dst, ++p->nmsg_out);
    if (t->check && buf)
        r->sum = rank_checksum(buf, bytes);
    if (t->base.tracing)
        r->posted = rank_now(&t->base);
    if (rank_user_ctx(ctx)) {
        t->base.messages++;
        t->base.bytes += bytes;
    }
    *out = &r->base;
    if (dst == t->me) {
        self_send(t, r);
        return 0;
    }
    if (r->eager) {
        r->phase = PH_EAGER;
        tcp__frame_make(r->hdr, TCP_EAGER, t->me, tag, ctx, bytes, r->sum, 0);
        r->payload = buf;
        r->plen = bytes;
    } else {
        r->phase = PH_RTS;
        r->id = ++t->next_id;
        tcp__frame_make(r->hdr, TCP_RTS, t->me, tag, ctx, bytes, r->sum, r->id);
    }
    enqueue(t, p, r);
    return 0;
}

static int tcp_irecv(cl_comm *c, void *buf, size_t bytes, int src, int tag, uint32_t ctx,
                     cl_request **out)
{
    tcp_rank *t = c->world->backend;
    if (t->failed)
        return t->failed;
    rank_active(&t->base);
    tcp_req *r = req_new(t);
    if (!r)
        return CL_ENOMEM;
    r->kind = KIND_RECV;
    r->base.blocking = t->base.comm.blocking_call;
    r->buf = buf;
    r->bytes = bytes;
    r->peer = src;
    r->tag = tag;
    r->ctx = ctx;
    if (t->base.tracing)
        r->posted = rank_now(&t->base);
    *out = &r->base;
    match_link_init(&r->link, src, tag, ctx);
    match_link *l = match_post_recv(&t->mq, &r->link);
    if (l) {
        tcp_msg *m = msg_of(l);
        int from = l->src;
        take_envelope(r, from, l->tag, m->total, m->msg_id);
        if (!m->eager)
            pull(t, r, m, from);
        else if (m->got >= m->total)
            deliver_copy(t, r, m);
        else
            m->waiting = r;
    }
    return 0;
}

/* rank_wait's block hook: publish the wait, then block in epoll.  Data
 * that came in between wakes epoll at once (level-triggered), so no
 * wake-up is lost. */
static void tcp_block(real_rank *base, cl_request **reqs, int n, wf_op call)
{
    rank_publish_stale(base, reqs, n, call);
    tcp__progress((tcp_rank *)base, TCP_BLOCK_MS);
}

static void tcp_describe(const cl_request *req, wf_pending *out)
{
    const tcp_req *r = (const tcp_req *)req;
    *out = (wf_pending){.op = r->kind == KIND_SEND ? WF_SEND : WF_RECV, .peer = r->peer,
                        .tag = r->tag, .bytes = r->bytes};
}

static int tcp_wait(cl_comm *c, int n, cl_request **reqs, wf_op call)
{
    return rank_wait(c->world->backend, reqs, n, call);
}

static int tcp_test(cl_comm *c, cl_request *req, bool *done)
{
    return rank_test(c->world->backend, req, done);
}

static void tcp_release(cl_comm *c, cl_request *req)
{
    tcp_rank *t = c->world->backend;
    req_free(t, (tcp_req *)req);
}

static const comm_ops tcp_ops = {
    .isend = tcp_isend,
    .irecv = tcp_irecv,
    .wait = tcp_wait,
    .test = tcp_test,
    .release = tcp_release,
    .compute = rank_op_compute,
    .now = rank_op_now,
    .alloc = rank_op_alloc,
    .print = rank_op_print,
    .fail = rank_op_fail,
    .span = rank_op_span,
};

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
    rank_init(&t->base, &tcp_ops, j, rank, o->check);
    t->base.poll = tcp_poll;
    t->base.block = tcp_block;
    t->base.describe = tcp_describe;
    t->area = j->transport;
    t->n = (int)n;
    t->me = rank;
    t->eager_limit = o->eager_limit;
    t->check = o->check;
    /* Input buffers: one per peer that sends, smaller for big jobs. */
    t->icap = n <= 8 ? 64 * 1024 : n <= 32 ? 16 * 1024 : 4 * 1024;
    t->listen_ev.type = TCP_EV_LISTEN;
    t->lfd = -1;
    for (size_t i = 0; i < n; i++) {
        t->peers[i].ev.type = TCP_EV_PEER;
        t->peers[i].fd = -1;
        t->peers[i].rank = (int)i;
    }
    match_queues_init(&t->mq);
    int err = 0;
    if ((t->ep = epoll_create1(EPOLL_CLOEXEC)) < 0)
        err = diag_set(d, CL_EIO, "rank %d: epoll_create1: %s", rank, strerror(errno));
    if (!err)
        err = tcp__connect(t, d);
    if (err) {
        t->closing = true;
        tcp_rank_close(&t->base);
        return err;
    }
    *out = &t->base;
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
    bool clean = !t->failed &&
                 atomic_load_explicit(&t->base.slot->state, memory_order_acquire) == JOB_DONE;
    t->closing = true;
    for (int i = 0; i < t->n; i++) {
        tcp_peer *p = &t->peers[i];
        if (clean && p->fd >= 0)
            say_bye(t, p);
        close_peer(t, p);
        for (tcp_req *r = p->head, *next; r; r = next) {
            next = r->next;
            if (r->kind == KIND_CTRL) /* user requests belong to the pattern */
                free(r);
        }
        if (p->body_msg && p->body_msg->link.queue == MATCH_NONE) {
            free(p->body_msg->data);
            free(p->body_msg);
        }
        free(p->ibuf);
    }
    tcp__disconnect(t);
    if (t->ep >= 0)
        close(t->ep);
    while (t->mq.unexpected.head) {
        match_link *l = t->mq.unexpected.head;
        match_remove(&t->mq, l);
        tcp_msg *m = msg_of(l);
        free(m->data);
        free(m);
    }
    while (t->free_reqs) {
        tcp_req *r = t->free_reqs;
        t->free_reqs = r->next;
        free(r);
    }
    while (t->free_msgs) {
        tcp_msg *m = t->free_msgs;
        t->free_msgs = m->next_free;
        free(m);
    }
    auth_wipe(t->secret, sizeof t->secret);
    rank_release(&t->base);
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
