/* real_cases.h - the end-to-end cases every real backend must pass, run
 * through real_run(): every pattern's data check on real processes,
 * deadlock reports, truncated receives, a rank that dies, failed checks and
 * failed calls, and the records and times a run gathers.
 *
 * Not a header of a module: test_shm.c and test_tcp.c each include it once,
 * after defining
 *     REAL_BACKEND      the backend's name ("shm", "tcp");
 *     REAL_COPIES       the --shm-copy modes to run the data and truncation
 *                       cases under, an initializer ({SHM_COPY_AUTO} where
 *                       the backend has no such choice);
 *     REAL_KILL_SIGNAL  1 when a killed rank's run must name its signal;
 *     REAL_OPTS_EXTRA   (optional) more real_opts fields, ".rdma.provider = p,";
 * and list REAL_CASES in their cmocka group beside their own tests.
 *
 * Nothing here depends on timing: a deadlock is reported once every rank has
 * been blocked with no progress for the timeout, which a run that is merely
 * slow never is; every other check is about what happened, not when.  (A
 * two-minute alarm per run only turns a hang into a failure.) */
#ifndef TESTS_REAL_CASES_H
#define TESTS_REAL_CASES_H

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "commlab.h"
#include "core/pattern.h"
#include "core/record.h"
#include "real/launch.h"
#include "real/rank.h"
#include "tests/testutil.h"

cl_pattern_fn relay, pingpong, ring, exchange, deadlock, pipeline, chunked, allreduce_naive,
    allreduce_ring;

#define KiB 1024ULL
#define MiB (1024ULL * 1024ULL)

static const shm_copy real_copies[] = REAL_COPIES;
#define NCOPIES (sizeof real_copies / sizeof real_copies[0])
#ifndef REAL_OPTS_EXTRA
#define REAL_OPTS_EXTRA
#endif
static const char *const copy_name[] = {"auto", "cma", "staging"};

typedef struct run {
    run_result res;
    char *out, *err, *report; /* the ranks' stdout and stderr, the launcher's reports */
} run;

typedef struct setup {
    int iters;            /* default 2 */
    int warmup;           /* default 1; -1 for none */
    uint64_t eager_limit; /* default 64 KiB */
    bool check;
    bool bind;
    shm_copy copy;           /* shm */
    const char *listen;      /* tcp */
    double deadlock_timeout; /* default 5 s: long, so only a real deadlock reports */
    rec_log *records;
    run_sync sync;           /* default: the window way */
    cache_mode cache;        /* default: fresh */
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

/* Runs fn on n ranks; what the ranks write to fd 1 and 2 and the reports
 * are kept in r.  Returns real_run's own return value. */
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
    /* The ranks print with write(1) and write(2): point both at files. */
    fflush(stdout);
    fflush(stderr);
    int saved_out = dup(STDOUT_FILENO), saved_err = dup(STDERR_FILENO);
    assert_true(saved_out >= 0 && saved_err >= 0);
    assert_true(dup2(fileno(out), STDOUT_FILENO) >= 0);
    assert_true(dup2(fileno(err), STDERR_FILENO) >= 0);
    real_opts o = {
        .job = {.fn = fn, .args = extra ? *extra : (cl_args){.microbatches = 3}, .nranks = n,
                .warmup = s->warmup < 0 ? 0 : s->warmup ? s->warmup : 1,
                .iters = s->iters ? s->iters : 2,
                .eager_limit = s->eager_limit ? s->eager_limit : 64 * KiB, .payload = true,
                .check = s->check, .sync = s->sync, .cache = s->cache, .records = s->records,
                .report = rep},
        .backend = REAL_BACKEND, .bind = s->bind, .shm.copy = s->copy, .tcp.listen = s->listen,
        .deadlock_timeout = s->deadlock_timeout > 0 ? s->deadlock_timeout : 5.0,
        .warn = NULL, REAL_OPTS_EXTRA
    };
    o.job.args.bytes = (size_t)bytes;
    /* A run that hangs (a deadlock not detected) fails the test instead of
     * hanging it: SIGALRM ends this process, and the ranks die with it. */
    alarm(120);
    int rc = real_run(&o, &r->res);
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
    run_result_release(&r->res);
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
            for (size_t b = 0; b < 3; b++)
                for (size_t c = 0; c < NCOPIES; c++) {
                    if (all[p].eager_only && sizes[b] > 64 * KiB)
                        continue;
                    cl_args a = {.microbatches = 3, .fix = all[p].fix};
                    setup s = {.check = true, .copy = real_copies[c]};
                    run r;
                    run_pattern(&r, all[p].fn, ranks[k], sizes[b], &a, &s);
                    if (r.res.status)
                        fail_msg("%s on %d ranks, %llu bytes, --shm-copy %s: %s (%s)",
                                 all[p].name, ranks[k], (unsigned long long)sizes[b],
                                 copy_name[real_copies[c]], r.res.diag.msg,
                                 cl_errname(r.res.status));
                    assert_int_equal(r.res.iters, 2);
                    run_release(&r);
                    runs++;
                }
    assert_int_equal(runs, (10 * 2 * 3 + 2 * 1) * NCOPIES);
    assert_no_children();
}

/* Every algorithm of every collective of chapter 04 checks its data on
 * processes: odd and even rank counts, a size that splits unevenly into
 * blocks and one above the eager limit, and the hierarchical all-reduce in
 * groups of 2 (uneven on 3 ranks). */
static void test_collectives_check_data(void **state)
{
    (void)state;
    static const int ranks[] = {3, 4};
    static const uint64_t sizes[] = {13, 100003};
    const pattern_info *p;
    int runs = 0;
    for (size_t i = 0; (p = pattern_at(i)) != NULL; i++) {
        if (!p->collective)
            continue;
        for (size_t k = 0; k < 2; k++)
            for (size_t b = 0; b < 2; b++) {
                cl_args a = {.group = 2};
                setup s = {.check = true, .warmup = -1, .iters = 1};
                run r;
                run_pattern(&r, p->fn, ranks[k], sizes[b], &a, &s);
                if (r.res.status)
                    fail_msg("%s on %d ranks, %llu bytes: %s (%s)", p->name, ranks[k],
                             (unsigned long long)sizes[b], r.res.diag.msg,
                             cl_errname(r.res.status));
                run_release(&r);
                runs++;
            }
    }
    assert_int_equal(runs, 22 * 2 * 2);
    assert_no_children();
}

/* Relay over 4 processes: the last rank prints what arrived, once (only
 * the first timed iteration prints), and nothing goes to stderr. */
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

    /* A failed run keeps its records: the trace shows the stall. */
    rec_log log;
    rec_log_init(&log, 0);
    setup traced = {.deadlock_timeout = 0.2, .records = &log};
    run_pattern(&r, deadlock, 2, 1 * MiB, NULL, &traced);
    assert_int_equal(r.res.status, CL_EDEADLOCK);
    size_t barriers = 0;
    for (size_t i = 0; i < log.n; i++)
        barriers += log.v[i].op == REC_BARRIER;
    assert_int_equal(barriers, 2); /* each rank's, before the warm-up */
    rec_log_release(&log);
    run_release(&r);

    /* No deadlock: the default timeout (5 s), so that a rank a loaded
     * machine leaves unscheduled for a while is not taken for one. */
    run_pattern(&r, deadlock, 2, 1 * KiB, NULL, NULL);
    assert_int_equal(r.res.status, 0);
    assert_string_equal(r.report, "");
    run_release(&r);

    /* The limit decides: 1 MiB is eager under a 2 MiB limit. */
    setup big = {.eager_limit = 2 * MiB};
    run_pattern(&r, deadlock, 2, 1 * MiB, NULL, &big);
    assert_int_equal(r.res.status, 0);
    run_release(&r);
}

/* Rank 0 waits for a message rank 1 never sends; rank 1 waits in the
 * closing barrier. */
static int orphan_recv(cl_comm *c, const cl_args *a)
{
    (void)a;
    if (cl_rank(c) == 0)
        return cl_recv(c, NULL, 0, 1, 5, NULL);
    return 0;
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

/* ---- a receive buffer too small ---- */

/* Rank 0 sends a->bytes, rank 1 receives into 1 KiB, as soon as it can. */
static int too_small(cl_comm *c, const cl_args *a)
{
    char *buf = cl_alloc(c, a->bytes);
    if (cl_rank(c) == 0)
        return cl_send(c, buf, a->bytes, 1, 0);
    return cl_recv(c, buf, 1024, 0, 0, NULL);
}

/* The same, but rank 1 posts its receive only after a barrier that rank 0
 * enters after sending: the message (or its request to send) is already
 * there, unexpected, when the receive comes. */
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

static void expect_trunc(cl_pattern_fn *fn, uint64_t bytes, shm_copy copy)
{
    run r;
    setup s = {.copy = copy};
    run_pattern(&r, fn, 2, bytes, NULL, &s);
    if (r.res.status != CL_ETRUNC)
        fail_msg("%llu bytes into 1 KiB, --shm-copy %s: status %s, want CL_ETRUNC: %s",
                 (unsigned long long)bytes, copy_name[copy], cl_errname(r.res.status),
                 r.res.diag.msg);
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
    expect_trunc(too_small, 4096, SHM_COPY_AUTO);          /* eager */
    for (size_t c = 0; c < NCOPIES; c++)
        expect_trunc(too_small, 1 * MiB, real_copies[c]);  /* rendezvous */
    expect_trunc(too_small_late, 4096, SHM_COPY_AUTO);     /* eager, unexpected */
    for (size_t c = 0; c < NCOPIES; c++)                   /* rendezvous, unexpected */
        expect_trunc(too_small_late, 1 * MiB, real_copies[c]);
}

/* ---- a rank that dies ---- */

/* Rank 1 is killed in the first timed iteration while rank 0 waits for it. */
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
        if (REAL_KILL_SIGNAL)
            assert_contains(r.res.diag.msg, "SIGKILL");
        assert_int_equal(r.res.signal, 0);
        run_release(&r);
        assert_no_children();
    }
}

/* ---- what a pattern forks ends with the run ---- */

static int forked_pid_fd = -1; /* the write end of a pipe rank 0 reports its child on */

/* Rank 0 forks once (in its first iteration) a child that would wait for
 * ever, holding the rank's descriptors (tcp: its listening socket). */
static int forker(cl_comm *c, const cl_args *a)
{
    (void)a;
    static bool forked; /* per rank process */
    if (cl_rank(c) == 0 && !forked) {
        forked = true;
        pid_t pid = fork();
        if (pid < 0)
            return cl_fail(c, "fork: %s", strerror(errno));
        if (pid == 0)
            for (;;)
                pause();
        if (write(forked_pid_fd, &pid, sizeof pid) != sizeof pid)
            return cl_fail(c, "write: %s", strerror(errno));
    }
    return cl_barrier(c);
}

/* The child is gone after the run: the launcher killed the rank's process
 * group.  This process adopts the orphan (a subreaper) so that it can wait
 * for it; the wait is bounded only to turn a leak into a failure. */
static void test_forked_child_ends_with_run(void **state)
{
    (void)state;
    int p[2];
    assert_int_equal(pipe(p), 0);
    forked_pid_fd = p[1];
    assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    run r;
    run_pattern(&r, forker, 2, 8, NULL, NULL);
    close(p[1]);
    if (r.res.status)
        fail_msg("status %s: %s", cl_errname(r.res.status), r.res.diag.msg);
    run_release(&r);
    pid_t kid = 0;
    assert_int_equal(read(p[0], &kid, sizeof kid), sizeof kid);
    close(p[0]);
    int st = 0;
    pid_t got = 0;
    for (int tries = 0; tries < 1000 && got == 0; tries++) {
        got = waitpid(kid, &st, WNOHANG);
        if (got == 0)
            nanosleep(&(struct timespec){0, 10000000L}, NULL);
    }
    prctl(PR_SET_CHILD_SUBREAPER, 0);
    if (got != kid) {
        kill(kid, SIGKILL);
        waitpid(kid, NULL, 0);
        fail_msg("the pattern's child (pid %d) outlived the run by 10 s", (int)kid);
    }
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGKILL);
    assert_no_children();
}

/* ---- failed data checks and failed calls ---- */

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

/* An empty message sent from NULL (cl_send allows it) into a receive with a
 * buffer passes --check: the sum of no bytes is the same on both sides. */
static int empty_send(cl_comm *c, const cl_args *a)
{
    (void)a;
    char buf[8];
    cl_status st = {0};
    if (cl_rank(c) == 0)
        return cl_send(c, NULL, 0, 1, 5);
    CL_TRY(cl_recv(c, buf, sizeof buf, 0, 5, &st));
    return st.bytes == 0 ? 0 : cl_fail(c, "an empty message arrived as %zu bytes", st.bytes);
}

/* fn on two ranks runs to the end without an error, leaving no process. */
static void expect_clean_run(cl_pattern_fn *fn, uint64_t bytes, const setup *s)
{
    run r;
    run_pattern(&r, fn, 2, bytes, NULL, s);
    if (r.res.status)
        fail_msg("%s", r.res.diag.msg);
    run_release(&r);
    assert_no_children();
}

static void test_empty_checked(void **state)
{
    (void)state;
    setup s = {.check = true};
    expect_clean_run(empty_send, 8, &s);
}

/* cl_alloc's alignment (commlab.h): a line below a page, a page from a
 * page up, in every iteration, whose blocks are the last one's where they
 * are large enough: the first asks for a byte less than a page where the
 * next asks for a page. */
static int aligned_blocks(cl_comm *c, const cl_args *a)
{
    (void)a;
    static int calls; /* per rank: each is a process */
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    size_t sizes[] = {1, 100, page - 1, page, 64 * KiB + 8, 3 * page + 1};
    if (calls++ == 0)
        sizes[3] = page - 1;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        uintptr_t at = (uintptr_t)cl_alloc(c, sizes[i]);
        uintptr_t want = sizes[i] >= page ? page : 64;
        if (!at || at % want)
            return cl_fail(c, "a %zu-byte block at %#lx, not on a %lu-byte boundary", sizes[i],
                           (unsigned long)at, (unsigned long)want);
    }
    return 0;
}

static void test_alloc_aligned(void **state)
{
    (void)state;
    expect_clean_run(aligned_blocks, 0, NULL);
}

/* ---- --cache: the harness prepares every block ---- */

/* Three blocks of whole pages (so their sizes are what cl_alloc keeps),
 * one sent to the other rank.  From the second iteration on, the harness
 * must have prepared all three before this one (the first has none yet):
 * their every line for fresh and cold, none for warm.  Each rank is a
 * process whose rank state begins with its real_rank (real/rank.h). */
static int cache_blocks(cl_comm *c, const cl_args *a)
{
    static int calls; /* per rank: each is a process */
    const real_rank *r = (const real_rank *)c;
    size_t page = (size_t)sysconf(_SC_PAGESIZE), sizes[] = {page, 2 * page, a->bytes};
    size_t lines = 0;
    for (size_t i = 0; i < 3; i++)
        lines += sizes[i] / 64;
    cache_mode mode = r->run.job->cache;
    size_t want = calls++ == 0 || mode == CACHE_WARM ||
                  (mode == CACHE_COLD && !cache_cold_supported()) ? 0 : lines;
    if (r->cache_lines != want)
        return cl_fail(c, "iteration %d, --cache %s: %zu lines prepared before it, want %zu",
                       a->iteration, cache_mode_name(mode), r->cache_lines, want);
    unsigned char *small = cl_alloc(c, sizes[0]), *mid = cl_alloc(c, sizes[1]),
                  *big = cl_alloc(c, sizes[2]);
    if (!small || !mid)
        return CL_ENOMEM;
    if (cl_rank(c) == 0)
        return cl_send(c, big, a->bytes, 1, 0);
    return cl_recv(c, big, a->bytes, 0, 0, NULL);
}

static void test_cache_every_block(void **state)
{
    (void)state;
    static const cache_mode modes[] = {CACHE_FRESH, CACHE_WARM, CACHE_COLD};
    for (size_t m = 0; m < 3; m++) {
        run r;
        setup s = {.cache = modes[m], .iters = 3};
        run_pattern(&r, cache_blocks, 2, 1 * MiB, NULL, &s);
        if (r.res.status)
            fail_msg("--cache %s: %s", cache_mode_name(modes[m]), r.res.diag.msg);
        run_release(&r);
    }
    assert_no_children();
}

/* Preparing the blocks changes no byte: every course pattern of chapter
 * 02 checks its data in each mode, its checks on the warm-up and the
 * first timed iteration and on every one (--check). */
static void test_cache_keeps_data(void **state)
{
    (void)state;
    static const cache_mode modes[] = {CACHE_FRESH, CACHE_WARM, CACHE_COLD};
    cl_pattern_fn *fns[] = {relay, pingpong, ring, exchange, pipeline, chunked,
                            allreduce_ring};
    for (size_t m = 0; m < 3; m++)
        for (size_t p = 0; p < sizeof fns / sizeof fns[0]; p++)
            for (int check = 0; check < 2; check++) {
                run r;
                cl_args a = {.microbatches = 3};
                setup s = {.cache = modes[m], .check = check, .iters = 3};
                run_pattern(&r, fns[p], 2, 1 * MiB, &a, &s);
                if (r.res.status)
                    fail_msg("pattern %zu, --cache %s, check %d: %s", p,
                             cache_mode_name(modes[m]), check, r.res.diag.msg);
                run_release(&r);
            }
    assert_no_children();
}

/* Rank 1 sends to a rank that does not exist and returns the error. */
static int bad_peer(cl_comm *c, const cl_args *a)
{
    (void)a;
    char x = 0;
    if (cl_rank(c) == 1)
        return cl_send(c, &x, 1, 7, 0);
    return 0;
}

static void test_pattern_error(void **state)
{
    (void)state;
    run r;
    run_pattern(&r, bad_peer, 2, 0, NULL, NULL);
    assert_int_equal(r.res.status, CL_EINVAL);
    assert_contains(r.res.diag.msg, "rank 1");
    assert_contains(r.res.diag.msg, "CL_EINVAL");
    run_release(&r);
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

/* Ping-pong's records, eager and rendezvous: both ranks', only the
 * pattern's messages, blocking, every send paired with exactly one receive
 * by its message id, posted <= started <= finished (record.h). */
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
        assert_true(log.n > 0);
        assert_int_equal(log.dropped, 0);
        size_t user_sends = 0, user_recvs = 0, per_rank[2] = {0, 0}, iters[2] = {0, 0};
        for (size_t i = 0; i < log.n; i++) {
            const cl_record *x = &log.v[i];
            char what[160];
            snprintf(what, sizeof what, "%llu bytes: record %zu (rank %d: %s, peer %d, iter %d, "
                     "%llu bytes)", (unsigned long long)sizes[z], i, x->rank,
                     rec_op_name(x->op, x->blocking), x->peer, x->iter,
                     (unsigned long long)x->bytes);
            if (x->rank != 0 && x->rank != 1)
                fail_msg("%s: no such rank", what);
            per_rank[x->rank]++;
            if (!isfinite(x->posted) || !isfinite(x->started) || !isfinite(x->finished) ||
                x->posted < 0)
                fail_msg("%s: times %g %g %g", what, x->posted, x->started, x->finished);
            /* record.h: posted <= started <= finished, for every record
             * (a receive whose message came first starts when posted). */
            if (!(x->posted <= x->started && x->started <= x->finished))
                fail_msg("%s: posted %.9f, started %.9f, finished %.9f", what, x->posted,
                         x->started, x->finished);
            if (x->iter < -1 || x->iter > 2)
                fail_msg("%s: iteration out of range", what);
            if (x->op == REC_ITER)
                iters[x->rank]++;
            if (x->op != REC_SEND && x->op != REC_RECV)
                continue;
            /* Only the pattern's messages (the barrier's own show only as
             * its span); pingpong only calls cl_send and cl_recv: blocking
             * records, also when the operation completes inside the post. */
            if (x->bytes != sizes[z] || !x->blocking || x->peer != 1 - x->rank || x->tag != 0)
                fail_msg("%s: not one of the pattern's blocking messages", what);
            if (x->op == REC_RECV) {
                const cl_record *snd = find_send(&log, x->msg);
                if (!snd || snd->rank != x->peer || snd->peer != x->rank)
                    fail_msg("%s: no matching send with msg %llu", what,
                             (unsigned long long)x->msg);
                user_recvs++;
                continue;
            }
            user_sends++;
            assert_true(x->msg != 0);
            size_t recvs = 0;
            for (size_t k = 0; k < log.n; k++)
                if (log.v[k].op == REC_RECV && log.v[k].msg == x->msg) {
                    recvs++;
                    assert_int_equal(log.v[k].rank, x->peer);
                    assert_int_equal(log.v[k].peer, x->rank);
                    assert_int_equal(log.v[k].bytes, x->bytes);
                    assert_int_equal(log.v[k].tag, x->tag);
                }
            if (recvs != 1)
                fail_msg("%s: %zu receive records have its msg id %llu", what, recvs,
                         (unsigned long long)x->msg);
        }
        assert_true(per_rank[0] > 0);
        assert_true(per_rank[1] > 0);
        /* One iteration record per rank and iteration, warm-up included;
         * a round trip (two messages) in each. */
        assert_int_equal(iters[0], 4);
        assert_int_equal(iters[1], 4);
        assert_int_equal(user_sends, 2 * 4);
        assert_int_equal(user_recvs, 2 * 4);
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
    assert_int_equal(r.res.iters, 5);
    assert_non_null(r.res.iter_time);
    for (int i = 0; i < 5; i++)
        if (!(r.res.iter_time[i] > 0) || !isfinite(r.res.iter_time[i]))
            fail_msg("iter_time[%d] = %g", i, r.res.iter_time[i]);
    /* Ring: every rank sends one message per iteration, 7 iterations. */
    assert_int_equal(r.res.messages, 4 * 7);
    run_release(&r);
}

/* Every rank computes for 1 ms: nothing else. */
static int compute_1ms(cl_comm *c, const cl_args *a)
{
    (void)a;
    return cl_compute(c, 1e-3);
}

/* The iteration time measured is core/run.h's definition, both ways,
 * checked against the ranks' REC_ITER records (each rank's start and end
 * on the one clock the ranks of a launcher share).  The barrier way: the
 * largest of the ranks' own times, as modeled (test_run.c).  The window
 * way: the latest end minus the earliest start, and the start skew the
 * latest start minus the earliest.  Checked for equality (to rounding),
 * not for speed. */
static void check_definition(run_sync way)
{
    rec_log log;
    rec_log_init(&log, 1u << 16);
    setup s = {.iters = 3, .records = &log, .sync = way};
    run r;
    run_pattern(&r, compute_1ms, 3, 8, NULL, &s);
    assert_int_equal(r.res.status, 0);
    assert_int_equal(r.res.skewed, way == RUN_SYNC_WINDOW);
    for (int i = 0; i < 3; i++) {
        double longest = 0, first = INFINITY, last = -INFINITY, end = -INFINITY;
        int seen = 0;
        for (size_t k = 0; k < log.n; k++) {
            const cl_record *x = &log.v[k];
            if (x->op == REC_ITER && x->iter == i) {
                seen++;
                longest = fmax(longest, x->finished - x->started);
                first = fmin(first, x->started);
                last = fmax(last, x->started);
                end = fmax(end, x->finished);
            }
        }
        assert_int_equal(seen, 3);
        double want = way == RUN_SYNC_WINDOW ? end - first : longest;
        if (fabs(r.res.iter_time[i] - want) > 1e-12)
            fail_msg("iteration %d (%s way): %.9g s, the definition says %.9g s", i,
                     run_sync_name(way), r.res.iter_time[i], want);
        if (way == RUN_SYNC_WINDOW && fabs(r.res.start_skew[i] - (last - first)) > 1e-12)
            fail_msg("iteration %d: start skew %.9g s, the records' starts span %.9g s", i,
                     r.res.start_skew[i], last - first);
        assert_true(r.res.iter_time[i] >= 1e-3); /* cl_compute busy-waits 1 ms at least */
    }
    rec_log_release(&log);
    run_release(&r);
}

static void test_iteration_definition(void **state)
{
    (void)state;
    check_definition(RUN_SYNC_BARRIER);
    check_definition(RUN_SYNC_WINDOW);
}

/* One rank computes 20 ms, the others nothing: the pattern's true time
 * is the 20 ms (cl_compute busy-waits at least that long).  The window
 * way times it from the common start, so it comes to 20 ms plus how much
 * later than the earliest that rank started, with the start skew
 * measured, and every rank's start is the release or later.  The bound
 * is wide on purpose (a loaded 2-core machine can take a rank off its
 * core for milliseconds): the time is at least the 20 ms and less than
 * 20 ms plus the iteration's start skew plus 200 ms. */
static int compute_rank0_20ms(cl_comm *c, const cl_args *a)
{
    (void)a;
    return cl_rank(c) == 0 ? cl_compute(c, 20e-3) : 0;
}

static void test_window_known_time(void **state)
{
    (void)state;
    setup s = {.iters = 4};
    run r;
    run_pattern(&r, compute_rank0_20ms, 3, 8, NULL, &s);
    assert_int_equal(r.res.status, 0);
    assert_true(r.res.skewed);
    for (int i = 0; i < 4; i++) {
        double t = r.res.iter_time[i], skew = r.res.start_skew[i];
        if (!(skew >= 0 && t >= 20e-3 && t < 20e-3 + skew + 0.2))
            fail_msg("iteration %d: %.9g s with a start skew of %.9g s; the pattern takes 20 ms",
                     i, t, skew);
    }
    run_release(&r);
}

/* Bad options are refused before anything is forked. */
static void test_bad_opts(void **state)
{
    (void)state;
    run_result res;
    real_opts o = {.job = {.fn = pingpong, .nranks = 2, .iters = 1},
                   .backend = "carrier-pigeon"};
    assert_int_equal(real_run(&o, &res), CL_EINVAL);
    assert_contains(res.diag.msg, "carrier-pigeon");
    run_result_release(&res);
    o.backend = REAL_BACKEND;
    o.job.iters = 0;
    assert_int_equal(real_run(&o, &res), CL_EINVAL);
    run_result_release(&res);
    assert_no_children();
}

/* The cases above, for a cmocka group. */
#define REAL_CASES                                                                      \
    cmocka_unit_test(test_patterns_check_data), cmocka_unit_test(test_relay_prints),    \
        cmocka_unit_test(test_collectives_check_data),                                  \
        cmocka_unit_test(test_deadlock), cmocka_unit_test(test_recv_nobody_sends),      \
        cmocka_unit_test(test_polling_deadlock), cmocka_unit_test(test_truncation),     \
        cmocka_unit_test(test_rank_killed), cmocka_unit_test(test_forked_child_ends_with_run), \
        cmocka_unit_test(test_check_fails), cmocka_unit_test(test_empty_checked),        \
        cmocka_unit_test(test_alloc_aligned), cmocka_unit_test(test_cache_every_block), \
        cmocka_unit_test(test_cache_keeps_data),                                        \
        cmocka_unit_test(test_pattern_error), cmocka_unit_test(test_records),           \
        cmocka_unit_test(test_iteration_times), cmocka_unit_test(test_iteration_definition), \
        cmocka_unit_test(test_window_known_time),                                       \
        cmocka_unit_test(test_bad_opts)

#endif
