/* boot.c - the rendezvous of ranks started elsewhere; see boot.h. */
#include "real/boot.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAGIC 0x434c4254u          /* "CLBT" */
#define HDR 16                     /* bytes of a frame header */
#define NONCE 32
#define HOST_MAX 64                /* bytes of a hostname in HELLO */
#define MSG_MAX DIAG_MAX           /* bytes of a failure's words */
#define HANDSHAKE_SECONDS 2.0      /* a stranger gets this long, no more */
#define RETRY_NS 100000000L        /* an agent retries its connect every 100 ms */
#define REC_WIRE 64                /* bytes of a record on the wire */

enum {
    K_CHALLENGE = 1, /* master -> joiner: its nonce */
    K_RESPONSE,      /* joiner: its nonce, then a MAC (TCP) or zeros (Unix) */
    K_ACCEPT,        /* master: its MAC (TCP), or the job's secret (Unix) */
    K_HELLO,         /* joiner: rank, size, pid, digest, hostname */
    K_GO,            /* master: everyone is here */
    K_REJECT,        /* master: refused, and why (text) */
    K_ADDR = 10,     /* rank, address bytes */
    K_TABLE,         /* for each rank: length, address bytes */
    K_STATE,         /* rank, state, progress, the wait */
    K_FAIL,          /* rank, status, why */
    K_ABORT,         /* status, why */
    K_DONE,          /* rank, counters, iteration times, records */
    K_FINISH,        /* status */
};

typedef struct conn {
    int fd;                 /* -1: none or lost */
    int rank;
    bool done;              /* master: its rank sent DONE or FAIL */
    bool addr_sent;         /* agent: ADDR went out this run */
    unsigned char *in;      /* input buffer */
    size_t in_len, in_cap;
    unsigned char *out;     /* bytes waiting to be written */
    size_t out_len, out_cap;
    char host[HOST_MAX];
    unsigned pid;
} conn;

struct boot {
    real_world w;
    unsigned char digest[AUTH_HASH_BYTES];
    unsigned char secret[AUTH_KEY_BYTES];
    char listen_addr[INET6_ADDRSTRLEN];
    conn *conns;            /* master: size (conns[0] unused); agent: 1, the master */
    int nconns;
    struct pollfd *pfd;     /* nconns, for boot_pump */
    int *pidx;              /* nconns: the connection of each pfd */
    /* the current run */
    job *j;
    uint32_t run;
    bool table_sent;        /* master */
    bool finished;          /* agent: FINISH or ABORT came, or the master is gone */
    int remote_left;        /* master: other ranks neither done nor failed */
    int status;             /* the run's status as far as known */
    int fail_status;        /* a failure to hand to the launcher, once */
    cl_diag fail;           /* its words */
    bool fail_from_master, fail_new;
    uint32_t sent_seq, sent_state;
    uint64_t sent_progress;
    bool state_sent;
};

/* ---- the wire ---- */

static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (24 - 8 * i));
}

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put64(unsigned char *p, uint64_t v)
{
    put32(p, (uint32_t)(v >> 32));
    put32(p + 4, (uint32_t)v);
}

static uint64_t get64(const unsigned char *p)
{
    return (uint64_t)get32(p) << 32 | get32(p + 4);
}

static void putd(unsigned char *p, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    put64(p, u);
}

static double getd(const unsigned char *p)
{
    uint64_t u = get64(p);
    double v;
    memcpy(&v, &u, sizeof v);
    return v;
}

/* The most a body of this kind may hold in a run on b's job. */
static size_t body_max(const boot *b, int kind)
{
    size_t n = (size_t)b->w.size;
    switch (kind) {
    case K_CHALLENGE: return NONCE;
    case K_RESPONSE: return NONCE + AUTH_MAC_BYTES;
    case K_ACCEPT: return AUTH_MAC_BYTES;
    case K_HELLO: return 12 + AUTH_HASH_BYTES + HOST_MAX;
    case K_GO: return 0;
    case K_REJECT: return MSG_MAX;
    case K_ADDR: return 8 + JOB_ADDR_MAX;
    case K_TABLE: return n * (4 + JOB_ADDR_MAX);
    case K_STATE: return 32 + JOB_MAX_PENDING * 20;
    case K_FAIL: return 8 + MSG_MAX;
    case K_ABORT: return 4 + MSG_MAX;
    case K_DONE:
        if (!b->j)
            return 0;
        return 32 + (size_t)b->j->iters * 8 + b->j->rec_cap * REC_WIRE;
    case K_FINISH: return 4;
    default: return SIZE_MAX; /* unknown: refused by the caller */
    }
}

static int grow(unsigned char **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 4096;
    while (c < need)
        c *= 2;
    unsigned char *p = realloc(*buf, c);
    if (!p)
        return CL_ENOMEM;
    *buf = p;
    *cap = c;
    return 0;
}

static void conn_drop(conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    free(c->in);
    free(c->out);
    c->in = c->out = NULL;
    c->in_len = c->in_cap = c->out_len = c->out_cap = 0;
}

/* Queues a frame; the bytes go out in flush(). */
static void queue(boot *b, conn *c, int kind, const void *body, size_t len)
{
    if (c->fd < 0)
        return;
    if (grow(&c->out, &c->out_cap, c->out_len + HDR + len)) {
        conn_drop(c); /* cannot keep up: the other side will see it gone */
        return;
    }
    unsigned char *p = c->out + c->out_len;
    put32(p, MAGIC);
    p[4] = (unsigned char)(kind >> 8);
    p[5] = (unsigned char)kind;
    p[6] = p[7] = 0;
    put32(p + 8, (uint32_t)len);
    put32(p + 12, b->run);
    if (len)
        memcpy(p + HDR, body, len);
    c->out_len += HDR + len;
}

/* Writes what it can without blocking.  false: the connection is lost. */
static bool flush(conn *c)
{
    size_t off = 0;
    while (c->fd >= 0 && off < c->out_len) {
        ssize_t k = send(c->fd, c->out + off, c->out_len - off, MSG_NOSIGNAL);
        if (k > 0) {
            off += (size_t)k;
            continue;
        }
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        return false;
    }
    memmove(c->out, c->out + off, c->out_len - off);
    c->out_len -= off;
    return true;
}

/* ---- blocking helpers for the join, bounded by a deadline ---- */

static double now(void)
{
    return job_now();
}

static int wait_fd(int fd, short events, double deadline)
{
    for (;;) {
        double left = deadline - now();
        if (left <= 0)
            return CL_ETIMEOUT;
        struct pollfd p = {.fd = fd, .events = events};
        int r = poll(&p, 1, (int)ceil(left * 1000));
        if (r > 0)
            return 0;
        if (r < 0 && errno != EINTR)
            return CL_EIO;
    }
}

static int send_all(int fd, const void *buf, size_t len, double deadline)
{
    const unsigned char *p = buf;
    while (len) {
        ssize_t k = send(fd, p, len, MSG_NOSIGNAL);
        if (k > 0) {
            p += k;
            len -= (size_t)k;
        } else if (k < 0 && (errno == EAGAIN || errno == EINTR)) {
            int err = wait_fd(fd, POLLOUT, deadline);
            if (err)
                return err;
        } else {
            return CL_EIO;
        }
    }
    return 0;
}

static int recv_all(int fd, void *buf, size_t len, double deadline)
{
    unsigned char *p = buf;
    while (len) {
        ssize_t k = recv(fd, p, len, 0);
        if (k > 0) {
            p += k;
            len -= (size_t)k;
        } else if (k == 0) {
            return CL_EPEER;
        } else if (errno == EAGAIN || errno == EINTR) {
            int err = wait_fd(fd, POLLIN, deadline);
            if (err)
                return err;
        } else {
            return CL_EIO;
        }
    }
    return 0;
}

static int send_frame(const boot *b, int fd, int kind, const void *body, size_t len,
                      double deadline)
{
    unsigned char h[HDR];
    put32(h, MAGIC);
    h[4] = (unsigned char)(kind >> 8);
    h[5] = (unsigned char)kind;
    h[6] = h[7] = 0;
    put32(h + 8, (uint32_t)len);
    put32(h + 12, b->run);
    int err = send_all(fd, h, HDR, deadline);
    return err ? err : send_all(fd, body, len, deadline);
}

/* Reads one frame of the kind expected (or K_REJECT) into body (cap
 * bytes); the header is checked before the body is read. */
static int recv_frame(const boot *b, int fd, int want, void *body, size_t cap, size_t *len,
                      int *kind, double deadline, const char **why)
{
    unsigned char h[HDR];
    int err = recv_all(fd, h, HDR, deadline);
    if (err) {
        *why = err == CL_ETIMEOUT ? "no answer in time" : "the connection closed";
        return err;
    }
    *kind = h[4] << 8 | h[5];
    uint32_t n = get32(h + 8);
    if (get32(h) != MAGIC || h[6] || h[7]) {
        *why = "bad magic";
        return CL_EPROTO;
    }
    if ((*kind != want && *kind != K_REJECT) || n > cap || n > body_max(b, *kind)) {
        *why = "an unexpected frame";
        return CL_EPROTO;
    }
    *len = n;
    err = recv_all(fd, body, n, deadline);
    if (err)
        *why = "the connection closed";
    return err;
}

/* ---- joining ---- */

static void mac(const boot *b, const char *label, const unsigned char *n1,
                const unsigned char *n2, unsigned char out[AUTH_MAC_BYTES])
{
    auth_hmac m;
    auth_hmac_init(&m, b->w.secret, sizeof b->w.secret);
    auth_hmac_add(&m, label, strlen(label));
    auth_hmac_add(&m, n1, NONCE);
    auth_hmac_add(&m, n2, NONCE);
    auth_hmac_finish(&m, out);
}

static int rdv_addr(const boot *b, struct sockaddr_storage *sa, socklen_t *len, int *family,
                    cl_diag *d)
{
    memset(sa, 0, sizeof *sa);
    if (b->w.rdv == WORLD_RDV_UNIX) {
        struct sockaddr_un *un = (struct sockaddr_un *)sa;
        un->sun_family = AF_UNIX;
        size_t n = strlen(b->w.unix_name);
        memcpy(un->sun_path + 1, b->w.unix_name, n); /* abstract: no file */
        *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
        *family = AF_UNIX;
        return 0;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    int rc = getaddrinfo(b->w.master_host, b->w.master_port, &hints, &ai);
    if (rc || !ai || ai->ai_addrlen > sizeof *sa) {
        if (ai)
            freeaddrinfo(ai);
        return diag_set(d, CL_EINVAL, "rank %d: cannot resolve the master '%s': %s", b->w.rank,
                        b->w.master_host, rc ? gai_strerror(rc) : "no address");
    }
    memcpy(sa, ai->ai_addr, ai->ai_addrlen);
    *len = ai->ai_addrlen;
    *family = ai->ai_family;
    freeaddrinfo(ai);
    return 0;
}

static const char *rdv_name(const boot *b, char *buf, size_t cap)
{
    if (b->w.rdv == WORLD_RDV_UNIX)
        snprintf(buf, cap, "the local socket @%s", b->w.unix_name);
    else
        snprintf(buf, cap, "%s:%s", b->w.master_host, b->w.master_port);
    return buf;
}

static void peer_name(int fd, char *buf, size_t cap)
{
    struct sockaddr_storage sa;
    socklen_t len = sizeof sa;
    snprintf(buf, cap, "a local process");
    if (getpeername(fd, (struct sockaddr *)&sa, &len) < 0)
        return;
    char host[INET6_ADDRSTRLEN] = "?";
    if (sa.ss_family == AF_INET) {
        struct sockaddr_in *v4 = (struct sockaddr_in *)&sa;
        inet_ntop(AF_INET, &v4->sin_addr, host, sizeof host);
        snprintf(buf, cap, "%s:%u", host, ntohs(v4->sin_port));
    } else if (sa.ss_family == AF_INET6) {
        struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&sa;
        inet_ntop(AF_INET6, &v6->sin6_addr, host, sizeof host);
        snprintf(buf, cap, "[%s]:%u", host, ntohs(v6->sin6_port));
    }
}

/* The master's side of one joiner: proves it, and takes its HELLO.
 * Returns its rank, or -1 with *why saying why it was refused (*fatal:
 * a real rank of another run, which stops the join). */
static int admit(boot *b, int fd, double deadline, const char **why, char *detail,
                 size_t dcap, bool *fatal)
{
    unsigned char na[NONCE], body[NONCE + AUTH_MAC_BYTES + AUTH_HASH_BYTES + HOST_MAX + 16];
    size_t len;
    int kind;
    *fatal = false;
    if (auth_random(na, sizeof na)) {
        *why = "no random bytes";
        return -1;
    }
    if (send_frame(b, fd, K_CHALLENGE, na, NONCE, deadline) ||
        recv_frame(b, fd, K_RESPONSE, body, sizeof body, &len, &kind, deadline, why))
        return *why ? -1 : (*why = "the connection closed", -1);
    if (kind != K_RESPONSE || len != NONCE + AUTH_MAC_BYTES) {
        *why = "a bad response";
        return -1;
    }
    unsigned char answer[AUTH_MAC_BYTES];
    if (b->w.rdv == WORLD_RDV_UNIX) {
        struct ucred cred;
        socklen_t cl = sizeof cred;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0 || cred.uid != getuid()) {
            *why = "another user's process";
            return -1;
        }
        memcpy(answer, b->secret, sizeof answer); /* the user is trusted: hand it over */
    } else {
        unsigned char want[AUTH_MAC_BYTES];
        mac(b, "commlab-boot join", na, body, want);
        if (!auth_equal(want, body + NONCE, AUTH_MAC_BYTES)) {
            static const char no[] = "its COMMLAB_SECRET is not rank 0's";
            send_frame(b, fd, K_REJECT, no, sizeof no - 1, deadline);
            *why = "a wrong secret";
            return -1;
        }
        mac(b, "commlab-boot admit", body, na, answer);
    }
    if (send_frame(b, fd, K_ACCEPT, answer, sizeof answer, deadline) ||
        recv_frame(b, fd, K_HELLO, body, sizeof body, &len, &kind, deadline, why)) {
        auth_wipe(answer, sizeof answer);
        return -1;
    }
    auth_wipe(answer, sizeof answer);
    if (kind != K_HELLO || len != body_max(b, K_HELLO)) {
        *why = "a bad hello";
        return -1;
    }
    uint32_t rank = get32(body), size = get32(body + 4);
    conn tmp = {.pid = get32(body + 8)};
    memcpy(tmp.host, body + 12 + AUTH_HASH_BYTES, HOST_MAX);
    tmp.host[HOST_MAX - 1] = '\0';
    *why = NULL;
    if (size != (uint32_t)b->w.size)
        snprintf(detail, dcap, "rank %u (host %s) was started in a world of %u ranks, rank 0 "
                 "in one of %d", rank, tmp.host, size, b->w.size);
    else if (rank == 0 || rank >= size)
        snprintf(detail, dcap, "a process on %s says it is rank %u: not a rank 1..%d can be",
                 tmp.host, rank, b->w.size - 1);
    else if (b->conns[rank].fd >= 0)
        snprintf(detail, dcap, "rank %u joined twice (hosts %s and %s): is another run using "
                 "the same rendezvous?", rank, b->conns[rank].host, tmp.host);
    else if (!auth_equal(body + 12, b->digest, AUTH_HASH_BYTES))
        snprintf(detail, dcap, "rank %u (host %s) was started with other options than rank 0: "
                 "every process must run the same command", rank, tmp.host);
    else {
        memcpy(b->conns[rank].host, tmp.host, HOST_MAX);
        b->conns[rank].pid = tmp.pid;
        return (int)rank;
    }
    send_frame(b, fd, K_REJECT, detail, strlen(detail), deadline);
    *fatal = true;
    return -1;
}

static int set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static int master_join(boot *b, cl_diag *d)
{
    struct sockaddr_storage sa;
    socklen_t salen;
    int family;
    char name[300];
    int err = rdv_addr(b, &sa, &salen, &family, d);
    if (err)
        return err;
    int lfd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int one = 1;
    if (lfd >= 0 && family != AF_UNIX)
        setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, salen) < 0 || listen(lfd, 64) < 0) {
        int e = errno;
        if (lfd >= 0)
            close(lfd);
        return diag_set(d, CL_EIO, "rank 0: cannot hold the rendezvous on %s: %s%s",
                        rdv_name(b, name, sizeof name), strerror(e),
                        e == EADDRINUSE ? " (another run is using it?)" : "");
    }
    if (family == AF_INET || family == AF_INET6)
        inet_ntop(family, family == AF_INET ? (void *)&((struct sockaddr_in *)&sa)->sin_addr
                                            : (void *)&((struct sockaddr_in6 *)&sa)->sin6_addr,
                  b->listen_addr, sizeof b->listen_addr);
    double deadline = now() + b->w.join_timeout;
    int joined = 0;
    bool logged = false;
    err = 0;
    while (joined < b->w.size - 1) {
        if (wait_fd(lfd, POLLIN, deadline)) {
            int missing = 1;
            while (missing < b->w.size && b->conns[missing].fd >= 0)
                missing++;
            err = diag_set(d, CL_ETIMEOUT, "rank 0: %d of %d ranks reached the rendezvous on "
                           "%s within %.0f s; rank %d did not", joined + 1, b->w.size,
                           rdv_name(b, name, sizeof name), b->w.join_timeout, missing);
            break;
        }
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0)
            continue;
        const char *why = NULL;
        char detail[MSG_MAX] = "";
        bool fatal;
        double hs_deadline = fmin(deadline, now() + HANDSHAKE_SECONDS);
        int rank = admit(b, fd, hs_deadline, &why, detail, sizeof detail, &fatal);
        if (rank > 0) {
            b->conns[rank].fd = fd;
            joined++;
            continue;
        }
        if (fatal) {
            close(fd);
            err = diag_set(d, CL_EINVAL, "rank 0: %s", detail);
            break;
        }
        if (!logged) {
            char who[80];
            peer_name(fd, who, sizeof who);
            fprintf(stderr, "commlab: rank 0: refused a connection to the rendezvous from %s: "
                    "%s\n", who, why ? why : "refused");
            logged = true;
        }
        close(fd);
    }
    close(lfd); /* nobody joins later: strangers find nothing */
    for (int r = 1; r < b->w.size && !err; r++)
        if (send_frame(b, b->conns[r].fd, K_GO, NULL, 0, now() + HANDSHAKE_SECONDS))
            err = diag_set(d, CL_EPEER, "rank 0: rank %d (host %s) went away while joining", r,
                           b->conns[r].host);
    return err;
}

static int agent_join(boot *b, cl_diag *d)
{
    struct sockaddr_storage sa;
    socklen_t salen;
    int family;
    char name[300];
    int err = rdv_addr(b, &sa, &salen, &family, d);
    if (err)
        return err;
    double deadline = now() + b->w.join_timeout;
    int fd = -1, last = 0;
    for (;;) {
        fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return diag_set(d, CL_EIO, "rank %d: socket: %s", b->w.rank, strerror(errno));
        if (connect(fd, (struct sockaddr *)&sa, salen) == 0)
            break;
        last = errno;
        close(fd);
        fd = -1;
        if (now() > deadline)
            return diag_set(d, CL_ETIMEOUT, "rank %d: cannot reach rank 0's rendezvous on %s "
                            "within %.0f s: %s", b->w.rank, rdv_name(b, name, sizeof name),
                            b->w.join_timeout, strerror(last));
        struct timespec ts = {0, RETRY_NS};
        nanosleep(&ts, NULL);
    }
    b->conns[0].fd = fd;
    set_nonblock(fd); /* every read below is bounded by the deadline */
    if (family != AF_UNIX) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        struct sockaddr_storage me;
        socklen_t ml = sizeof me;
        if (getsockname(fd, (struct sockaddr *)&me, &ml) == 0)
            inet_ntop(me.ss_family,
                      me.ss_family == AF_INET ? (void *)&((struct sockaddr_in *)&me)->sin_addr
                                              : (void *)&((struct sockaddr_in6 *)&me)->sin6_addr,
                      b->listen_addr, sizeof b->listen_addr);
    }
    unsigned char na[NONCE], resp[NONCE + AUTH_MAC_BYTES] = {0}, body[MSG_MAX + 1];
    size_t len;
    int kind;
    const char *why = NULL;
    if (recv_frame(b, fd, K_CHALLENGE, na, sizeof na, &len, &kind, deadline, &why) ||
        len != NONCE)
        goto refused;
    if (auth_random(resp, NONCE))
        return diag_set(d, CL_EIO, "rank %d: no random bytes", b->w.rank);
    if (b->w.rdv == WORLD_RDV_TCP)
        mac(b, "commlab-boot join", na, resp, resp + NONCE);
    if (send_frame(b, fd, K_RESPONSE, resp, sizeof resp, deadline) ||
        recv_frame(b, fd, K_ACCEPT, body, sizeof body, &len, &kind, deadline, &why))
        goto refused;
    if (kind == K_REJECT || len != AUTH_MAC_BYTES)
        goto rejected;
    if (b->w.rdv == WORLD_RDV_UNIX) {
        memcpy(b->secret, body, sizeof b->secret);
    } else {
        unsigned char want[AUTH_MAC_BYTES];
        mac(b, "commlab-boot admit", resp, na, want);
        if (!auth_equal(want, body, AUTH_MAC_BYTES))
            return diag_set(d, CL_EPROTO, "rank %d: the rendezvous on %s does not know "
                            "COMMLAB_SECRET: is it another run's?", b->w.rank,
                            rdv_name(b, name, sizeof name));
    }
    auth_wipe(body, AUTH_MAC_BYTES);
    unsigned char hello[12 + AUTH_HASH_BYTES + HOST_MAX] = {0};
    put32(hello, (uint32_t)b->w.rank);
    put32(hello + 4, (uint32_t)b->w.size);
    put32(hello + 8, (uint32_t)getpid());
    memcpy(hello + 12, b->digest, AUTH_HASH_BYTES);
    gethostname((char *)hello + 12 + AUTH_HASH_BYTES, HOST_MAX - 1);
    if (send_frame(b, fd, K_HELLO, hello, sizeof hello, deadline) ||
        recv_frame(b, fd, K_GO, body, sizeof body, &len, &kind, deadline, &why))
        goto refused;
    if (kind == K_REJECT)
        goto rejected;
    return 0;
rejected:
    body[len < MSG_MAX ? len : MSG_MAX] = '\0';
    return diag_set(d, CL_EINVAL, "rank %d: refused by rank 0: %s", b->w.rank, body);
refused:
    return diag_set(d, CL_EPEER, "rank %d: joining rank 0's rendezvous on %s failed: %s",
                    b->w.rank, rdv_name(b, name, sizeof name),
                    why ? why : "it answered something unexpected");
}

int boot_open(boot **out, const real_world *w, const unsigned char digest[AUTH_HASH_BYTES],
              cl_diag *d)
{
    *out = NULL;
    boot *b = calloc(1, sizeof *b);
    if (!b)
        return diag_set(d, CL_ENOMEM, "out of memory");
    b->w = *w;
    memcpy(b->digest, digest, AUTH_HASH_BYTES);
    snprintf(b->listen_addr, sizeof b->listen_addr, "127.0.0.1");
    b->nconns = w->rank == 0 ? w->size : 1;
    b->conns = calloc((size_t)b->nconns, sizeof *b->conns);
    b->pfd = calloc((size_t)b->nconns, sizeof *b->pfd);
    b->pidx = calloc((size_t)b->nconns, sizeof *b->pidx);
    if (!b->conns || !b->pfd || !b->pidx) {
        free(b->conns);
        free(b->pfd);
        free(b->pidx);
        free(b);
        return diag_set(d, CL_ENOMEM, "out of memory");
    }
    for (int i = 0; i < b->nconns; i++) {
        b->conns[i].fd = -1;
        b->conns[i].rank = w->rank == 0 ? i : 0;
    }
    int err = 0;
    if (w->rank == 0) {
        if (w->rdv == WORLD_RDV_UNIX)
            err = auth_random(b->secret, sizeof b->secret);
        else
            memcpy(b->secret, w->secret, sizeof b->secret);
        if (err)
            diag_set(d, CL_EIO, "rank 0: no random bytes for the job's secret");
        else if (w->size > 1)
            err = master_join(b, d);
    } else {
        if (w->rdv == WORLD_RDV_TCP)
            memcpy(b->secret, w->secret, sizeof b->secret);
        err = agent_join(b, d);
    }
    if (err) {
        boot_close(b);
        return err;
    }
    *out = b;
    return 0;
}

void boot_close(boot *b)
{
    if (!b)
        return;
    for (int i = 0; i < b->nconns; i++)
        conn_drop(&b->conns[i]);
    free(b->conns);
    free(b->pfd);
    free(b->pidx);
    auth_wipe(b->secret, sizeof b->secret);
    auth_wipe(b->w.secret, sizeof b->w.secret);
    free(b);
}

void boot_forget(boot *b)
{
    for (int i = 0; b && i < b->nconns; i++)
        if (b->conns[i].fd >= 0)
            close(b->conns[i].fd);
}

const unsigned char *boot_secret(const boot *b)
{
    return b->secret;
}

const char *boot_listen_addr(const boot *b)
{
    return b->listen_addr;
}

int boot_rank(const boot *b)
{
    return b->w.rank;
}

int boot_size(const boot *b)
{
    return b->w.size;
}

/* ---- a run ---- */

void boot_run_begin(boot *b, job *j)
{
    b->j = j;
    b->run++;
    b->table_sent = false;
    b->finished = false;
    b->remote_left = b->w.rank == 0 ? b->w.size - 1 : 0;
    b->status = 0;
    b->fail_status = 0;
    b->fail_new = false;
    b->state_sent = false;
    for (int i = 0; i < b->nconns; i++) {
        b->conns[i].done = false;
        b->conns[i].addr_sent = false;
    }
}

static void learn_failure(boot *b, int status, const char *msg, bool from_master)
{
    if (b->fail_status)
        return;
    b->fail_status = status ? status : CL_EPEER;
    b->fail_from_master = from_master;
    b->fail_new = true;
    diag_set(&b->fail, 0, "%s", msg);
}

static void lost(boot *b, conn *c)
{
    conn_drop(c);
    char msg[MSG_MAX];
    if (b->w.rank == 0) {
        if (c->done)
            return;
        c->done = true;
        b->remote_left--;
        snprintf(msg, sizeof msg, "rank %d went away: its process (pid %u on %s) closed its "
                 "connection to the rendezvous", c->rank, c->pid, c->host);
        learn_failure(b, CL_EPEER, msg, false);
    } else if (!b->finished) {
        b->finished = true;
        snprintf(msg, sizeof msg, "rank %d: lost the connection to rank 0: its process is gone",
                 b->w.rank);
        learn_failure(b, CL_EPEER, msg, false);
    }
}

/* The master hears of a remote rank's slot. */
static void take_state(boot *b, const unsigned char *p, size_t len)
{
    int rank = (int)get32(p);
    uint32_t np = get32(p + 20);
    if (rank <= 0 || rank >= b->w.size || np > JOB_MAX_PENDING || len != 32 + np * 20)
        return;
    job_slot *s = &b->j->slots[rank];
    job_wait w = {.call = get32(p + 16), .npending = np, .nwaiting = get32(p + 24),
                  .iter = (int32_t)get32(p + 28)};
    for (uint32_t i = 0; i < np; i++) {
        const unsigned char *e = p + 32 + i * 20;
        w.pending[i].op = (wf_op)get32(e);
        w.pending[i].peer = (int)get32(e + 4);
        w.pending[i].tag = (int)get32(e + 8);
        w.pending[i].bytes = get64(e + 12);
    }
    job_slot_wait_set(s, &w);
    uint32_t st = get32(p + 4);
    if (st <= JOB_BLOCKED)
        atomic_store_explicit(&s->state, st, memory_order_release);
    atomic_store_explicit(&s->progress, get64(p + 8), memory_order_relaxed);
}

/* The master takes a remote rank's results into its job. */
static bool take_done(boot *b, conn *c, const unsigned char *p, size_t len)
{
    job *j = b->j;
    int rank = (int)get32(p);
    uint32_t iters = get32(p + 4);
    uint64_t nrec = get64(p + 24), keep = nrec < j->rec_cap ? nrec : j->rec_cap;
    if (rank != c->rank || iters != (uint32_t)j->iters ||
        len != 32 + (size_t)iters * 8 + keep * REC_WIRE)
        return false;
    job_slot *s = &j->slots[rank];
    s->messages = get64(p + 8);
    s->bytes = get64(p + 16);
    const unsigned char *q = p + 32;
    for (uint32_t i = 0; i < iters; i++, q += 8)
        j->iter_time[(size_t)rank * iters + i] = getd(q);
    for (uint64_t k = 0; k < keep; k++, q += REC_WIRE) {
        cl_record *r = &j->recs[(size_t)rank * j->rec_cap + k];
        r->posted = getd(q);
        r->started = getd(q + 8);
        r->finished = getd(q + 16);
        r->bytes = get64(q + 24);
        r->msg = get64(q + 32);
        r->rank = rank;
        r->peer = (int32_t)get32(q + 40);
        r->tag = (int32_t)get32(q + 44);
        r->iter = (int32_t)get32(q + 48);
        r->op = q[52] < REC_OP_COUNT ? q[52] : REC_ITER;
        r->blocking = q[53] ? 1 : 0;
    }
    atomic_store(&s->nrec, nrec);
    atomic_store(&s->state, JOB_DONE);
    return true;
}

static void send_table(boot *b)
{
    size_t n = (size_t)b->w.size, len = 0;
    unsigned char *t = malloc(n * (4 + JOB_ADDR_MAX));
    if (!t) {
        learn_failure(b, CL_ENOMEM, "rank 0: out of memory", false);
        return;
    }
    for (size_t r = 0; r < n; r++) {
        const job_addr *a = &b->j->addrs[r];
        put32(t + len, a->len);
        memcpy(t + len + 4, a->bytes, a->len);
        len += 4 + a->len;
    }
    for (int r = 1; r < b->w.size; r++)
        queue(b, &b->conns[r], K_TABLE, t, len);
    free(t);
    b->table_sent = true;
}

static void take_table(boot *b, const unsigned char *p, size_t len)
{
    size_t off = 0;
    for (int r = 0; r < b->w.size; r++) {
        if (off + 4 > len)
            return;
        uint32_t n = get32(p + off);
        if (n > JOB_ADDR_MAX || off + 4 + n > len)
            return;
        if (r != b->w.rank)
            job_addr_publish(b->j, r, p + off + 4, n);
        off += 4 + n;
    }
}

static void handle(boot *b, conn *c, int kind, const unsigned char *p, size_t len)
{
    char msg[MSG_MAX];
    if (b->w.rank == 0) {
        switch (kind) {
        case K_ADDR: {
            uint32_t rank = get32(p), n = get32(p + 4);
            if ((int)rank == c->rank && n <= JOB_ADDR_MAX && len == 8 + n)
                job_addr_publish(b->j, c->rank, p + 8, n);
            return;
        }
        case K_STATE:
            if (len >= 32 && (int)get32(p) == c->rank)
                take_state(b, p, len);
            return;
        case K_FAIL:
            if (len >= 8 && !c->done) {
                c->done = true;
                b->remote_left--;
                snprintf(msg, sizeof msg, "%.*s", (int)(len - 8 < MSG_MAX - 1 ? len - 8 : MSG_MAX - 1),
                         (const char *)p + 8);
                learn_failure(b, (int)get32(p + 4), msg, false);
            }
            return;
        case K_DONE:
            if (len >= 32 && !c->done) {
                if (!take_done(b, c, p, len)) {
                    snprintf(msg, sizeof msg, "rank %d sent malformed results", c->rank);
                    learn_failure(b, CL_EPROTO, msg, false);
                }
                c->done = true;
                b->remote_left--;
            }
            return;
        }
        return;
    }
    switch (kind) {
    case K_TABLE:
        take_table(b, p, len);
        return;
    case K_ABORT:
        if (len >= 4) {
            snprintf(msg, sizeof msg, "%.*s", (int)(len - 4 < MSG_MAX - 1 ? len - 4 : MSG_MAX - 1),
                     (const char *)p + 4);
            b->status = (int)get32(p);
            learn_failure(b, b->status, msg, true);
            b->finished = true;
        }
        return;
    case K_FINISH:
        if (len == 4) {
            b->status = (int)get32(p);
            b->finished = true;
        }
        return;
    }
}

/* Reads what c has; frames of the current run are handled. */
static void drain(boot *b, conn *c)
{
    bool gone = false; /* the frames that came before the end still count */
    while (!gone) {
        if (grow(&c->in, &c->in_cap, c->in_len + 65536)) {
            lost(b, c);
            return;
        }
        ssize_t k = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
        if (k > 0)
            c->in_len += (size_t)k;
        else if (k < 0 && errno == EINTR)
            continue;
        else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        else
            gone = true;
    }
    size_t off = 0;
    while (c->in_len - off >= HDR) {
        const unsigned char *h = c->in + off;
        int kind = h[4] << 8 | h[5];
        uint32_t n = get32(h + 8);
        size_t max = body_max(b, kind);
        if (get32(h) != MAGIC || h[6] || h[7] || max == SIZE_MAX || n > max) {
            lost(b, c); /* a rank's process does not send that: treat it as gone */
            return;
        }
        if (c->in_len - off < HDR + n)
            break;
        if (get32(h + 12) == b->run)
            handle(b, c, kind, h + HDR, n);
        off += HDR + n;
        if (c->fd < 0)
            return;
    }
    memmove(c->in, c->in + off, c->in_len - off);
    c->in_len -= off;
    if (gone)
        lost(b, c);
}

/* An agent reports its rank's address and slot when they change. */
static void agent_publish(boot *b)
{
    conn *m = &b->conns[0];
    int me = b->w.rank;
    const job_addr *a = &b->j->addrs[me];
    if (!m->addr_sent && atomic_load_explicit(&a->ready, memory_order_acquire)) {
        unsigned char body[8 + JOB_ADDR_MAX];
        put32(body, (uint32_t)me);
        put32(body + 4, a->len);
        memcpy(body + 8, a->bytes, a->len);
        queue(b, m, K_ADDR, body, 8 + a->len);
        m->addr_sent = true;
    }
    const job_slot *s = &b->j->slots[me];
    unsigned char body[32 + JOB_MAX_PENDING * 20];
    uint32_t st = atomic_load_explicit(&s->state, memory_order_acquire);
    uint64_t prog = atomic_load_explicit(&s->progress, memory_order_relaxed);
    job_wait w;
    uint32_t q = job_slot_wait_read(s, &w), np = w.npending;
    if (b->state_sent && q == b->sent_seq && st == b->sent_state && prog == b->sent_progress)
        return;
    put32(body, (uint32_t)me);
    put32(body + 4, st);
    put64(body + 8, prog);
    put32(body + 16, w.call);
    put32(body + 20, np);
    put32(body + 24, w.nwaiting);
    put32(body + 28, (uint32_t)w.iter);
    for (uint32_t i = 0; i < np; i++) {
        unsigned char *e = body + 32 + i * 20;
        put32(e, (uint32_t)w.pending[i].op);
        put32(e + 4, (uint32_t)w.pending[i].peer);
        put32(e + 8, (uint32_t)w.pending[i].tag);
        put64(e + 12, w.pending[i].bytes);
    }
    if (st == JOB_DONE || st == JOB_FAILED)
        return; /* DONE and FAIL say that */
    queue(b, m, K_STATE, body, 32 + np * 20);
    b->state_sent = true;
    b->sent_seq = q;
    b->sent_state = st;
    b->sent_progress = prog;
}

void boot_pump(boot *b, int timeout_ms)
{
    if (b->w.rank != 0 && !b->finished)
        agent_publish(b);
    if (b->w.rank == 0 && !b->table_sent && !b->fail_status) {
        bool all = true;
        for (int r = 0; r < b->w.size && all; r++)
            all = atomic_load_explicit(&b->j->addrs[r].ready, memory_order_acquire);
        if (all)
            send_table(b);
    }
    struct pollfd *pfd = b->pfd;
    int *idx = b->pidx, n = 0;
    for (int i = 0; i < b->nconns; i++) {
        conn *c = &b->conns[i];
        if (c->fd >= 0 && c->out_len && !flush(c))
            lost(b, c);
        if (c->fd < 0)
            continue;
        pfd[n].fd = c->fd;
        pfd[n].events = (short)(POLLIN | (c->out_len ? POLLOUT : 0));
        idx[n++] = i;
    }
    if (n == 0) {
        if (timeout_ms > 0) {
            struct timespec ts = {0, (long)timeout_ms * 1000000L};
            nanosleep(&ts, NULL);
        }
        return;
    }
    if (poll(pfd, (nfds_t)n, timeout_ms) <= 0)
        return;
    for (int k = 0; k < n; k++) {
        conn *c = &b->conns[idx[k]];
        if (c->fd >= 0 && (pfd[k].revents & (POLLIN | POLLHUP | POLLERR)))
            drain(b, c);
        if (c->fd >= 0 && (pfd[k].revents & POLLOUT) && !flush(c))
            lost(b, c);
    }
}

int boot_failure(boot *b, int *status, cl_diag *why, bool *from_master)
{
    if (!b->fail_new)
        return 0;
    b->fail_new = false;
    *status = b->fail_status;
    *from_master = b->fail_from_master;
    *why = b->fail;
    return 1;
}

bool boot_waiting(const boot *b)
{
    return b->w.rank == 0 ? b->remote_left > 0 : !b->finished;
}

bool boot_report_failure(boot *b, int status, const char *msg)
{
    size_t len = strlen(msg) < MSG_MAX ? strlen(msg) : MSG_MAX;
    unsigned char body[8 + MSG_MAX];
    if (b->w.rank == 0) {
        b->status = status;
        put32(body, (uint32_t)status);
        memcpy(body + 4, msg, len);
        for (int r = 1; r < b->w.size; r++) {
            queue(b, &b->conns[r], K_ABORT, body, 4 + len);
            flush(&b->conns[r]);
        }
        /* The others stop now: the master does not wait for their word. */
        for (int r = 1; r < b->w.size; r++)
            b->conns[r].done = true;
        b->remote_left = 0;
        return false;
    }
    if (b->fail_from_master)
        return true; /* the master knows: it told us */
    if (b->conns[0].fd < 0)
        return false;
    put32(body, (uint32_t)b->w.rank);
    put32(body + 4, (uint32_t)status);
    memcpy(body + 8, msg, len);
    queue(b, &b->conns[0], K_FAIL, body, 8 + len);
    return flush(&b->conns[0]);
}

void boot_report_done(boot *b)
{
    if (b->w.rank == 0)
        return;
    job *j = b->j;
    int me = b->w.rank;
    const job_slot *s = &j->slots[me];
    uint64_t nrec = atomic_load(&s->nrec), keep = nrec < j->rec_cap ? nrec : j->rec_cap;
    size_t len = 32 + (size_t)j->iters * 8 + keep * REC_WIRE;
    unsigned char *p = calloc(1, len);
    if (!p) {
        boot_report_failure(b, CL_ENOMEM, "out of memory sending results");
        return;
    }
    put32(p, (uint32_t)me);
    put32(p + 4, (uint32_t)j->iters);
    put64(p + 8, s->messages);
    put64(p + 16, s->bytes);
    put64(p + 24, nrec);
    unsigned char *q = p + 32;
    for (int i = 0; i < j->iters; i++, q += 8)
        putd(q, j->iter_time[(size_t)me * (size_t)j->iters + (size_t)i]);
    for (uint64_t k = 0; k < keep; k++, q += REC_WIRE) {
        const cl_record *r = &j->recs[(size_t)me * j->rec_cap + k];
        putd(q, r->posted);
        putd(q + 8, r->started);
        putd(q + 16, r->finished);
        put64(q + 24, r->bytes);
        put64(q + 32, r->msg);
        put32(q + 40, (uint32_t)r->peer);
        put32(q + 44, (uint32_t)r->tag);
        put32(q + 48, (uint32_t)r->iter);
        q[52] = r->op;
        q[53] = r->blocking;
    }
    queue(b, &b->conns[0], K_DONE, p, len);
    free(p);
    flush(&b->conns[0]);
}

void boot_run_end(boot *b, int status)
{
    if (b->w.rank != 0)
        return;
    unsigned char body[4];
    put32(body, (uint32_t)status);
    if (status == 0 && b->status == 0)
        for (int r = 1; r < b->w.size; r++)
            queue(b, &b->conns[r], K_FINISH, body, 4);
    b->status = b->status ? b->status : status;
    /* Everything queued goes out before the next run (or the exit). */
    double deadline = now() + HANDSHAKE_SECONDS;
    for (int r = 1; r < b->w.size; r++) {
        conn *c = &b->conns[r];
        while (c->fd >= 0 && c->out_len && now() < deadline) {
            if (!flush(c)) {
                conn_drop(c);
                break;
            }
            if (c->out_len)
                wait_fd(c->fd, POLLOUT, deadline);
        }
    }
}

int boot_run_status(const boot *b)
{
    return b->status;
}
