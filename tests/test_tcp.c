/* test_tcp.c - the tcp backend end to end through real_run(): every
 * pattern's data check over loopback TCP, messages to oneself, deadlock
 * reports, truncated receives, a rank that dies, a connection that drops,
 * strangers on a listening port, --listen, and the records a run gathers.
 *
 * Nothing here depends on timing: a deadlock is reported once every rank has
 * been blocked with no progress for the timeout, which a run that is merely
 * slow never is; a stranger's refusal is awaited (bounded) before the run
 * goes on; every other check is about what happened, not when.  (A
 * two-minute alarm per run only turns a hang into a failure.) */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "commlab.h"
#include "core/record.h"
#include "real/launch.h"
#include "tests/testutil.h"

cl_pattern_fn relay, pingpong, ring, exchange, deadlock, pipeline, chunked, allreduce_naive,
    allreduce_ring;

#define KiB 1024ULL
#define MiB (1024ULL * 1024ULL)

typedef struct run {
    real_result res;
    char *out, *err, *report; /* the ranks' stdout and stderr, the launcher's reports */
} run;

typedef struct setup {
    int iters;            /* default 2 */
    int warmup;           /* default 1; -1 for none */
    uint64_t eager_limit; /* default 64 KiB */
    bool check;
    const char *listen;
    double deadlock_timeout; /* default 5 s: long, so only a real deadlock reports */
    rec_log *records;
} setup;

/* The whole content of f, NUL-terminated; closes f. */
static char *slurp(FILE *f)
{
    assert_non_null(f);
    fflush(f);
    long n = ftell(f);
    assert_true(n >= 0);
    char *s = malloc((size_t)n + 1);
    assert_non_null(s);
    rewind(f);
    size_t got = fread(s, 1, (size_t)n, f);
    s[got] = 0;
    fclose(f);
    return s;
}

/* Runs fn on n ranks over tcp; what the ranks write to fd 1 and 2 and the
 * reports are kept in r.  Returns real_run's own return value. */
static int try_pattern(run *r, cl_pattern_fn *fn, int n, uint64_t bytes, const cl_args *extra,
                       const setup *s)
{
    static const setup none = {0};
    if (!s)
        s = &none;
    memset(r, 0, sizeof *r);
    FILE *rep = tmpfile(), *out = tmpfile(), *err = tmpfile();
    assert_non_null(rep);
    assert_non_null(out);
    assert_non_null(err);
    fflush(stdout);
    fflush(stderr);
    int saved_out = dup(STDOUT_FILENO), saved_err = dup(STDERR_FILENO);
    assert_true(saved_out >= 0 && saved_err >= 0);
    assert_true(dup2(fileno(out), STDOUT_FILENO) >= 0);
    assert_true(dup2(fileno(err), STDERR_FILENO) >= 0);
    real_opts o = {
        .backend = "tcp", .nranks = n, .warmup = s->warmup < 0 ? 0 : s->warmup ? s->warmup : 1,
        .iters = s->iters ? s->iters : 2,
        .eager_limit = s->eager_limit ? s->eager_limit : 64 * KiB, .check = s->check,
        .listen = s->listen,
        .deadlock_timeout = s->deadlock_timeout > 0 ? s->deadlock_timeout : 5.0,
        .records = s->records, .report = rep, .warn = NULL,
    };
    cl_args a = extra ? *extra : (cl_args){.microbatches = 3};
    a.bytes = (size_t)bytes;
    alarm(120); /* a hang ends this process, and the ranks die with it */
    int rc = real_run(&o, fn, &a, &r->res);
    alarm(0);
    dup2(saved_out, STDOUT_FILENO);
    dup2(saved_err, STDERR_FILENO);
    close(saved_out);
    close(saved_err);
    r->report = slurp(rep);
    r->out = slurp(out);
    r->err = slurp(err);
    return rc;
}

static void run_pattern(run *r, cl_pattern_fn *fn, int n, uint64_t bytes, const cl_args *extra,
                        const setup *s)
{
    int rc = try_pattern(r, fn, n, bytes, extra, s);
    if (rc)
        fail_msg("real_run: %s (%s)", r->res.diag.msg, cl_errname(rc));
}

static void run_release(run *r)
{
    real_result_release(&r->res);
    free(r->out);
    free(r->err);
    free(r->report);
}

/* No rank process outlives a run: this process has no child left. */
static void assert_no_children(void)
{
    errno = 0;
    pid_t p = waitpid(-1, NULL, WNOHANG);
    if (p != -1 || errno != ECHILD)
        fail_msg("a child process is left after the run (waitpid: %d, errno %d)", (int)p,
                 errno);
}

#define assert_contains(hay, needle)                                                    \
    do {                                                                                \
        if (!strstr((hay), (needle)))                                                   \
            fail_msg("expected '%s' in '%s'", (needle), (hay));                         \
    } while (0)

static size_t count_of(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

/* ---- every pattern checks its data ---- */

static void test_patterns_check_data(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        cl_pattern_fn *fn;
        const char *fix;
        bool eager_only; /* deadlocks above the eager limit */
    } all[] = {
        {"relay", relay, NULL, false},
        {"pingpong", pingpong, NULL, false},
        {"ring", ring, NULL, false},
        {"exchange", exchange, NULL, false},
        {"deadlock", deadlock, NULL, true},
        {"deadlock --fix order", deadlock, "order", false},
        {"deadlock --fix nonblocking", deadlock, "nonblocking", false},
        {"pipeline", pipeline, NULL, false},
        {"chunked", chunked, NULL, false},
        {"allreduce-naive", allreduce_naive, NULL, false},
        {"allreduce-ring", allreduce_ring, NULL, false},
    };
    static const int ranks[] = {2, 4};
    static const uint64_t sizes[] = {8, 100 * KiB, 1 * MiB};
    int runs = 0;
    for (size_t p = 0; p < sizeof all / sizeof all[0]; p++)
        for (size_t k = 0; k < 2; k++)
            for (size_t b = 0; b < 3; b++) {
                if (all[p].eager_only && sizes[b] > 64 * KiB)
                    continue;
                cl_args a = {.microbatches = 3, .fix = all[p].fix};
                setup s = {.check = true};
                run r;
                run_pattern(&r, all[p].fn, ranks[k], sizes[b], &a, &s);
                if (r.res.status)
                    fail_msg("%s on %d ranks, %llu bytes: %s (%s)", all[p].name, ranks[k],
                             (unsigned long long)sizes[b], r.res.diag.msg,
                             cl_errname(r.res.status));
                assert_int_equal(r.res.iters, 2);
                run_release(&r);
                runs++;
            }
    assert_int_equal(runs, 10 * 2 * 3 + 2);
    assert_no_children();
}

/* Relay over 4 processes: the last rank prints what arrived, once. */
static void test_relay_prints(void **state)
{
    (void)state;
    run r;
    setup s = {.iters = 3};
    run_pattern(&r, relay, 4, 1 * MiB, NULL, &s);
    assert_int_equal(r.res.status, 0);
    assert_string_equal(r.out, "rank 3: the value after 3 hops is 30\n");
    assert_string_equal(r.err, "");
    run_release(&r);
}

/* Messages to oneself (eager and rendezvous, expected and unexpected) and
 * a wildcard receive that takes them from every rank, oneself included. */
static int self_and_any(cl_comm *c, const cl_args *a)
{
    int me = cl_rank(c), n = cl_size(c);
    unsigned char *out = cl_alloc(c, a->bytes), *in = cl_alloc(c, a->bytes);
    cl_fill(c, out, a->bytes, 700 + (unsigned long long)me);
    cl_request *r;
    CL_TRY(cl_isend(c, out, a->bytes, me, 3, &r)); /* before its receive: unexpected */
    CL_TRY(cl_recv(c, in, a->bytes, me, 3, NULL));
    CL_TRY(cl_wait(c, &r, NULL));
    CL_TRY(cl_verify(c, in, a->bytes, 700 + (unsigned long long)me, "self, unexpected"));
    CL_TRY(cl_irecv(c, in, a->bytes, me, 4, &r)); /* receive first: expected */
    CL_TRY(cl_send(c, out, a->bytes, me, 4));
    CL_TRY(cl_wait(c, &r, NULL));
    CL_TRY(cl_verify(c, in, a->bytes, 700 + (unsigned long long)me, "self, expected"));
    /* Everyone sends rank 0 a small message; rank 0 takes them as they come. */
    unsigned char x = (unsigned char)(me + 1);
    CL_TRY(cl_isend(c, &x, 1, 0, 5, &r));
    if (me == 0) {
        int seen = 0;
        for (int i = 0; i < n; i++) {
            unsigned char y = 0;
            cl_status st;
            CL_TRY(cl_recv(c, &y, 1, CL_ANY_SOURCE, 5, &st));
            if (y != st.source + 1 || st.bytes != 1 || (seen & (1 << st.source)))
                return cl_fail(c, "wildcard receive %d: %d from rank %d", i, y, st.source);
            seen |= 1 << st.source;
        }
    }
    return cl_wait(c, &r, NULL);
}

static void test_self_and_any_source(void **state)
{
    (void)state;
    static const uint64_t sizes[] = {0, 100, 1 * MiB};
    for (size_t i = 0; i < 3; i++) {
        run r;
        setup s = {.check = true};
        run_pattern(&r, self_and_any, 3, sizes[i], NULL, &s);
        if (r.res.status)
            fail_msg("%llu bytes: %s", (unsigned long long)sizes[i], r.res.diag.msg);
        run_release(&r);
    }
}

/* ---- deadlock ---- */

static void test_deadlock(void **state)
{
    (void)state;
    run r;
    setup s = {.deadlock_timeout = 0.2};
    run_pattern(&r, deadlock, 2, 1 * MiB, NULL, &s);
    assert_int_equal(r.res.status, CL_EDEADLOCK);
    assert_contains(r.report, "rank 0: blocked in send(dst=1, tag=0, 1 MiB)\n");
    assert_contains(r.report, "rank 1: blocked in send(dst=0, tag=0, 1 MiB)\n");
    assert_contains(r.report, "cycle: rank 0 -> rank 1 -> rank 0\n");
    assert_contains(r.report, "above the eager limit (64 KiB)");
    assert_contains(r.res.diag.msg, "deadlock");
    run_release(&r);
    assert_no_children();

    run_pattern(&r, deadlock, 2, 1 * KiB, NULL, &s);
    assert_int_equal(r.res.status, 0);
    assert_string_equal(r.report, "");
    run_release(&r);

    /* The limit decides: 1 MiB is eager under a 2 MiB limit. */
    setup big = {.deadlock_timeout = 0.2, .eager_limit = 2 * MiB};
    run_pattern(&r, deadlock, 2, 1 * MiB, NULL, &big);
    assert_int_equal(r.res.status, 0);
    run_release(&r);
}

static int orphan_recv(cl_comm *c, const cl_args *a)
{
    (void)a;
    if (cl_rank(c) == 0)
        return cl_recv(c, NULL, 0, 1, 5, NULL);
    return 0;
}

/* Rank 0 polls with cl_test for a message nobody sends: as stuck as a
 * blocking wait, and reported the same way. */
static int poll_forever(cl_comm *c, const cl_args *a)
{
    (void)a;
    if (cl_rank(c) != 0)
        return 0;
    cl_request *req;
    CL_TRY(cl_irecv(c, NULL, 0, 1, 5, &req));
    for (bool done = false; !done;)
        CL_TRY(cl_test(c, &req, &done, NULL));
    return 0;
}

static void test_polling_deadlock(void **state)
{
    (void)state;
    run r;
    setup s = {.deadlock_timeout = 0.2};
    run_pattern(&r, poll_forever, 2, 0, NULL, &s);
    assert_int_equal(r.res.status, CL_EDEADLOCK);
    assert_contains(r.report, "rank 0: blocked in ");
    assert_contains(r.report, "src=1, tag=5");
    run_release(&r);
    assert_no_children();
}

static void test_recv_nobody_sends(void **state)
{
    (void)state;
    run r;
    setup s = {.deadlock_timeout = 0.2};
    run_pattern(&r, orphan_recv, 2, 0, NULL, &s);
    assert_int_equal(r.res.status, CL_EDEADLOCK);
    assert_contains(r.report, "rank 0: blocked in recv(src=1, tag=5, 0 B)\n");
    run_release(&r);
    assert_no_children();
}

/* ---- a receive buffer too small ---- */

static int too_small(cl_comm *c, const cl_args *a)
{
    char *buf = cl_alloc(c, a->bytes);
    if (cl_rank(c) == 0)
        return cl_send(c, buf, a->bytes, 1, 0);
    return cl_recv(c, buf, 1024, 0, 0, NULL);
}

/* The message (or its request to send) is already there when the receive
 * comes: rank 1 posts it after a barrier rank 0 enters after sending. */
static int too_small_late(cl_comm *c, const cl_args *a)
{
    char *buf = cl_alloc(c, a->bytes);
    if (cl_rank(c) == 0) {
        cl_request *req;
        CL_TRY(cl_isend(c, buf, a->bytes, 1, 0, &req));
        int err = cl_barrier(c);
        int werr = cl_wait(c, &req, NULL);
        return err ? err : werr;
    }
    CL_TRY(cl_barrier(c));
    return cl_recv(c, buf, 1024, 0, 0, NULL);
}

static void expect_trunc(cl_pattern_fn *fn, uint64_t bytes)
{
    run r;
    run_pattern(&r, fn, 2, bytes, NULL, NULL);
    if (r.res.status != CL_ETRUNC)
        fail_msg("%llu bytes into 1 KiB: status %s, want CL_ETRUNC: %s",
                 (unsigned long long)bytes, cl_errname(r.res.status), r.res.diag.msg);
    assert_contains(r.res.diag.msg, "rank 1");
    assert_contains(r.res.diag.msg, "from rank 0");
    assert_contains(r.res.diag.msg, "1 KiB");
    assert_contains(r.res.diag.msg, bytes == 4096 ? "4 KiB" : "1 MiB");
    run_release(&r);
    assert_no_children();
}

static void test_truncation(void **state)
{
    (void)state;
    expect_trunc(too_small, 4096);          /* eager */
    expect_trunc(too_small, 1 * MiB);       /* rendezvous */
    expect_trunc(too_small_late, 4096);     /* eager, unexpected */
    expect_trunc(too_small_late, 1 * MiB);  /* rendezvous, unexpected */
}

/* ---- ranks and connections that go away ---- */

static int suicide(cl_comm *c, const cl_args *a)
{
    char x = 0;
    if (cl_rank(c) == 1) {
        if (a->iteration == 0)
            raise(SIGKILL);
        return cl_send(c, &x, 1, 0, 0);
    }
    return cl_rank(c) == 0 ? cl_recv(c, &x, 1, 1, 0, NULL) : 0;
}

static void test_rank_killed(void **state)
{
    (void)state;
    for (int n = 2; n <= 4; n += 2) {
        run r;
        run_pattern(&r, suicide, n, 0, NULL, NULL);
        if (r.res.status != CL_EPEER)
            fail_msg("%d ranks: status %s, want CL_EPEER: %s\nreport: %s", n,
                     cl_errname(r.res.status), r.res.diag.msg, r.report);
        assert_contains(r.res.diag.msg, "rank 1");
        assert_int_equal(r.res.signal, 0);
        run_release(&r);
        assert_no_children();
    }
}

/* Closes every socket of this process: its connections drop, yet the
 * process lives on (and the launcher never sees it fail). */
static void close_sockets(void)
{
    for (int fd = 3; fd < 1024; fd++) {
        struct stat st;
        if (fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode))
            close(fd);
    }
}

/* Rank 1 asks to send 1 MiB; rank 0's receive matches and waits for the
 * data, but rank 1's connections drop and it computes on, never sending. */
static int drop_mid_message(cl_comm *c, const cl_args *a)
{
    unsigned char *buf = cl_alloc(c, a->bytes);
    if (cl_rank(c) == 0)
        return cl_recv(c, buf, a->bytes, 1, 0, NULL);
    if (a->iteration < 0)
        return cl_send(c, buf, a->bytes, 0, 0);
    cl_request *r;
    CL_TRY(cl_isend(c, buf, a->bytes, 0, 0, &r)); /* the request to send is written */
    close_sockets();
    return cl_compute(c, 60.0);
}

static void test_connection_lost(void **state)
{
    (void)state;
    run r;
    run_pattern(&r, drop_mid_message, 2, 1 * MiB, NULL, NULL);
    if (r.res.status != CL_EPEER)
        fail_msg("status %s, want CL_EPEER: %s", cl_errname(r.res.status), r.res.diag.msg);
    assert_contains(r.res.diag.msg, "rank 0: ");
    assert_contains(r.res.diag.msg, "connection to rank 1 lost in the middle of a message: ");
    run_release(&r);
    assert_no_children();
}

/* ---- strangers at the door ---- */

/* Where rank 1 listens, found the way an outsider would (ss -tn): rank 0's
 * one connected TCP socket leads to it, since the lower rank connects. */
static bool peer_listener(struct sockaddr_storage *sa, socklen_t *len)
{
    for (int fd = 3; fd < 1024; fd++) {
        int v = 0;
        socklen_t l = sizeof v;
        if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &l) < 0 || v)
            continue;
        *len = sizeof *sa;
        if (getpeername(fd, (struct sockaddr *)sa, len) == 0 &&
            (sa->ss_family == AF_INET || sa->ss_family == AF_INET6))
            return true;
    }
    return false;
}

static int stranger(const struct sockaddr_storage *sa, socklen_t len)
{
    int fd = socket(sa->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (const struct sockaddr *)sa, len) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Whether the rank closes fd within 5 s (bounded: a refusal that never
 * comes fails the test instead of hanging it). */
static bool refused(int fd)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        int left = 5000 - (int)((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        if (left <= 0 || poll(&pf, 1, left) <= 0)
            return false;
        char buf[256];
        ssize_t n = recv(fd, buf, sizeof buf, 0); /* the challenge, then the end */
        if (n == 0 || (n < 0 && errno == ECONNRESET))
            return true;
        if (n < 0)
            return false;
    }
}

/* A handshake answer as the protocol frames it (48-byte big-endian header:
 * magic "CLTP", version 1, kind 17 = RESPONSE, source rank, tag, ctx, a zero
 * word, length, two words; the second names the rank asked for), followed
 * by a nonce and a MAC made without the secret. */
static size_t fake_response(unsigned char *out, uint32_t src, uint64_t len)
{
    memset(out, 0, 48 + 64);
    memcpy(out, "CLTP", 4);
    out[4] = 1;
    out[5] = 17;
    for (int i = 0; i < 4; i++)
        out[8 + i] = (unsigned char)(src >> (24 - 8 * i));
    for (int i = 0; i < 8; i++)
        out[24 + i] = (unsigned char)(len >> (56 - 8 * i));
    out[47] = 1; /* rank 1, the one asked for */
    for (int i = 48; i < 48 + 64; i++)
        out[i] = (unsigned char)(i * 37);
    return 48 + 64;
}

/* Rank 0, in the first timed iteration, plays six strangers at rank 1's
 * door while rank 1 waits in a receive: garbage, an HTTP request, a right-
 * looking answer with a MAC made without the secret, an impossible rank, a
 * length above the limit, and silence.  Each must be shut out; then the
 * run goes on with a checked message. */
static int strangers(cl_comm *c, const cl_args *a)
{
    unsigned char *buf = cl_alloc(c, a->bytes);
    char go = 1;
    if (cl_rank(c) == 1) {
        CL_TRY(cl_recv(c, &go, 1, 0, 0, NULL));
        CL_TRY(cl_recv(c, buf, a->bytes, 0, 1, NULL));
        return cl_verify(c, buf, a->bytes, 42, "after the strangers");
    }
    if (a->iteration == 0) {
        struct sockaddr_storage sa;
        socklen_t len;
        if (!peer_listener(&sa, &len))
            return cl_fail(c, "no connection to rank 1 found");
        int silent = stranger(&sa, len);
        if (silent < 0)
            return cl_fail(c, "cannot connect to rank 1: %s", strerror(errno));
        static const char http[] = "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";
        unsigned char garbage[64], wrong_key[112], bad_rank[112], too_long[112];
        memset(garbage, 0x5a, sizeof garbage);
        const struct {
            const char *what;
            const void *data;
            size_t len;
        } visits[5] = {
            {"garbage", garbage, sizeof garbage},
            {"an HTTP request", http, sizeof http - 1},
            {"a MAC made without the secret", wrong_key, fake_response(wrong_key, 0, 64)},
            {"rank 7", bad_rank, fake_response(bad_rank, 7, 64)},
            {"a huge length", too_long, fake_response(too_long, 0, 1ULL << 40)},
        };
        for (int i = 0; i < 5; i++) {
            int fd = stranger(&sa, len);
            if (fd < 0)
                return cl_fail(c, "%s: cannot connect: %s", visits[i].what, strerror(errno));
            send(fd, visits[i].data, visits[i].len, MSG_NOSIGNAL);
            bool ok = refused(fd);
            close(fd);
            if (!ok)
                return cl_fail(c, "a stranger sending %s was not shut out", visits[i].what);
        }
        bool ok = refused(silent); /* after the 2 s a stranger gets */
        close(silent);
        if (!ok)
            return cl_fail(c, "a silent stranger was not shut out");
    }
    CL_TRY(cl_send(c, &go, 1, 1, 0));
    cl_fill(c, buf, a->bytes, 42);
    return cl_send(c, buf, a->bytes, 1, 1);
}

static void test_strangers(void **state)
{
    (void)state;
    run r;
    setup s = {.iters = 1, .check = true};
    run_pattern(&r, strangers, 2, 1 * MiB, NULL, &s);
    if (r.res.status)
        fail_msg("%s (%s)", r.res.diag.msg, cl_errname(r.res.status));
    /* Six refusals, logged once. */
    assert_int_equal(count_of(r.err, "refused a connection"), 1);
    assert_contains(r.err, "commlab: rank 1: refused a connection from 127.0.0.1:");
    assert_contains(r.err, ": bad magic\n");
    run_release(&r);
    assert_no_children();
}

/* ---- where ranks listen ---- */

static bool ipv6_loopback(void)
{
    int fd = socket(AF_INET6, SOCK_STREAM, 0);
    struct sockaddr_in6 sa = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    bool ok = fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    if (fd >= 0)
        close(fd);
    return ok;
}

static void test_listen(void **state)
{
    (void)state;
    const char *good[] = {"127.0.0.1", "0.0.0.0", "::1"};
    for (size_t i = 0; i < 3; i++) {
        if (strchr(good[i], ':') && !ipv6_loopback())
            continue;
        run r;
        setup s = {.listen = good[i], .check = true};
        run_pattern(&r, ring, 3, 100 * KiB, NULL, &s);
        if (r.res.status)
            fail_msg("--listen %s: %s", good[i], r.res.diag.msg);
        run_release(&r);
    }
    /* Refused before any rank is forked. */
    const char *bad[] = {"localhost:80", "192.0.2.1"};
    for (size_t i = 0; i < 2; i++) {
        run r;
        setup s = {.listen = bad[i]};
        assert_int_equal(try_pattern(&r, ring, 2, 8, NULL, &s), CL_EINVAL);
        assert_contains(r.res.diag.msg, bad[i]);
        run_release(&r);
    }
    assert_no_children();
}

/* ---- what a run gathers ---- */

static const cl_record *find_send(const rec_log *log, uint64_t msg)
{
    for (size_t k = 0; k < log->n; k++)
        if (log->v[k].op == REC_SEND && log->v[k].msg == msg)
            return &log->v[k];
    return NULL;
}

/* Ping-pong's records, eager and rendezvous: only the pattern's messages,
 * blocking, every send paired with exactly one receive by its message id,
 * posted <= started <= finished (record.h). */
static void test_records(void **state)
{
    (void)state;
    static const uint64_t sizes[] = {1 * KiB, 1 * MiB};
    for (size_t z = 0; z < 2; z++) {
        rec_log log;
        rec_log_init(&log, 0);
        setup s = {.records = &log, .iters = 3, .warmup = 1};
        run r;
        run_pattern(&r, pingpong, 2, sizes[z], NULL, &s);
        assert_int_equal(r.res.status, 0);
        assert_int_equal(log.dropped, 0);
        size_t sends = 0, recvs = 0, iters = 0;
        for (size_t i = 0; i < log.n; i++) {
            const cl_record *x = &log.v[i];
            char what[160];
            snprintf(what, sizeof what, "%llu bytes: record %zu (rank %d: %s, peer %d, iter %d, "
                     "%llu bytes)", (unsigned long long)sizes[z], i, x->rank,
                     rec_op_name(x->op, x->blocking), x->peer, x->iter,
                     (unsigned long long)x->bytes);
            if (!(x->posted >= 0 && x->posted <= x->started && x->started <= x->finished))
                fail_msg("%s: posted %.9f, started %.9f, finished %.9f", what, x->posted,
                         x->started, x->finished);
            if (x->op == REC_ITER)
                iters++;
            if (x->op != REC_SEND && x->op != REC_RECV)
                continue;
            if (x->bytes != sizes[z] || !x->blocking || x->peer != 1 - x->rank || x->tag != 0)
                fail_msg("%s: not one of the pattern's blocking messages", what);
            if (x->op == REC_RECV) {
                const cl_record *snd = find_send(&log, x->msg);
                if (!snd || snd->rank != x->peer || snd->peer != x->rank)
                    fail_msg("%s: no matching send with msg %llu", what,
                             (unsigned long long)x->msg);
                recvs++;
                continue;
            }
            sends++;
            size_t paired = 0;
            for (size_t k = 0; k < log.n; k++)
                paired += log.v[k].op == REC_RECV && log.v[k].msg == x->msg;
            if (paired != 1)
                fail_msg("%s: %zu receive records have its msg id", what, paired);
        }
        assert_int_equal(iters, 2 * 4);
        assert_int_equal(sends, 2 * 4);
        assert_int_equal(recvs, 2 * 4);
        rec_log_release(&log);
        run_release(&r);
    }
}

static void test_iteration_times(void **state)
{
    (void)state;
    run r;
    setup s = {.iters = 5, .warmup = 2};
    run_pattern(&r, ring, 4, 64 * KiB, NULL, &s);
    assert_int_equal(r.res.status, 0);
    for (int i = 0; i < 5; i++)
        if (!(r.res.iter_time[i] > 0) || !isfinite(r.res.iter_time[i]))
            fail_msg("iter_time[%d] = %g", i, r.res.iter_time[i]);
    assert_int_equal(r.res.messages, 4 * 7);
    assert_int_equal(r.res.bytes, 4 * 7 * 64 * KiB);
    run_release(&r);
}

/* A data check that fails on tcp fails the run the same way as on shm. */
static int liar(cl_comm *c, const cl_args *a)
{
    unsigned char *buf = cl_alloc(c, a->bytes);
    if (cl_rank(c) == 0) {
        cl_fill(c, buf, a->bytes, 1);
        if (cl_checking(c))
            buf[3] ^= 0xff;
        return cl_send(c, buf, a->bytes, 1, 0);
    }
    CL_TRY(cl_recv(c, buf, a->bytes, 0, 0, NULL));
    return cl_verify(c, buf, a->bytes, 1, "received");
}

static void test_check_fails(void **state)
{
    (void)state;
    static const uint64_t sizes[] = {64, 1 * MiB};
    for (size_t i = 0; i < 2; i++) {
        run r;
        run_pattern(&r, liar, 2, sizes[i], NULL, NULL);
        assert_int_equal(r.res.status, CL_ECHECK);
        assert_contains(r.res.diag.msg, "rank 1: data check failed: received: byte 3 of ");
        run_release(&r);
        assert_no_children();
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_patterns_check_data), cmocka_unit_test(test_relay_prints),
        cmocka_unit_test(test_self_and_any_source), cmocka_unit_test(test_deadlock),
        cmocka_unit_test(test_recv_nobody_sends),   cmocka_unit_test(test_polling_deadlock),
        cmocka_unit_test(test_truncation),
        cmocka_unit_test(test_rank_killed),         cmocka_unit_test(test_connection_lost),
        cmocka_unit_test(test_strangers),           cmocka_unit_test(test_listen),
        cmocka_unit_test(test_records),             cmocka_unit_test(test_iteration_times),
        cmocka_unit_test(test_check_fails),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
