/*
 * tcp_conn.c - the tcp transport's connections: where ranks listen, the
 * bootstrap, and the handshake that proves every connection.
 *
 * Every rank listens on one TCP socket (127.0.0.1 and a port the kernel
 * picks, or the --listen address; across hosts, the address that reaches
 * rank 0's rendezvous) and learns every other rank's listening address
 * from the job's address slots, where each rank publishes its own (the
 * launcher relays them between hosts: real/relay.c), and the job's secret
 * from the launcher's shared area.  Each
 * pair of ranks then shares one connection, made by the lower rank;
 * TCP_NODELAY, non-blocking, in the rank's epoll set.  All connections are
 * made at once, event-driven, so no rank waits on another's handshake.  The
 * listening socket stays open for the whole run: a stranger who connects
 * meets the handshake, is refused, and the run goes on.
 *
 * Handshake: real/handshake.h's challenge-response over the job's secret,
 * the accepting rank the acceptor, each frame real/wire.h's (RESPONSE's b:
 * the rank asked for).  The acceptor computes nothing keyed before the
 * connector has proven itself.
 *
 * Refusals.  An incoming connection with a bad magic, version, kind or
 * length, an impossible rank (out of range, not lower than ours, already
 * connected), a wrong MAC, or no complete answer within 2 s is closed.  The
 * first refusal of the run is logged on stderr ("commlab: rank 1: refused a
 * connection from 127.0.0.1:5555: bad magic"); later ones only count, so
 * strangers cannot flood the output.  Each incoming connection has 2 s of
 * its own, during setup too; when more come at once than a rank keeps
 * (its lower ranks and MAX_STRANGERS), the oldest is closed, never the
 * newcomer, and an outgoing handshake closed by its acceptor during setup
 * is made again (hs_again), so strangers holding connections open cannot
 * keep a peer out.  Handshake reads are exact, never past
 * the frame awaited (what follows belongs to the connection), and the
 * header is checked before the rest is read, so an announced length is
 * never used as one.  An outgoing handshake that fails is a failed setup:
 * that peer is needed.
 */
#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "real/tcp.h"
#include "real/netlab.h"

#define HANDSHAKE_SECONDS 2.0    /* a stranger gets this long to prove the secret */
#define SETUP_SECONDS 60.0       /* every connection of the job is up by then */
#define MAX_STRANGERS 64         /* incoming handshakes at once beyond the lower ranks */

static const char PURPOSE[] = "commlab-tcp"; /* bound into the handshake's MACs */

enum { HS_CONNECTING, HS_CHALLENGE, HS_RESPONSE, HS_ACCEPT }; /* what it waits for */

struct tcp_hs { /* a connection that has not proven the secret yet */
    tcp_ev ev;             /* TCP_EV_HANDSHAKE */
    tcp_hs *next;
    int fd;
    int peer;              /* the rank (outgoing: the one we called) or -1 */
    bool outgoing;
    int step;              /* HS_* */
    unsigned char buf[WIRE_HDR + WIRE_NONCE + AUTH_MAC_BYTES];
    size_t got, want;      /* bytes read of the frame awaited, its size */
    handshake auth;        /* nonces and ranks of the challenge-response */
    double deadline;       /* job_now() seconds */
    char from[80];         /* the other end, printable */
};

void tcp__addr_str(char *out, size_t cap, const struct sockaddr_storage *sa)
{
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (sa->ss_family == AF_INET) {
        const struct sockaddr_in *v4 = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &v4->sin_addr, host, sizeof host);
        port = ntohs(v4->sin_port);
        snprintf(out, cap, "%s:%d", host, port);
    } else if (sa->ss_family == AF_INET6) {
        const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &v6->sin6_addr, host, sizeof host);
        port = ntohs(v6->sin6_port);
        snprintf(out, cap, "[%s]:%d", host, port);
    } else {
        snprintf(out, cap, "an address of family %d", sa->ss_family);
    }
}

static void set_nodelay(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* ---- handshakes ---- */

static void hs_drop(tcp_rank *t, tcp_hs *hs, bool close_fd)
{
    for (tcp_hs **at = &t->hs; *at; at = &(*at)->next)
        if (*at == hs) {
            *at = hs->next;
            break;
        }
    if (!hs->outgoing)
        t->nhs_in--;
    if (close_fd && hs->fd >= 0) {
        epoll_ctl(t->ep, EPOLL_CTL_DEL, hs->fd, NULL);
        close(hs->fd);
    }
    auth_wipe(hs, sizeof *hs);
    free(hs);
}

/* A handshake failed.  An incoming connection is refused, and the run goes
 * on: only the first refusal of the run is logged, so a flood of strangers
 * cannot flood stderr.  An outgoing one is a rank we need: setup fails. */
static void hs_fail(tcp_rank *t, tcp_hs *hs, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void hs_fail(tcp_rank *t, tcp_hs *hs, const char *fmt, ...)
{
    cl_diag why;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why.msg, sizeof why.msg, fmt, ap);
    va_end(ap);
    if (hs->outgoing && !t->x.failed) {
        /* Most likely that rank died: the launcher names it first. */
        xfer_peer_lost(&t->x, t->loss_grace_ns, "the handshake with rank %d at %s failed: %s",
                       hs->peer, hs->from, why.msg);
    } else if (!hs->outgoing && atomic_fetch_add(&t->area->refusals, 1) == 0) {
        char line[400];
        int n = snprintf(line, sizeof line, "commlab: rank %d: refused a connection from %s: "
                         "%s\n", t->me, hs->from, why.msg);
        if (n > (int)sizeof line - 1)
            n = (int)sizeof line - 1;
        if (write(STDERR_FILENO, line, (size_t)n) < 0) {
            /* nowhere left to say it */
        }
    }
    hs_drop(t, hs, true);
}

static tcp_hs *hs_new(tcp_rank *t, int fd, bool outgoing, int peer,
                      const struct sockaddr_storage *sa)
{
    tcp_hs *hs = calloc(1, sizeof *hs);
    if (!hs)
        return NULL;
    hs->ev.type = TCP_EV_HANDSHAKE;
    hs->fd = fd;
    hs->outgoing = outgoing;
    hs->peer = peer;
    /* Every newcomer gets 2 s of its own, during setup too: a peer shut
     * out (held up by a busy machine, or pushed out by strangers, see
     * hs_incoming) connects again (hs_again). */
    hs->deadline = outgoing ? t->setup_deadline : job_now() + HANDSHAKE_SECONDS;
    handshake_init(&hs->auth, t->secret, PURPOSE, t->me, peer);
    tcp__addr_str(hs->from, sizeof hs->from, sa);
    hs->next = t->hs;
    t->hs = hs;
    if (!outgoing)
        t->nhs_in++;
    return hs;
}

static void hs_connect(tcp_rank *t, int peer);

/* The acceptor closed our connection before accepting it: it shut us out
 * as it shuts out strangers (ours was its oldest handshake when more came
 * than it keeps, or it ran past its 2 s).  During setup the connection is
 * made again, until the setup's deadline; then the handshake has failed. */
static void hs_again(tcp_rank *t, tcp_hs *hs, const char *why)
{
    if (job_now() > t->setup_deadline) {
        hs_fail(t, hs, "%s", why);
        return;
    }
    int peer = hs->peer;
    hs_drop(t, hs, true);
    struct timespec pause = {0, 1000000}; /* a flood is not fought at full speed */
    nanosleep(&pause, NULL);
    hs_connect(t, peer);
}

static bool hs_send(tcp_rank *t, tcp_hs *hs, const void *buf, size_t len)
{
    /* A fresh socket's buffer holds these few bytes: a short write means
     * the connection is already broken. */
    ssize_t w = send(hs->fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w == (ssize_t)len)
        return true;
    if (hs->outgoing && w < 0 && (errno == EPIPE || errno == ECONNRESET))
        hs_again(t, hs, strerror(errno));
    else
        hs_fail(t, hs, "cannot send the handshake: %s", w < 0 ? strerror(errno) : "short write");
    return false;
}

/* The connection has proven itself: it is rank's from now on. */
static void hs_promote(tcp_rank *t, tcp_hs *hs, int rank)
{
    tcp_peer *p = &t->peers[rank];
    p->fd = hs->fd;
    p->out_armed = false;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &p->ev};
    epoll_ctl(t->ep, EPOLL_CTL_MOD, p->fd, &ev);
    t->connected++;
    hs_drop(t, hs, false);
    rank_progressed(&t->x.base);
}

/* A new connection on the listening socket: challenge it. */
static void hs_incoming(tcp_rank *t, int fd, const struct sockaddr_storage *sa)
{
    /* Every lower rank may be in its handshake at once, and a few more.
     * Beyond that the oldest incoming handshake is shut out, never the
     * newcomer: idle strangers cannot keep a peer out, and a peer shut out
     * connects again (hs_again). */
    if (t->nhs_in >= t->me + MAX_STRANGERS) {
        tcp_hs *oldest = NULL;
        for (tcp_hs *h = t->hs; h; h = h->next)
            if (!h->outgoing)
                oldest = h; /* the list is newest first */
        hs_fail(t, oldest, "no handshake before %d newer connections came", t->nhs_in);
    }
    tcp_hs *hs = hs_new(t, fd, false, -1, sa);
    if (!hs) {
        close(fd);
        return;
    }
    set_nodelay(fd);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &hs->ev};
    if (epoll_ctl(t->ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
        hs_fail(t, hs, "epoll: %s", strerror(errno));
        return;
    }
    wire_challenge ch;
    if (handshake_challenge(&hs->auth, &ch)) {
        hs_fail(t, hs, "no random nonce: %s", strerror(errno));
        return;
    }
    unsigned char out[WIRE_HDR + WIRE_NONCE];
    wire_w w;
    wire_w_init(&w, out + WIRE_HDR, sizeof out - WIRE_HDR);
    wire_challenge_put(&w, &ch);
    wire_hdr_make(out, WIRE_CHALLENGE, t->me, 0, 0, w.len, 0, 0);
    if (!hs_send(t, hs, out, WIRE_HDR + w.len))
        return;
    hs->step = HS_RESPONSE;
    hs->want = WIRE_HDR + WIRE_NONCE + AUTH_MAC_BYTES;
}

void tcp__accept(tcp_rank *t)
{
    for (;;) {
        struct sockaddr_storage sa;
        socklen_t len = sizeof sa;
        memset(&sa, 0, sizeof sa);
        int fd = accept4(t->lfd, (struct sockaddr *)&sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            return; /* EAGAIN, or out of descriptors: look again later */
        }
        hs_incoming(t, fd, &sa);
    }
}

/* The header of the frame hs waits for is here: is it the one expected? */
static bool hs_check_header(tcp_rank *t, tcp_hs *hs)
{
    wire_hdr f;
    wire_hdr_decode(hs->buf, &f);
    uint8_t kind = hs->step == HS_RESPONSE ? WIRE_RESPONSE
                   : hs->step == HS_CHALLENGE ? WIRE_CHALLENGE : WIRE_ACCEPT;
    uint64_t len = hs->want - WIRE_HDR;
    if (f.version != WIRE_VERSION) {
        hs_fail(t, hs, "protocol version %u, not %d", f.version, WIRE_VERSION);
        return false;
    }
    if (f.kind != kind || f.flags || f.zero) {
        hs_fail(t, hs, "a frame of kind %u where the handshake expects %u", f.kind, kind);
        return false;
    }
    if (f.len != len) {
        hs_fail(t, hs, "it announced %llu bytes, %s %llu", (unsigned long long)f.len,
                f.len > len ? "above the limit of" : "not", (unsigned long long)len);
        return false;
    }
    if (hs->outgoing) {
        if (f.src != (uint32_t)hs->peer) {
            hs_fail(t, hs, "it answered as rank %u", f.src);
            return false;
        }
        return true;
    }
    if (f.src >= (uint32_t)t->n) {
        hs_fail(t, hs, "it announced rank %u of a %d-rank job", f.src, t->n);
        return false;
    }
    if (f.src >= (uint32_t)t->me) {
        hs_fail(t, hs, "it announced rank %u, which does not connect to rank %d", f.src, t->me);
        return false;
    }
    if (f.b != (uint64_t)t->me) {
        hs_fail(t, hs, "it asked for rank %llu", (unsigned long long)f.b);
        return false;
    }
    hs->peer = (int)f.src;
    hs->auth.peer = f.src;
    return true;
}

/* The frame hs waited for is whole: act on it. */
static void hs_frame(tcp_rank *t, tcp_hs *hs)
{
    wire_r in;
    wire_r_init(&in, hs->buf + WIRE_HDR, hs->want - WIRE_HDR);
    if (hs->step == HS_RESPONSE) { /* we accepted: the connector proves itself */
        wire_response resp;
        wire_accept acc;
        if (wire_response_get(&in, &resp) || handshake_check(&hs->auth, &resp, &acc)) {
            hs_fail(t, hs, "bad handshake");
            return;
        }
        if (t->peers[hs->peer].fd >= 0) { /* knows the secret, yet a second time */
            hs_fail(t, hs, "it announced rank %d, which is already connected", hs->peer);
            return;
        }
        unsigned char out[WIRE_HDR + AUTH_MAC_BYTES];
        wire_w w;
        wire_w_init(&w, out + WIRE_HDR, sizeof out - WIRE_HDR);
        wire_accept_put(&w, &acc);
        wire_hdr_make(out, WIRE_ACCEPT, t->me, 0, 0, w.len, 0, 0);
        if (hs_send(t, hs, out, WIRE_HDR + w.len))
            hs_promote(t, hs, hs->peer);
        return;
    }
    if (hs->step == HS_CHALLENGE) { /* we connected: prove ourselves */
        wire_challenge ch;
        wire_response resp;
        if (wire_challenge_get(&in, &ch)) {
            hs_fail(t, hs, "a bad challenge");
            return;
        }
        if (handshake_respond(&hs->auth, &ch, &resp)) {
            hs_fail(t, hs, "no random nonce: %s", strerror(errno));
            return;
        }
        unsigned char out[WIRE_HDR + WIRE_NONCE + AUTH_MAC_BYTES];
        wire_w w;
        wire_w_init(&w, out + WIRE_HDR, sizeof out - WIRE_HDR);
        wire_response_put(&w, &resp);
        wire_hdr_make(out, WIRE_RESPONSE, t->me, 0, 0, w.len, 0, (uint64_t)hs->peer);
        if (!hs_send(t, hs, out, WIRE_HDR + w.len))
            return;
        hs->step = HS_ACCEPT;
        hs->got = 0;
        hs->want = WIRE_HDR + AUTH_MAC_BYTES;
        return;
    }
    /* HS_ACCEPT: the acceptor proves itself */
    wire_accept acc;
    if (wire_accept_get(&in, &acc) || handshake_finish(&hs->auth, &acc)) {
        hs_fail(t, hs, "it does not know the job's secret");
        return;
    }
    hs_promote(t, hs, hs->peer);
}

void tcp__hs_event(tcp_rank *t, tcp_ev *e, uint32_t events)
{
    tcp_hs *hs = (tcp_hs *)e;
    if (hs->step == HS_CONNECTING) {
        if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
            return;
        int err = 0;
        socklen_t len = sizeof err;
        if (getsockopt(hs->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
            err = errno;
        if (err) {
            hs_fail(t, hs, "cannot connect: %s", strerror(err));
            return;
        }
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &hs->ev};
        epoll_ctl(t->ep, EPOLL_CTL_MOD, hs->fd, &ev);
        hs->step = HS_CHALLENGE;
        hs->got = 0;
        hs->want = WIRE_HDR + WIRE_NONCE;
        return;
    }
    /* Exact reads: what follows the handshake belongs to the connection. */
    while (hs->got < hs->want) {
        ssize_t got = recv(hs->fd, hs->buf + hs->got, hs->want - hs->got, MSG_DONTWAIT);
        if (got == 0 || (got < 0 && errno == ECONNRESET)) {
            if (hs->outgoing)
                hs_again(t, hs, "it closed the connection during the handshake");
            else
                hs_fail(t, hs, "it closed the connection during the handshake");
            return;
        }
        if (got < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                hs_fail(t, hs, "%s", strerror(errno));
            return;
        }
        size_t before = hs->got;
        hs->got += (size_t)got;
        if (before < 4 && hs->got >= 4 && wire_get32(hs->buf) != WIRE_MAGIC) {
            hs_fail(t, hs, "bad magic");
            return;
        }
        if (before < WIRE_HDR && hs->got >= WIRE_HDR && !hs_check_header(t, hs))
            return;
    }
    hs_frame(t, hs);
}

void tcp__hs_expire(tcp_rank *t)
{
    double now = job_now();
    tcp_hs *hs = t->hs;
    while (hs) {
        tcp_hs *next = hs->next;
        if (now > hs->deadline) {
            if (hs->outgoing)
                hs_fail(t, hs, "no answer within %.0f s", SETUP_SECONDS);
            else
                hs_fail(t, hs, "no handshake within %.0f s", HANDSHAKE_SECONDS);
        }
        hs = next;
    }
}

/* Starts the connection to a higher rank. */
static void hs_connect(tcp_rank *t, int peer)
{
    const struct sockaddr_storage *sa = &t->addrs[peer];
    int fd = socket(sa->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    char where[80];
    tcp__addr_str(where, sizeof where, sa);
    if (fd < 0) {
        xfer_fatal(&t->x, CL_EIO, "cannot make a socket for rank %d: %s", peer, strerror(errno));
        return;
    }
    tcp_hs *hs = hs_new(t, fd, true, peer, sa);
    if (!hs) {
        close(fd);
        xfer_fatal(&t->x, CL_ENOMEM, "out of memory connecting to rank %d", peer);
        return;
    }
    set_nodelay(fd);
    hs->step = HS_CONNECTING;
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = &hs->ev};
    if (epoll_ctl(t->ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
        hs_fail(t, hs, "epoll: %s", strerror(errno));
        return;
    }
    if (connect(fd, (const struct sockaddr *)sa, t->addr_len[peer]) < 0 &&
        errno != EINPROGRESS)
        hs_fail(t, hs, "cannot connect: %s", strerror(errno));
}

/* ---- the shared area and the address to listen on ---- */

size_t tcp__shared_bytes(const real_opts *o)
{
    (void)o;
    return sizeof(tcp_area);
}

/* o->tcp.listen (NULL: 127.0.0.1), numeric, port 0; tried once here so that a
 * bad address fails before any rank is forked. */
static int parse_listen(const char *text, struct sockaddr_storage *sa, uint32_t *len,
                        cl_diag *d)
{
    struct addrinfo hints = {.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE,
                             .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *ai = NULL;
    const char *host = text ? text : "127.0.0.1";
    int rc = getaddrinfo(host, "0", &hints, &ai);
    if (rc || !ai || ai->ai_addrlen > sizeof *sa) {
        if (ai)
            freeaddrinfo(ai);
        return diag_set(d, CL_EINVAL, "cannot listen on '%s': not a numeric IPv4 or IPv6 "
                        "address", host);
    }
    memset(sa, 0, sizeof *sa);
    memcpy(sa, ai->ai_addr, ai->ai_addrlen);
    *len = (uint32_t)ai->ai_addrlen;
    freeaddrinfo(ai);
    int fd = socket(sa->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)sa, *len) < 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return diag_set(d, CL_EINVAL, "cannot listen on '%s': %s", host, strerror(e));
    }
    close(fd);
    return 0;
}

int tcp__shared_init(void *mem, const real_opts *o, cl_diag *d)
{
    tcp_area *a = mem;
    a->nranks = (uint32_t)o->job.nranks;
    const char *listen = o->tcp.listen;
    if (!listen && o->boot)
        listen = boot_listen_addr(o->boot); /* where the others reach this host */
    int err = parse_listen(listen, &a->listen, &a->listen_len, d);
    if (err)
        return err;
    /* --listen 0.0.0.0 (or ::) binds every interface; the others are told
     * the one address known to reach this host: that of the rendezvous
     * across hosts, loopback within one. */
    uint32_t reach_len;
    const char *reach = o->boot ? boot_listen_addr(o->boot)
                        : a->listen.ss_family == AF_INET6 ? "::1" : "127.0.0.1";
    if ((err = parse_listen(reach, &a->reach, &reach_len, d)))
        return err;
    if (o->boot)
        memcpy(a->secret, boot_secret(o->boot), sizeof a->secret);
    else if (auth_random(a->secret, sizeof a->secret))
        return diag_set(d, CL_EIO, "cannot draw the job's secret from getrandom: %s",
                        strerror(errno));
    return 0;
}

/* ---- a rank's setup ---- */

/* Listens where the job says; *mine is the address others connect to (a
 * wildcard address is reached through the area's reach address, when it is
 * of the same family; else through loopback).  Under --netlab every rank
 * listens on its own namespace's address instead (real/netlab.h). */
static int open_listener(tcp_rank *t, const job *j, struct sockaddr_storage *mine,
                         socklen_t *len, cl_diag *d)
{
    const tcp_area *a = t->area;
    struct sockaddr_storage at = a->listen;
    socklen_t at_len = a->listen_len;
    if (j->netlab) {
        struct sockaddr_in *v4 = (struct sockaddr_in *)&at;
        memset(&at, 0, sizeof at);
        v4->sin_family = AF_INET;
        int ok = inet_pton(AF_INET, netlab_addr(j->netlab, t->me), &v4->sin_addr);
        assert(ok == 1 && "netlab addresses are numeric IPv4");
        (void)ok;
        at_len = sizeof *v4;
    }
    int fd = socket(at.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return diag_set(d, CL_EIO, "rank %d: cannot make a socket: %s", t->me, strerror(errno));
    t->lfd = fd;
    if (bind(fd, (const struct sockaddr *)&at, at_len) < 0 ||
        listen(fd, t->n + MAX_STRANGERS) < 0)
        return diag_set(d, CL_EIO, "rank %d: cannot listen: %s", t->me, strerror(errno));
    *len = sizeof *mine;
    if (getsockname(fd, (struct sockaddr *)mine, len) < 0)
        return diag_set(d, CL_EIO, "rank %d: getsockname: %s", t->me, strerror(errno));
    bool same = a->reach.ss_family == mine->ss_family;
    if (mine->ss_family == AF_INET) {
        struct sockaddr_in *v4 = (struct sockaddr_in *)mine;
        if (v4->sin_addr.s_addr == htonl(INADDR_ANY))
            v4->sin_addr.s_addr = same ? ((const struct sockaddr_in *)&a->reach)->sin_addr.s_addr
                                       : htonl(INADDR_LOOPBACK);
    } else if (mine->ss_family == AF_INET6) {
        struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)mine;
        if (IN6_IS_ADDR_UNSPECIFIED(&v6->sin6_addr))
            v6->sin6_addr = same ? ((const struct sockaddr_in6 *)&a->reach)->sin6_addr
                                 : in6addr_loopback;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &t->listen_ev};
    if (epoll_ctl(t->ep, EPOLL_CTL_ADD, fd, &ev) < 0)
        return diag_set(d, CL_EIO, "rank %d: epoll: %s", t->me, strerror(errno));
    return 0;
}

/* What a rank needs before it can connect: it publishes where it listens
 * in the job's address slot, waits until every rank has (the launcher
 * relays the slots of other hosts), and fills t->secret, t->addrs and
 * t->addr_len, and the grace of lost(). */
static int learn_addresses(tcp_rank *t, const job *j, const struct sockaddr_storage *mine,
                           socklen_t len, cl_diag *d)
{
    job_addr_publish(j, t->me, mine, len);
    memcpy(t->secret, t->area->secret, sizeof t->secret);
    t->loss_grace_ns = XFER_LOSS_GRACE_NS;
    for (int i = 0; i < t->n; i++) {
        size_t n = 0;
        int err = job_addr_wait(j, i, &t->addrs[i], sizeof t->addrs[i], &n, t->setup_deadline);
        if (err == CL_ETIMEOUT)
            return diag_set(d, CL_ETIMEOUT, "rank %d: rank %d published no address within "
                            "%.0f s", t->me, i, SETUP_SECONDS);
        sa_family_t fam = t->addrs[i].ss_family;
        if (err || (fam != AF_INET && fam != AF_INET6) ||
            n != (fam == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6)))
            return diag_set(d, CL_EPROTO, "rank %d: rank %d published a bad address", t->me, i);
        t->addr_len[i] = (socklen_t)n;
    }
    return 0;
}

/* Connects to every higher rank and waits for every lower one. */
static int connect_all(tcp_rank *t, cl_diag *d)
{
    for (int j = t->me + 1; j < t->n && !t->x.failed; j++)
        hs_connect(t, j);
    while (t->connected < t->n - 1 && !t->x.failed) {
        if (job_now() > t->setup_deadline) {
            int missing = 0;
            while (missing < t->n && (missing == t->me || t->peers[missing].fd >= 0))
                missing++;
            xfer_fatal(&t->x, CL_ETIMEOUT, "no connection with rank %d within %.0f s", missing,
                       SETUP_SECONDS);
            break;
        }
        tcp__progress(t, RANK_IDLE_MS);
    }
    if (t->x.failed)
        return diag_set(d, t->x.failed, "rank %d: %s", t->me, t->x.base.detail.msg);
    return 0;
}

int tcp__connect(tcp_rank *t, const job *j, cl_diag *d)
{
    struct sockaddr_storage mine;
    socklen_t len = 0;
    t->setup_deadline = job_now() + SETUP_SECONDS;
    int err = open_listener(t, j, &mine, &len, d);
    if (!err)
        err = learn_addresses(t, j, &mine, len, d);
    if (!err)
        err = connect_all(t, d);
    return err;
}

void tcp__disconnect(tcp_rank *t)
{
    while (t->hs)
        hs_drop(t, t->hs, true);
    if (t->lfd >= 0)
        close(t->lfd);
    t->lfd = -1;
}
