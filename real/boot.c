/* boot.c - joining the rendezvous of ranks started elsewhere; see boot.h
 * (and boot_impl.h: relay.c carries the runs). */
#include "real/boot_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "real/handshake.h"

#define RETRY_NS 100000000L /* an agent retries its connect every 100 ms */

const char BOOT_PURPOSE[] = "commlab-boot";

void boot__conn_drop(boot_conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    free(c->in);
    free(c->out);
    c->in = c->out = NULL;
    c->in_len = c->in_cap = c->out_len = c->out_cap = 0;
}

size_t boot__body_max(const boot *b, int kind)
{
    return wire_body_max(kind, b->w.size, b->j ? b->j->iters : 0, b->j ? b->j->rec_cap : 0);
}

int boot__wait_fd(int fd, short events, double deadline)
{
    for (;;) {
        double left = deadline - job_now();
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

/* ---- blocking frames for the join, bounded by a deadline ---- */

static int send_all(int fd, const void *buf, size_t len, double deadline)
{
    const unsigned char *p = buf;
    while (len) {
        ssize_t k = send(fd, p, len, MSG_NOSIGNAL);
        if (k > 0) {
            p += k;
            len -= (size_t)k;
        } else if (k < 0 && (errno == EAGAIN || errno == EINTR)) {
            int err = boot__wait_fd(fd, POLLOUT, deadline);
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
            int err = boot__wait_fd(fd, POLLIN, deadline);
            if (err)
                return err;
        } else {
            return CL_EIO;
        }
    }
    return 0;
}

int boot__send_frame(const boot *b, int fd, int kind, const void *body, size_t len,
                     double deadline)
{
    unsigned char h[WIRE_HDR];
    wire_hdr_make(h, (uint8_t)kind, b->w.rank, 0, b->run, len, 0, 0);
    int err = send_all(fd, h, WIRE_HDR, deadline);
    return err ? err : send_all(fd, body, len, deadline);
}

/* Reads one frame of the kind expected (or WIRE_REJECT) into body (cap
 * bytes): the header into *h, *in a cursor over the body.  The header is
 * checked before the body is read. */
static int recv_frame(const boot *b, int fd, int want, unsigned char *body, size_t cap,
                      wire_hdr *h, wire_r *in, double deadline, const char **why)
{
    unsigned char raw[WIRE_HDR];
    int err = recv_all(fd, raw, WIRE_HDR, deadline);
    if (err) {
        *why = err == CL_ETIMEOUT ? "no answer in time" : "the connection closed";
        return err;
    }
    wire_hdr_decode(raw, h);
    if (!wire_hdr_valid(h)) {
        *why = "bad magic";
        return CL_EPROTO;
    }
    if ((h->kind != want && h->kind != WIRE_REJECT) || h->len > cap ||
        h->len > boot__body_max(b, h->kind)) {
        *why = "an unexpected frame";
        return CL_EPROTO;
    }
    err = recv_all(fd, body, (size_t)h->len, deadline);
    if (err)
        *why = "the connection closed";
    wire_r_init(in, body, (size_t)h->len);
    return err;
}

/* ---- joining ---- */

int boot__rdv_addr(const boot *b, struct sockaddr_storage *sa, socklen_t *len, int *family,
                   cl_diag *d)
{
    memset(sa, 0, sizeof *sa);
    if (b->w.rdv == WORLD_RDV_UNIX) {
        struct sockaddr_un *un = (struct sockaddr_un *)sa;
        un->sun_family = AF_UNIX;
        snprintf(un->sun_path, sizeof un->sun_path, "%s", b->w.unix_path);
        *len = (socklen_t)sizeof *un;
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

const char *boot__rdv_name(const boot *b, char *buf, size_t cap)
{
    if (b->w.rdv == WORLD_RDV_UNIX && !b->w.unix_path[0])
        snprintf(buf, cap, "the local socket %s in a folder %.*s*", b->w.unix_name,
                 (int)strlen(b->w.unix_dir) - 6, b->w.unix_dir);
    else if (b->w.rdv == WORLD_RDV_UNIX)
        snprintf(buf, cap, "the local socket %s", b->w.unix_path);
    else
        snprintf(buf, cap, "%s:%s", b->w.master_host, b->w.master_port);
    return buf;
}

void boot__peer_name(int fd, char *buf, size_t cap)
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

/* The folder of a Unix rendezvous: made if missing, and it must be this
 * user's alone (a directory, ours, no access for group or others), or
 * another user could have put a socket of theirs in it. */
static int private_dir(const boot *b, cl_diag *d)
{
    const char *dir = b->w.unix_dir;
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return diag_set(d, CL_EIO, "rank %d: cannot make the rendezvous folder %s: %s",
                        b->w.rank, dir, strerror(errno));
    struct stat st;
    if (lstat(dir, &st) < 0)
        return diag_set(d, CL_EIO, "rank %d: the rendezvous folder %s: %s", b->w.rank, dir,
                        strerror(errno));
    if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
        return diag_set(d, CL_EIO, "rank %d: the rendezvous folder %s is %s: it must be a "
                        "folder only this user (uid %u) can enter; remove it", b->w.rank, dir,
                        !S_ISDIR(st.st_mode) ? "not a folder"
                        : st.st_uid != geteuid() ? "another user's"
                                                 : "open to other users",
                        (unsigned)geteuid());
    return 0;
}

/* ---- a fresh rendezvous folder (world.h: no private runtime folder) ---- */

typedef struct fresh_look {
    bool clean;                    /* rank 0: remove the sockets nobody answers on */
    int fd;                        /* connected, or -1 */
    char path[WORLD_UNIX_PATH];    /* the socket connected to */
} fresh_look;

/* Connects to the socket at path; a stale one (nobody listens: its rank 0
 * was killed) is removed with its folder when l->clean. */
static bool fresh_try(fresh_look *l, const char *path)
{
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    snprintf(un.sun_path, sizeof un.sun_path, "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    if (connect(fd, (struct sockaddr *)&un, sizeof un) == 0) {
        l->fd = fd;
        snprintf(l->path, sizeof l->path, "%s", path);
        return true;
    }
    bool stale = errno == ECONNREFUSED;
    close(fd);
    if (stale && l->clean && unlink(path) == 0) {
        char dir[WORLD_UNIX_PATH];
        snprintf(dir, sizeof dir, "%s", path);
        *strrchr(dir, '/') = 0;
        rmdir(dir); /* only when empty */
    }
    return false;
}

/* Looks through the folders a fresh rendezvous of this world may be in
 * (unix_dir's template: BASE/commlab-UID.??????) for its socket, and
 * connects to the first that answers.  Only a folder of this user's that
 * no one else may enter, holding a socket of this user's, is looked at:
 * another user can make a folder of that name, never one of ours.  True
 * with l->fd connected. */
static bool fresh_find(const boot *b, fresh_look *l)
{
    char base[sizeof b->w.unix_dir];
    snprintf(base, sizeof base, "%s", b->w.unix_dir);
    char *slash = strrchr(base, '/');
    *slash = 0;
    const char *prefix = slash + 1;
    size_t plen = strlen(prefix) - 6; /* up to the X's */
    l->fd = -1;
    DIR *dir = opendir(base);
    if (!dir)
        return false;
    struct dirent *e;
    bool found = false;
    while (!found && (e = readdir(dir))) {
        if (strncmp(e->d_name, prefix, plen) != 0 || strlen(e->d_name) != plen + 6)
            continue;
        char folder[WORLD_UNIX_PATH], path[WORLD_UNIX_PATH];
        struct stat st;
        if (snprintf(folder, sizeof folder, "%s/%s", base, e->d_name) >= (int)sizeof folder ||
            snprintf(path, sizeof path, "%s/%s", folder, b->w.unix_name) >= (int)sizeof path)
            continue;
        if (lstat(folder, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
            (st.st_mode & 077))
            continue;
        if (lstat(path, &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_uid != geteuid())
            continue;
        found = fresh_try(l, path);
    }
    closedir(dir);
    return found;
}

/* Rank 0 of a fresh rendezvous: refuses when another run of this world's
 * name answers, removes what killed runs left, then makes the folder. */
static int fresh_make(boot *b, cl_diag *d)
{
    fresh_look l = {.clean = true};
    if (fresh_find(b, &l)) {
        close(l.fd);
        return diag_set(d, CL_EIO, "rank 0: cannot hold the rendezvous on the local socket %s: "
                        "another run is using it", l.path);
    }
    if (!mkdtemp(b->w.unix_dir))
        return diag_set(d, CL_EIO, "rank 0: cannot make a rendezvous folder %s: %s",
                        b->w.unix_dir, strerror(errno));
    b->unix_made = true;
    snprintf(b->w.unix_path, sizeof b->w.unix_path, "%.60s/%.46s", b->w.unix_dir,
             b->w.unix_name);
    return 0;
}

/* The other end of a Unix rendezvous must be a process of this user; the
 * kernel says whose it is (SO_PEERCRED). */
static int peer_is_me(int fd, struct ucred *cred)
{
    socklen_t cl = sizeof *cred;
    return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cred, &cl) == 0 && cred->uid == geteuid();
}

/* The per-job key the transports use: the base key bound to the job's id,
 * which rank 0 draws and sends with GO, so that two jobs given one secret
 * never accept each other's connections. */
static void job_key(boot *b)
{
    auth_hmac m;
    auth_hmac_init(&m, b->secret, sizeof b->secret);
    auth_hmac_add(&m, "commlab-job", 12);
    auth_hmac_add(&m, b->job_id, sizeof b->job_id);
    auth_hmac_finish(&m, b->job_key);
}

static void master_unlisten(boot *b, int lfd)
{
    if (lfd >= 0)
        close(lfd); /* nobody joins later: strangers find nothing */
    if (b->unix_bound)
        unlink(b->w.unix_path);
    b->unix_bound = false;
    if (b->unix_made)
        rmdir(b->w.unix_dir);
    b->unix_made = false;
}

/* Rank 0 listens on the rendezvous.  A Unix socket's file left by a rank 0
 * that was killed (nobody answers on it) is replaced; one that answers is
 * another run's. */
static int master_listen(boot *b, int *out, cl_diag *d)
{
    struct sockaddr_storage sa;
    socklen_t salen;
    int family;
    char name[300];
    int err = 0;
    if (b->w.rdv == WORLD_RDV_UNIX)
        err = b->w.unix_fresh ? fresh_make(b, d) : private_dir(b, d);
    if (err || (err = boot__rdv_addr(b, &sa, &salen, &family, d))) {
        master_unlisten(b, -1);
        return err;
    }
    int lfd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int one = 1;
    if (lfd >= 0 && family != AF_UNIX)
        setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    bool bound = lfd >= 0 && bind(lfd, (struct sockaddr *)&sa, salen) == 0;
    if (lfd >= 0 && !bound && errno == EADDRINUSE && family == AF_UNIX) {
        int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        bool stale = probe >= 0 && connect(probe, (struct sockaddr *)&sa, salen) < 0 &&
                     errno == ECONNREFUSED;
        if (probe >= 0)
            close(probe);
        if (stale && unlink(b->w.unix_path) == 0)
            bound = bind(lfd, (struct sockaddr *)&sa, salen) == 0;
        else
            errno = EADDRINUSE;
    }
    b->unix_bound = bound && family == AF_UNIX;
    if (!bound || listen(lfd, 64) < 0) {
        int e = errno;
        master_unlisten(b, lfd);
        return diag_set(d, CL_EIO, "rank 0: cannot hold the rendezvous on %s: %s%s",
                        boot__rdv_name(b, name, sizeof name), strerror(e),
                        e == EADDRINUSE ? " (another run is using it?)" : "");
    }
    if (family == AF_INET || family == AF_INET6)
        inet_ntop(family, family == AF_INET ? (void *)&((struct sockaddr_in *)&sa)->sin_addr
                                            : (void *)&((struct sockaddr_in6 *)&sa)->sin6_addr,
                  b->listen_addr, sizeof b->listen_addr);
    *out = lfd;
    return 0;
}

static int master_join(boot *b, cl_diag *d)
{
    int lfd;
    int err = master_listen(b, &lfd, d);
    if (err)
        return err;
    if (!(err = boot__admit(b, lfd, d)) && auth_random(b->job_id, sizeof b->job_id))
        err = diag_set(d, CL_EIO, "rank 0: no random bytes for the job's id");
    master_unlisten(b, lfd);
    for (int r = 1; r < b->w.size && !err; r++)
        if (boot__send_frame(b, b->conns[r].fd, WIRE_GO, b->job_id, sizeof b->job_id,
                             job_now() + BOOT_HANDSHAKE_SECONDS))
            err = diag_set(d, CL_EPEER, "rank 0: rank %d (host %s) went away while joining", r,
                           b->conns[r].host);
    return err;
}

static int set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static int agent_connect(boot *b, int *out, cl_diag *d)
{
    struct sockaddr_storage sa;
    socklen_t salen;
    int family;
    char name[300];
    bool fresh = b->w.rdv == WORLD_RDV_UNIX && b->w.unix_fresh;
    int err = fresh ? 0 : boot__rdv_addr(b, &sa, &salen, &family, d);
    if (err || (b->w.rdv == WORLD_RDV_UNIX && !fresh && (err = private_dir(b, d))))
        return err;
    if (fresh)
        family = AF_UNIX;
    double deadline = job_now() + b->w.join_timeout;
    int fd = -1, last = 0;
    for (;;) {
        if (fresh) {
            fresh_look l = {.clean = false};
            if (fresh_find(b, &l)) {
                fd = l.fd;
                snprintf(b->w.unix_path, sizeof b->w.unix_path, "%s", l.path);
                break;
            }
            last = ENOENT; /* rank 0 has not made it yet */
        } else {
            fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
            if (fd < 0)
                return diag_set(d, CL_EIO, "rank %d: socket: %s", b->w.rank, strerror(errno));
            if (connect(fd, (struct sockaddr *)&sa, salen) == 0)
                break;
            last = errno;
            close(fd);
            fd = -1;
        }
        if (job_now() > deadline)
            return diag_set(d, CL_ETIMEOUT, "rank %d: cannot reach rank 0's rendezvous on %s "
                            "within %.0f s: %s", b->w.rank, boot__rdv_name(b, name, sizeof name),
                            b->w.join_timeout, strerror(last));
        struct timespec ts = {0, RETRY_NS};
        nanosleep(&ts, NULL);
    }
    b->conns[0].fd = fd;
    struct ucred cred = {0};
    if (family == AF_UNIX && !peer_is_me(fd, &cred))
        return diag_set(d, CL_EIO, "rank %d: %s is held by another user's process (uid %u, "
                        "pid %d), not by rank 0: refused to join it", b->w.rank,
                        boot__rdv_name(b, name, sizeof name), (unsigned)cred.uid, (int)cred.pid);
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
    *out = fd;
    return 0;
}

static int agent_join(boot *b, cl_diag *d)
{
    int fd = -1;
    char name[300];
    int err = agent_connect(b, &fd, d);
    if (err)
        return err;
    double deadline = job_now() + b->w.join_timeout;
    unsigned char body[BOOT_JOIN_BODY];
    wire_hdr h;
    wire_r in;
    wire_w out;
    const char *why = NULL;
    handshake hs;
    wire_challenge ch;
    wire_response resp;
    wire_accept acc;
    handshake_init(&hs, b->secret, BOOT_PURPOSE, b->w.rank, 0);
    if (recv_frame(b, fd, WIRE_CHALLENGE, body, sizeof body, &h, &in, deadline, &why))
        goto refused;
    if (h.kind == WIRE_REJECT)
        goto rejected;
    if (wire_challenge_get(&in, &ch))
        goto refused;
    /* On a Unix rendezvous the proof is the user id; the MAC, made without
     * the secret, means nothing. */
    if (handshake_respond(&hs, &ch, &resp))
        return diag_set(d, CL_EIO, "rank %d: no random bytes", b->w.rank);
    wire_w_init(&out, body, sizeof body);
    wire_response_put(&out, &resp);
    unsigned char hdr[WIRE_HDR];
    wire_hdr_make(hdr, WIRE_RESPONSE, b->w.rank, 0, b->run, out.len, 0, 0);
    if (send_all(fd, hdr, sizeof hdr, deadline) || send_all(fd, body, out.len, deadline) ||
        recv_frame(b, fd, WIRE_ACCEPT, body, sizeof body, &h, &in, deadline, &why))
        goto refused;
    if (h.kind == WIRE_REJECT)
        goto rejected;
    if (wire_accept_get(&in, &acc))
        goto refused;
    if (b->w.rdv == WORLD_RDV_UNIX) {
        memcpy(b->secret, acc.mac, sizeof b->secret);
    } else if (handshake_finish(&hs, &acc)) {
        return diag_set(d, CL_EPROTO, "rank %d: the rendezvous on %s does not know "
                        "COMMLAB_SECRET: is it another run's?", b->w.rank,
                        boot__rdv_name(b, name, sizeof name));
    }
    auth_wipe(&acc, sizeof acc);
    auth_wipe(body, sizeof body);
    wire_hello hello = {.rank = (uint32_t)b->w.rank, .size = (uint32_t)b->w.size,
                        .pid = (uint32_t)getpid()};
    memcpy(hello.digest, b->digest, AUTH_HASH_BYTES);
    gethostname(hello.host, WIRE_HOST_MAX - 1);
    wire_w_init(&out, body, sizeof body);
    wire_hello_put(&out, &hello);
    if (boot__send_frame(b, fd, WIRE_HELLO, body, out.len, deadline) ||
        recv_frame(b, fd, WIRE_GO, body, sizeof body, &h, &in, deadline, &why))
        goto refused;
    if (h.kind == WIRE_REJECT)
        goto rejected;
    if (wire_r_left(&in) != sizeof b->job_id)
        goto refused;
    wire_r_bytes(&in, b->job_id, sizeof b->job_id);
    return 0;
rejected: {
        wire_fail no;
        if (wire_fail_get(&in, &no))
            diag_set(&no.why, 0, "(no reason given)");
        return diag_set(d, CL_EINVAL, "rank %d: refused by rank 0: %s", b->w.rank,
                        no.why.msg);
    }
refused:
    return diag_set(d, CL_EPEER, "rank %d: joining rank 0's rendezvous on %s failed: %s",
                    b->w.rank, boot__rdv_name(b, name, sizeof name),
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
        else
            err = auth_random(b->job_id, sizeof b->job_id) ? diag_set(d, CL_EIO, "rank 0: no "
                                                                      "random bytes") : 0;
    } else {
        if (w->rdv == WORLD_RDV_TCP)
            memcpy(b->secret, w->secret, sizeof b->secret);
        err = agent_join(b, d);
    }
    if (err) {
        boot_close(b);
        return err;
    }
    job_key(b);
    /* Everyone has joined: only the job's key is needed from now on (the
     * base key would prove the secret to other jobs). */
    auth_wipe(b->secret, sizeof b->secret);
    auth_wipe(b->w.secret, sizeof b->w.secret);
    *out = b;
    return 0;
}

void boot_close(boot *b)
{
    if (!b)
        return;
    for (int i = 0; i < b->nconns; i++)
        boot__conn_drop(&b->conns[i]);
    free(b->conns);
    free(b->pfd);
    free(b->pidx);
    auth_wipe(b->secret, sizeof b->secret);
    auth_wipe(b->job_key, sizeof b->job_key);
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
    return b->job_key;
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

pid_t boot_local_pid(const boot *b, int rank)
{
    return b->w.rank == 0 && rank > 0 && rank < b->nconns ? b->conns[rank].local_pid : 0;
}

