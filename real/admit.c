/*
 * admit.c - rank 0's side of joining the rendezvous (boot.h): it listens,
 * proves every connection and takes its HELLO, many connections at once.
 *
 * Every connection is a small state machine (the proof awaited, then the
 * HELLO) with a deadline of its own, BOOT_HANDSHAKE_SECONDS, all of them
 * in one poll loop, as the tcp transport's handshakes are: a stranger who
 * connects and says nothing holds one entry for that long and delays no
 * one.  At most BOOT_JOINING_MAX are under way; a new connection beyond
 * that pushes out the one nearest its deadline, so a flood of idle
 * connections can only make each stranger's wait shorter.
 *
 * Reads are exact (a header, checked before its body is read, then the
 * body) and writes are one small frame at a time on a fresh socket, sent
 * without blocking: one that does not fit at once is a refusal.
 *
 * On a Unix rendezvous the kernel's word on the peer's user id
 * (SO_PEERCRED) is the proof, checked before a byte is sent; the job's
 * secret is handed out only after it.  Over TCP the proof is the
 * challenge-response (real/handshake.h), and nothing keyed is computed
 * before the joiner has proven the secret.
 */
#include "real/boot_impl.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "real/handshake.h"

typedef struct joiner {
    int fd;             /* -1: a free entry */
    bool proven;        /* its proof held: HELLO awaited (else RESPONSE) */
    double deadline;    /* job_now() seconds */
    pid_t pid;          /* on a Unix socket: its process, as the kernel says (SO_PEERCRED) */
    handshake hs;       /* nonces of the challenge-response */
    unsigned char frame[WIRE_HDR + BOOT_JOIN_BODY]; /* the frame being read */
    size_t got;         /* bytes of it read */
} joiner;

typedef struct admission {
    boot *b;
    int lfd;                          /* the listening socket */
    joiner j[BOOT_JOINING_MAX];
    int joined;                       /* ranks in, besides rank 0 */
    bool logged;                      /* a refusal was logged: later ones are not */
    cl_diag *d;                       /* why the join failed */
    int err;                          /* and its code; 0 while it goes on */
} admission;

static void joiner_close(joiner *jn)
{
    if (jn->fd >= 0)
        close(jn->fd);
    auth_wipe(jn, sizeof *jn);
    jn->fd = -1;
}

/* A connection is refused: logged the first time, then closed. */
static void refuse(admission *a, joiner *jn, const char *why)
{
    if (!a->logged) {
        char who[80];
        boot__peer_name(jn->fd, who, sizeof who);
        fprintf(stderr, "commlab: rank 0: refused a connection to the rendezvous from %s: %s\n",
                who, why);
        a->logged = true;
    }
    joiner_close(jn);
}

/* One whole frame, now, without blocking; 0 or CL_EIO. */
static int send_now(const boot *b, int fd, int kind, const void *body, size_t len)
{
    unsigned char buf[WIRE_HDR + BOOT_JOIN_BODY];
    if (len > BOOT_JOIN_BODY)
        return CL_EIO;
    wire_hdr_make(buf, (uint8_t)kind, b->w.rank, 0, 0, len, 0, 0);
    if (len)
        memcpy(buf + WIRE_HDR, body, len);
    ssize_t k = send(fd, buf, WIRE_HDR + len, MSG_NOSIGNAL | MSG_DONTWAIT);
    auth_wipe(buf, sizeof buf);
    return k == (ssize_t)(WIRE_HDR + len) ? 0 : CL_EIO;
}

static void send_reject(const boot *b, int fd, const char *msg)
{
    unsigned char body[BOOT_JOIN_BODY];
    wire_fail no = {.status = CL_EINVAL};
    diag_set(&no.why, 0, "%s", msg);
    wire_w out;
    wire_w_init(&out, body, sizeof body);
    wire_fail_put(&out, &no);
    send_now(b, fd, WIRE_REJECT, body, out.len);
}

/* A new connection: a free entry (or the one nearest its deadline), the
 * user check on a Unix socket, the challenge. */
static void take_connection(admission *a, int fd, double join_deadline)
{
    boot *b = a->b;
    joiner *jn = NULL, *oldest = NULL;
    for (int i = 0; i < BOOT_JOINING_MAX && !jn; i++) {
        if (a->j[i].fd < 0)
            jn = &a->j[i];
        else if (!oldest || a->j[i].deadline < oldest->deadline)
            oldest = &a->j[i];
    }
    if (!jn) {
        refuse(a, oldest, "too many connections at once: the one waiting longest goes");
        jn = oldest;
    }
    memset(jn, 0, sizeof *jn);
    jn->fd = fd;
    jn->deadline = fmin(join_deadline, job_now() + BOOT_HANDSHAKE_SECONDS);
    if (b->w.rdv == WORLD_RDV_UNIX) {
        struct ucred cred;
        socklen_t cl = sizeof cred;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0) {
            refuse(a, jn, "its user id is unknown");
            return;
        }
        jn->pid = cred.pid;
        if (cred.uid != geteuid()) {
            char why[96];
            snprintf(why, sizeof why, "another user's process (uid %u, pid %d)",
                     (unsigned)cred.uid, (int)cred.pid);
            refuse(a, jn, why);
            return;
        }
    }
    handshake_init(&jn->hs, b->secret, BOOT_PURPOSE, 0, -1);
    wire_challenge ch;
    unsigned char body[WIRE_NONCE];
    wire_w out;
    if (handshake_challenge(&jn->hs, &ch)) {
        refuse(a, jn, "no random bytes");
        return;
    }
    wire_w_init(&out, body, sizeof body);
    wire_challenge_put(&out, &ch);
    if (send_now(b, fd, WIRE_CHALLENGE, body, out.len))
        refuse(a, jn, "the connection closed");
}

/* Reads what has come of the frame awaited, of kind.  1: it is whole; 0:
 * more to come; -1: refused, with *why. */
static int read_frame(admission *a, joiner *jn, int kind, wire_hdr *h, const char **why)
{
    for (;;) {
        size_t want = WIRE_HDR;
        if (jn->got >= WIRE_HDR) {
            wire_hdr_decode(jn->frame, h);
            want += (size_t)h->len;
        }
        if (jn->got == want && jn->got >= WIRE_HDR)
            return 1;
        ssize_t k = recv(jn->fd, jn->frame + jn->got, want - jn->got, 0);
        if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR)) {
            *why = "the connection closed";
            return -1;
        }
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return 0;
        jn->got += (size_t)k;
        if (jn->got == WIRE_HDR) {
            wire_hdr_decode(jn->frame, h);
            if (!wire_hdr_valid(h)) {
                *why = "bad magic";
                return -1;
            }
            if (h->kind != kind || h->len > BOOT_JOIN_BODY ||
                h->len > boot__body_max(a->b, h->kind)) {
                *why = "an unexpected frame";
                return -1;
            }
        }
    }
}

/* The joiner's proof came: checked, then ours (or, on a Unix socket, the
 * job's secret: its user id was the proof) goes back. */
static void take_response(admission *a, joiner *jn, const wire_hdr *h)
{
    boot *b = a->b;
    wire_r in;
    wire_response resp;
    wire_accept acc;
    wire_r_init(&in, jn->frame + WIRE_HDR, (size_t)h->len);
    if (h->b != 0 || wire_response_get(&in, &resp)) {
        refuse(a, jn, "a bad response");
        return;
    }
    jn->hs.peer = h->src;
    if (b->w.rdv == WORLD_RDV_UNIX) {
        memcpy(acc.mac, b->secret, sizeof acc.mac);
    } else if (handshake_check(&jn->hs, &resp, &acc)) {
        send_reject(b, jn->fd, "its COMMLAB_SECRET is not rank 0's");
        refuse(a, jn, "a wrong secret");
        return;
    }
    unsigned char body[AUTH_MAC_BYTES];
    wire_w out;
    wire_w_init(&out, body, sizeof body);
    wire_accept_put(&out, &acc);
    auth_wipe(&acc, sizeof acc);
    int err = send_now(b, jn->fd, WIRE_ACCEPT, body, out.len);
    auth_wipe(body, sizeof body);
    if (err) {
        refuse(a, jn, "the connection closed");
        return;
    }
    jn->proven = true;
    jn->got = 0;
}

/* A proven joiner says who it is.  A rank that does not fit this run (its
 * size, its rank, its options) is a real process started wrong: the join
 * stops, and both sides say why. */
static void take_hello(admission *a, joiner *jn, const wire_hdr *h)
{
    boot *b = a->b;
    wire_r in;
    wire_hello hello;
    wire_r_init(&in, jn->frame + WIRE_HDR, (size_t)h->len);
    if (wire_hello_get(&in, &hello) || h->src != hello.rank) {
        refuse(a, jn, "a bad hello");
        return;
    }
    uint32_t rank = hello.rank, size = hello.size;
    cl_diag why = {{0}};
    if (size != (uint32_t)b->w.size)
        diag_set(&why, 0, "rank %u (host %s) was started in a world of %u ranks, rank 0 "
                 "in one of %d", rank, hello.host, size, b->w.size);
    else if (rank == 0 || rank >= size)
        diag_set(&why, 0, "a process on %s says it is rank %u: not a rank 1..%d can be",
                 hello.host, rank, b->w.size - 1);
    else if (b->conns[rank].fd >= 0)
        diag_set(&why, 0, "rank %u joined twice (hosts %s and %s): is another run using "
                 "the same rendezvous?", rank, b->conns[rank].host, hello.host);
    else if (!auth_equal(hello.digest, b->digest, AUTH_HASH_BYTES))
        diag_set(&why, 0, "rank %u (host %s) was started with other options than rank 0: "
                 "every process must run the same command", rank, hello.host);
    if (why.msg[0]) {
        send_reject(b, jn->fd, why.msg);
        joiner_close(jn);
        a->err = diag_set(a->d, CL_EINVAL, "rank 0: %s", why.msg);
        return;
    }
    boot_conn *c = &b->conns[rank];
    memcpy(c->host, hello.host, WIRE_HOST_MAX);
    c->pid = hello.pid;
    c->local_pid = jn->pid;
    c->fd = jn->fd;
    jn->fd = -1; /* the connection is the rank's now */
    joiner_close(jn);
    a->joined++;
}

static void step(admission *a, joiner *jn)
{
    wire_hdr h;
    const char *why = NULL;
    int r = read_frame(a, jn, jn->proven ? WIRE_HELLO : WIRE_RESPONSE, &h, &why);
    if (r < 0)
        refuse(a, jn, why);
    else if (r > 0 && !jn->proven)
        take_response(a, jn, &h);
    else if (r > 0)
        take_hello(a, jn, &h);
}

/* Waits for every other rank, up to the join timeout. */
static int admit_all(admission *a, double join_deadline)
{
    boot *b = a->b;
    struct pollfd pfd[1 + BOOT_JOINING_MAX];
    joiner *of[1 + BOOT_JOINING_MAX];
    char name[300];
    while (!a->err && a->joined < b->w.size - 1) {
        double now = job_now(), wake = join_deadline;
        if (now >= join_deadline) {
            int missing = 1;
            while (missing < b->w.size && b->conns[missing].fd >= 0)
                missing++;
            return diag_set(a->d, CL_ETIMEOUT, "rank 0: %d of %d ranks reached the rendezvous "
                            "on %s within %.0f s; rank %d did not", a->joined + 1, b->w.size,
                            boot__rdv_name(b, name, sizeof name), b->w.join_timeout, missing);
        }
        int n = 0;
        pfd[n].fd = a->lfd;
        pfd[n].events = POLLIN;
        of[n++] = NULL;
        for (int i = 0; i < BOOT_JOINING_MAX; i++) {
            joiner *jn = &a->j[i];
            if (jn->fd < 0)
                continue;
            if (now >= jn->deadline) {
                refuse(a, jn, "no answer in time");
                continue;
            }
            wake = fmin(wake, jn->deadline);
            pfd[n].fd = jn->fd;
            pfd[n].events = POLLIN;
            of[n++] = jn;
        }
        int r = poll(pfd, (nfds_t)n, (int)ceil((wake - now) * 1000));
        if (r < 0 && errno != EINTR)
            return diag_set(a->d, CL_EIO, "rank 0: poll: %s", strerror(errno));
        if (r <= 0)
            continue;
        for (int k = 1; k < n && !a->err; k++)
            if (pfd[k].revents && of[k]->fd >= 0)
                step(a, of[k]);
        /* At most a table's worth of new connections a round: a flood
         * cannot keep the joiners already in from being heard. */
        for (int k = 0; k < BOOT_JOINING_MAX && !a->err && (pfd[0].revents & POLLIN); k++) {
            int fd = accept4(a->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
            if (fd < 0)
                break;
            take_connection(a, fd, join_deadline);
        }
    }
    return a->err;
}

int boot__admit(boot *b, int lfd, cl_diag *d)
{
    admission *a = calloc(1, sizeof *a);
    if (!a)
        return diag_set(d, CL_ENOMEM, "rank 0: out of memory");
    a->b = b;
    a->lfd = lfd;
    a->d = d;
    for (int i = 0; i < BOOT_JOINING_MAX; i++)
        a->j[i].fd = -1;
    int err = admit_all(a, job_now() + b->w.join_timeout);
    for (int i = 0; i < BOOT_JOINING_MAX; i++)
        if (a->j[i].fd >= 0)
            joiner_close(&a->j[i]);
    auth_wipe(a, sizeof *a);
    free(a);
    return err;
}
