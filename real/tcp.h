/*
 * tcp.h - what the files of the tcp transport share; internal to real/
 * (hence the tcp__ names).
 *
 *   tcp_conn.c  connections: the address every rank listens on, published
 *               in the job's address slots (the launcher relays them between
 *               hosts, real/boot.h), the job's secret, one
 *               connection per pair of ranks made by the lower rank, and the
 *               handshake that proves the secret on each of them and turns
 *               strangers away.
 *   tcp.c       messages: frames, eager and rendezvous, sending (the
 *               output queues), comm_ops, a rank's open and close
 *               (matching, completion and records are real/xfer.c's,
 *               shared with shm and rdma).
 *   tcp_recv.c  receiving: reading a peer's frames and bodies, the
 *               rendezvous receive, the progress engine.
 *
 * Every rank has one epoll set.  What an event points to starts with a
 * tcp_ev saying what it is: the listening socket, a connection still in its
 * handshake (tcp_conn.c's), or an authenticated peer (tcp_peer).
 *
 * The wire is real/wire.h's frame format (a 48-byte big-endian header:
 * source rank, tag, ctx, length and two words a and b whose meaning is the
 * kind's, below), and a connection is proven by real/handshake.h's
 * challenge-response.  Nothing read from a socket is used as a size, an
 * index or a pointer before it is checked against what the reader expects.
 */
#ifndef REAL_TCP_H
#define REAL_TCP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "core/match.h"
#include "real/auth.h"
#include "real/handshake.h"
#include "real/launch.h"
#include "real/wire.h"
#include "real/xfer.h"

enum {
    TCP_EAGER = 1,   /* len: data bytes that follow; a: checksum */
    TCP_RTS,         /* len: message bytes; a: checksum; b: send id */
    TCP_CTS,         /* len: message bytes; a: send id; b: receive id */
    TCP_NACK,        /* a: send id (the message did not fit: it is dropped) */
    TCP_DATA,        /* len: data bytes that follow; a: receive id */
    TCP_BYE,         /* the sender is done and will close */
};                   /* 16..18: the handshake's (real/wire.h) */

/* ---- the launcher's shared area ---- */

typedef struct tcp_area {
    uint32_t nranks;
    uint32_t listen_len;                  /* bytes of listen in use */
    struct sockaddr_storage listen;       /* the address to listen on, port 0 */
    struct sockaddr_storage reach;        /* a wildcard listen is reached here:
                                             loopback, or across hosts the
                                             address that reaches rank 0 */
    unsigned char secret[AUTH_KEY_BYTES]; /* the job's secret (getrandom, or the
                                             rendezvous's: real/boot.h) */
    _Atomic uint32_t refusals;            /* connections refused, all ranks */
} tcp_area;

/* ---- a rank ---- */

enum { TCP_EV_LISTEN, TCP_EV_HANDSHAKE, TCP_EV_PEER };

typedef struct tcp_ev { /* first in whatever an epoll event points to */
    int type;           /* TCP_EV_* */
} tcp_ev;

typedef struct tcp_req tcp_req;
typedef struct tcp_msg tcp_msg;
typedef struct tcp_hs tcp_hs;   /* tcp_conn.c's */

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

typedef struct tcp_peer {
    tcp_ev ev;               /* TCP_EV_PEER */
    int fd;                  /* -1: none (ourselves), not yet, or closed */
    int rank;
    bool bye;                /* it said it is done */
    bool out_armed;          /* EPOLLOUT is in the interest set */
    bool owes_ack;           /* bytes came in since we last wrote: the kernel
                                holds back their acknowledgement (tcp_settle) */
    tcp_req *head, *tail;    /* output queue, in order */
    tcp_req *sends;          /* rendezvous sends waiting for its CTS */
    tcp_req *recvs;          /* rendezvous receives waiting for its DATA */
    uint64_t nmsg_out, nmsg_in; /* messages each way (message ids) */
    unsigned char *ibuf;     /* input buffer (allocated on first read) */
    size_t ilen, ioff;       /* bytes in it, bytes consumed */
    uint64_t body_left;      /* bytes of the current frame's body to come */
    unsigned char *body_dst; /* where they go; NULL: discarded */
    tcp_req *body_req;       /* the receive they complete ... */
    tcp_msg *body_msg;       /* ... or the unexpected copy they fill */
} tcp_peer;

typedef struct tcp_rank {
    xfer_rank x;           /* first */
    tcp_area *area;        /* the launcher's shared area */
    tcp_peer *peers;       /* n; peers[me] has no socket, only message ids */
    struct sockaddr_storage *addrs; /* n: where each rank listens (bootstrap) */
    socklen_t *addr_len;   /* n */
    unsigned char secret[AUTH_KEY_BYTES]; /* the job's (bootstrap) */
    long loss_grace_ns;    /* a lost peer's grace (xfer_peer_lost) */
    tcp_hs *hs;            /* connections in their handshake */
    int nhs_in;            /* incoming ones among them */
    tcp_ev listen_ev;      /* TCP_EV_LISTEN */
    int lfd, ep;           /* listening socket, epoll set; -1: none */
    int n, me;
    int connected;         /* peers up */
    double setup_deadline; /* job_now() seconds: every peer is connected by then */
    uint64_t eager_limit;  /* bytes */
    uint64_t next_id;      /* rendezvous ids */
    size_t icap;           /* bytes of an input buffer */
    bool closing;          /* in rank_close: a lost peer is no news */
} tcp_rank;

/* ---- tcp_conn.c ---- */

size_t tcp__shared_bytes(const real_opts *o);
/* Fills the launcher's area: the listen address (checked: bound once, so a
 * bad one fails before any fork) and the secret.  CL_EINVAL or CL_EIO. */
int tcp__shared_init(void *area, const real_opts *o, cl_diag *d);
/* Listens, learns where every rank listens and the secret, and connects
 * with every peer, each connection proven.  0, or a CL_E* with d saying
 * why ("rank 2: ..."); what was opened is closed by tcp__disconnect. */
int tcp__connect(tcp_rank *t, const job *j, cl_diag *d);
/* The listening socket is readable: handshakes begin. */
void tcp__accept(tcp_rank *t);
/* An epoll event for a connection in its handshake. */
void tcp__hs_event(tcp_rank *t, tcp_ev *e, uint32_t events);
/* Closes the handshakes that are out of time. */
void tcp__hs_expire(tcp_rank *t);
/* Closes the listening socket and every unfinished handshake. */
void tcp__disconnect(tcp_rank *t);
/* "127.0.0.1:5555", "[::1]:5555". */
void tcp__addr_str(char *out, size_t cap, const struct sockaddr_storage *sa);

/* ---- tcp.c ---- */

/* Closes p's socket, if open.  Cannot fail. */
void tcp__close_peer(tcp_rank *t, tcp_peer *p);
/* The connection to p broke before it said it was done: closes it and
 * fails the rank naming p (unless closing or failed already). */
void tcp__lost(tcp_rank *t, tcp_peer *p, const char *why);
/* Sends the acknowledgement the kernel holds back for what came in on
 * the connected TCP socket fd, if any; later segments are still
 * acknowledged late (tcp.c says the one exception).  Cannot fail (a
 * socket that is not TCP is left alone). */
void tcp__push_ack(int fd);
/* Writes what p's output queue holds, as far as the socket takes it.
 * Returns how often bytes moved. */
int tcp__flush(tcp_rank *t, tcp_peer *p);
/* A control frame toward p, behind whatever is queued.  Out of memory
 * fails the rank (xfer_fatal). */
void tcp__send_ctrl(tcp_rank *t, tcp_peer *p, uint8_t kind, uint64_t len, uint64_t a,
                    uint64_t b);

/* Appends r to p's output queue, and writes it at once when nothing
 * waits before it. */
static inline void tcp__enqueue(tcp_rank *t, tcp_peer *p, tcp_req *r)
{
    r->x.next = NULL;
    r->sent = 0;
    if (p->tail)
        p->tail->x.next = &r->x;
    else
        p->head = r;
    p->tail = r;
    if (p->head == r && !p->out_armed)
        tcp__flush(t, p);
}

/* ---- tcp_recv.c ---- */

/* xfer's pull hook: receive xr matched the RTS xm from src.  A remote
 * sender is asked for the data (CTS) or told it does not fit (NACK); a
 * send to ourselves is one memcpy. */
void tcp__pull(xfer_rank *x, xfer_req *xr, xfer_msg *xm, int src);
/* One look at every socket, waiting up to timeout_ms.  Returns how often
 * bytes moved (0: nothing did), or a negative CL_E* once the rank failed. */
int tcp__progress(tcp_rank *t, int timeout_ms);

#endif
