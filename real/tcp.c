/*
 * tcp.c - the TCP transport's messages: frames, sending, comm_ops and a
 * rank's transport (tcp_recv.c receives, tcp_conn.c makes the
 * connections; real/tcp.h has what they share and the wire's header
 * layout).
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
 * Writing batches queued frames into one sendmsg, each frame's payload in
 * pieces of at most SEND_CHUNK (512 KiB) a call.  The best piece depends
 * on the machine: on one VM one sendmsg of a whole 1 MiB body made
 * loopback's round trip bimodal, and pieces under 256 KiB cost a call
 * each that showed; on another, 256 KiB pieces made 4 MiB messages slow
 * and 1 MiB pieces 1 MiB ones.  512 KiB, between them, did neither where
 * it was measured (README, beside `bench tcp`'s figures, has them).
 * Reading is tcp_recv.c's.
 *
 * Waiting: poll the epoll set without blocking for a bounded spin (200 us,
 * 5 us when ranks outnumber cores), then publish the wait to the watchdog
 * (as shm does) and block in epoll_wait for up to 50 ms at a time; data
 * that arrives in between wakes it at once (level-triggered).  A polling
 * cl_test counts as waiting from its second failure on.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/units.h"
#include "real/tcp.h"

#define IOV_BATCH 16             /* iovecs per sendmsg */
#define SEND_CHUNK ((size_t)512 << 10) /* a frame's payload bytes per sendmsg, at most */

/* ---- connections ---- */

void tcp__close_peer(tcp_rank *t, tcp_peer *p)
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
void tcp__lost(tcp_rank *t, tcp_peer *p, const char *why)
{
    bool mid = p->body_left || p->ilen > p->ioff || p->recvs || p->sends || p->head;
    tcp__close_peer(t, p);
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
int tcp__flush(tcp_rank *t, tcp_peer *p)
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
            tcp__lost(t, p, strerror(errno));
            return done;
        }
        done++;
        p->owes_ack = false; /* what we wrote carries the acknowledgement */
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

/* A control frame toward p, behind whatever is queued. */
void tcp__send_ctrl(tcp_rank *t, tcp_peer *p, uint8_t kind, uint64_t len, uint64_t a,
                      uint64_t b)
{
    tcp_req *r = (tcp_req *)xfer_req_new(&t->x);
    if (!r) {
        xfer_fatal(&t->x, CL_ENOMEM, "out of memory queueing a control frame for rank %d", p->rank);
        return;
    }
    r->x.kind = XFER_CTRL;
    wire_hdr_make(r->hdr, kind, t->me, 0, 0, len, a, b);
    tcp__enqueue(t, p, r);
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
            tcp__pull(&t->x, &r->x, &m->x, t->me);
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
    tcp__enqueue(t, p, r);
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

/* Linux holds back the acknowledgement of what came in, for a while, to
 * ride on the next bytes the other way, and sends it at once when a second
 * segment comes in unacknowledged.  TCP_QUICKACK with an even value sends
 * a held acknowledgement now and goes on delaying later ones (the
 * kernel's __tcp_sock_set_quickack).  Where none is held any more (the
 * kernel's timer sent it) the call also ends the socket's interactive
 * mode, which the next bytes it sends soon after a receive bring back. */
void tcp__push_ack(int fd)
{
    int push = 2;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &push, sizeof push);
}

/* comm_ops.settle: the acknowledgements the barrier's messages are owed,
 * sent now.  After a barrier (an exchange) the next message to arrive is
 * a second unacknowledged segment: its receiver's kernel sends the held
 * acknowledgement right then, on the connection the pattern is using,
 * and the round trip it is in pays for it (chapter 06, "What a barrier
 * leaves behind", has the figures). */
static void tcp_settle(cl_comm *c)
{
    tcp_rank *t = c->world->backend;
    for (int i = 0; i < t->n; i++) {
        tcp_peer *p = &t->peers[i];
        if (p->owes_ack && p->fd >= 0)
            tcp__push_ack(p->fd);
        p->owes_ack = false;
    }
}

static const comm_ops tcp_ops = XFER_OPS(tcp_isend, tcp_settle);

static int tcp_poll(real_rank *r)
{
    return tcp__progress((tcp_rank *)r, 0);
}

/* ---- a rank ---- */

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
    xfer_init(&t->x, &tcp_ops, j, rank, o->job.check, sizeof(tcp_req), sizeof(tcp_msg), tcp__pull);
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
    tcp__send_ctrl(t, p, TCP_BYE, 0, 0, 0);
    double until = job_now() + 1.0;
    while (p->head && p->fd >= 0 && job_now() < until) {
        struct pollfd pf = {.fd = p->fd, .events = POLLOUT};
        poll(&pf, 1, 100);
        tcp__flush(t, p);
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
        tcp__close_peer(t, p);
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
    .over_netlab = true,
    .shared_bytes = tcp__shared_bytes,
    .shared_init = tcp__shared_init,
    .rank_open = tcp_rank_open,
    .rank_close = tcp_rank_close,
};
