/* test_fault.c - a simulated rank that crashes, calls exit(), runs off its
 * stack or never yields fails its run with a report naming the rank and
 * the call it was in; the tool, and the next run, go on (sim/fault.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/simcase.h"

/* The faults are meant: no sanitizer may report them first. */
#define RAW __attribute__((noinline, no_sanitize("address", "undefined")))

static int *volatile nowhere; /* NULL, read afresh: no compiler sees through it */

static RAW void write_nowhere(void)
{
    *nowhere = 1;
}

static int segv(cl_comm *c, const cl_args *a)
{
    (void)a;
    if (cl_rank(c) == 1)
        write_nowhere();
    return cl_barrier(c);
}

static int aborts(cl_comm *c, const cl_args *a)
{
    (void)a;
    if (cl_rank(c) == 1)
        abort();
    return cl_barrier(c);
}

static int exits(cl_comm *c, const cl_args *a)
{
    (void)a;
    if (cl_rank(c) == 1)
        exit(3);
    return cl_barrier(c);
}

static int underscore_exits(cl_comm *c, const cl_args *a)
{
    (void)a;
    if (cl_rank(c) == 0)
        _exit(0);
    return cl_barrier(c);
}

/* Rank 0 sends from an address nothing is mapped at: the copy inside
 * cl_send faults, and the report says so. */
static int bad_send_buffer(cl_comm *c, const cl_args *a)
{
    (void)a;
    char buf[64];
    if (cl_rank(c) == 0)
        return cl_send(c, (const void *)(uintptr_t)16, sizeof buf, 1, 0);
    return cl_recv(c, buf, sizeof buf, 0, 0, NULL);
}

/* Rank 1 writes n bytes from its block of 1000: past its end when n > 1000. */
static RAW void fill(unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)i;
}

/* 4 KiB past the block's end: into the guard page behind it. */
static int overruns(cl_comm *c, const cl_args *a)
{
    (void)a;
    unsigned char *keep = cl_alloc(c, 64), *p = cl_alloc(c, 1000);
    if (cl_rank(c) == 1 && keep && p)
        fill(p, 1000 + 4096);
    return cl_barrier(c);
}

/* 12 bytes past the end: inside the canary, found when the iteration ends. */
static int overruns_near(cl_comm *c, const cl_args *a)
{
    (void)a;
    unsigned char *p = cl_alloc(c, 1000), *keep = cl_alloc(c, 64);
    if (cl_rank(c) == 1 && keep && p)
        fill(p, 1012);
    return cl_barrier(c);
}

/* Rank 0 receives 8 KiB more than its block holds: commlab's copy, made
 * while rank 1 sends, runs past it. */
static int receives_past(cl_comm *c, const cl_args *a)
{
    (void)a;
    unsigned char *p = cl_alloc(c, cl_rank(c) == 0 ? 1024 : 1024 + 8192);
    if (cl_rank(c) == 1)
        return cl_send(c, p, 1024 + 8192, 0, 0);
    return cl_recv(c, p, 1024 + 8192, 1, 0, NULL);
}

/* 512-byte frames, every byte written, until far past a 64 KiB stack. */
static RAW unsigned deep(int depth)
{
    volatile unsigned char frame[512];
    for (size_t i = 0; i < sizeof frame; i++)
        frame[i] = (unsigned char)(depth + (int)i);
    if (depth > 100000)
        return frame[3];
    return deep(depth + 1) + frame[depth % 512];
}

static int overflows(cl_comm *c, const cl_args *a)
{
    (void)a;
    if (cl_rank(c) == 1 && deep(0) == 12345)
        return CL_ECHECK;
    return cl_barrier(c);
}

/* Rank 1 loops without calling commlab; rank 0 waits for it for ever. */
static int spins(cl_comm *c, const cl_args *a)
{
    (void)a;
    int x = 0;
    if (cl_rank(c) == 1)
        for (volatile unsigned i = 0;; i++)
            ;
    return cl_recv(c, &x, sizeof x, 1, 0, NULL);
}

/* Every rank keeps computing: virtual time moves, the run never ends. */
static int forever(cl_comm *c, const cl_args *a)
{
    (void)a;
    for (;;) {
        int err = cl_compute(c, 1e-6);
        if (err)
            return err;
    }
}

/* A child process a rank forks is not a rank: its _exit() is its own (not
 * exit(): under LeakSanitizer it would report the run's memory). */
static int forks(cl_comm *c, const cl_args *a)
{
    (void)a;
    if (cl_rank(c) == 1) {
        pid_t pid = fork();
        if (pid == 0)
            _exit(5);
        int st = 0;
        if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 5)
            return cl_fail(c, "the child's _exit(5) came back as wait status %d", st);
    }
    return cl_barrier(c);
}

static int fine(cl_comm *c, const cl_args *a)
{
    int x = cl_rank(c);
    if (cl_rank(c) == 0)
        return cl_send(c, &x, sizeof x, 1, a->iteration >= 0 ? 1 : 2);
    return cl_recv(c, &x, sizeof x, 0, CL_ANY_TAG, NULL);
}

static void expect_failure(cl_pattern_fn *fn, double timeout, int status, const char *says)
{
    run r;
    setup s = {.timeout = timeout};
    run_pattern(&r, fn, 2, 64, NULL, &s);
    if (r.res.status != status || !strstr(r.res.diag.msg, says))
        fail_msg("status %s, \"%s\"; want %s with \"%s\"", cl_errname(r.res.status),
                 r.res.diag.msg, cl_errname(status), says);
    run_release(&r);
}

static void test_segv(void **state)
{
    (void)state;
    expect_failure(segv, 0, CL_EPEER,
                   "rank 1 crashed in its own code: signal 11 (SIGSEGV: Segmentation fault at "
                   "address 0x0)");
}

static void test_abort(void **state)
{
    (void)state;
    expect_failure(aborts, 0, CL_EPEER, "rank 1 crashed in its own code: signal 6 (SIGABRT");
}

static void test_exit(void **state)
{
    (void)state;
    expect_failure(exits, 0, CL_EPEER, "rank 1 called exit(3) in its own code");
    expect_failure(underscore_exits, 0, CL_EPEER, "rank 0 called _exit(0) in its own code");
    run r;
    run_pattern(&r, forks, 2, 64, NULL, NULL);
    if (r.res.status)
        fail_msg("%s", r.res.diag.msg);
    run_release(&r);
}

static void test_fault_in_a_call(void **state)
{
    (void)state;
    expect_failure(bad_send_buffer, 0, CL_EPEER,
                   "rank 0 crashed in cl_send: signal 11 (SIGSEGV: Segmentation fault at "
                   "address 0x10)");
}

/* A write past a cl_alloc block names the rank and the block (it used to
 * end the tool with SIGSEGV or glibc's "double free or corruption"). */
static void test_overrun(void **state)
{
    (void)state;
    expect_failure(overruns, 0, CL_EPEER,
                   "rank 1 wrote past the end of its block from cl_alloc #2 (1000 B) in its own "
                   "code: a write to byte 1024 of the 1000-byte block (a SIGSEGV at the guard "
                   "page after it)");
    expect_failure(overruns_near, 0, CL_EPEER,
                   "rank 1 wrote past the end of its block from cl_alloc #1 (1000 B): bytes "
                   "1000..1011 of the 1000-byte block were changed (found when its iteration "
                   "ended)");
    expect_failure(receives_past, 0, CL_EPEER,
                   "rank 0's block from cl_alloc #1 (1 KiB) was written past its end while "
                   "rank 1 ran in cl_send: a write to byte ");
}

static void test_overflow(void **state)
{
    (void)state;
    expect_failure(overflows, 0, CL_ESTACK,
                   "rank 1 overflowed its 64 KiB stack in its own code (raise it with "
                   "--stack-size");
}

static void test_spin(void **state)
{
    (void)state;
    run r;
    setup s = {.timeout = 0.2};
    run_pattern(&r, spins, 2, 64, NULL, &s);
    assert_int_equal(r.res.status, CL_ETIMEOUT);
    assert_non_null(strstr(r.res.diag.msg, "rank 1 made no progress: at --timeout 200 ms it "
                                           "was running in its own code"));
    /* The report shows who waits on whom. */
    assert_non_null(strstr(r.report, "rank 0: blocked in recv(src=1, tag=0, 4 B)"));
    assert_non_null(strstr(r.report, "rank 1: running"));
    run_release(&r);
}

static void test_long_run(void **state)
{
    (void)state;
    expect_failure(forever, 0.2, CL_ETIMEOUT, "the run took longer than --timeout 200 ms, its "
                                              "ranks still making progress (stopped at t = ");
}

/* After each kind of failure the process is whole: the handlers that were
 * there before are back, and a run goes as if nothing had happened. */
static void test_recovers(void **state)
{
    (void)state;
    struct sigaction before[3], after[3];
    const int sigs[3] = {SIGSEGV, SIGABRT, SIGALRM};
    for (int i = 0; i < 3; i++)
        sigaction(sigs[i], NULL, &before[i]);
    cl_pattern_fn *bad[] = {segv, aborts, exits, overflows, spins, overruns, overruns_near};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        run r;
        setup s = {.timeout = 0.2};
        run_pattern(&r, bad[k], 2, 64, NULL, &s);
        assert_int_not_equal(r.res.status, 0);
        run_release(&r);
        run_pattern(&r, fine, 2, 64, NULL, NULL); /* no limit: a loaded machine may be slow */
        assert_int_equal(r.res.status, 0);
        run_release(&r);
    }
    for (int i = 0; i < 3; i++) {
        sigaction(sigs[i], NULL, &after[i]);
        assert_ptr_equal((void *)(uintptr_t)before[i].sa_handler,
                         (void *)(uintptr_t)after[i].sa_handler);
    }
}

/* Outside a run, exit() is libc's: the status and the atexit handlers. */
static void flag_exit(void)
{
    static const char line[] = "atexit ran\n";
    (void)!write(STDOUT_FILENO, line, sizeof line - 1);
}

static void test_exit_outside(void **state)
{
    (void)state;
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fd[1], STDOUT_FILENO);
        atexit(flag_exit);
        exit(7);
    }
    close(fd[1]);
    char buf[64] = "";
    ssize_t n = read(fd[0], buf, sizeof buf - 1);
    close(fd[0]);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 7);
    assert_true(n > 0);
    assert_string_equal(buf, "atexit ran\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_segv),        cmocka_unit_test(test_abort),
        cmocka_unit_test(test_exit),        cmocka_unit_test(test_fault_in_a_call),
        cmocka_unit_test(test_overflow),    cmocka_unit_test(test_spin),
        cmocka_unit_test(test_long_run),    cmocka_unit_test(test_recovers),
        cmocka_unit_test(test_exit_outside), cmocka_unit_test(test_overrun),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
