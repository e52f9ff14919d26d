/* test_netlab.c - the namespaces of --netlab: refused without root or with
 * bad arguments, built and entered as the launcher does it (a forked child
 * enters, the test process stays), gone after netlab_destroy, and the
 * leftovers of a dead launcher reaped.  The tests that build need root and
 * a kernel with namespaces, veth, bridge and tbf: skipped without them.
 * The measured side (rates, incast) is tests/cli/test_netlab.sh's. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "commlab.h"
#include "tests/testutil.h"
#include "real/launch.h"
#include "real/netlab.h"

cl_pattern_fn ring;

static bool ns_exists(pid_t pid, const char *what)
{
    char path[128];
    struct stat st;
    snprintf(path, sizeof path, NETLAB_NETNS_DIR "/clnl-%ld-%s", (long)pid, what);
    return stat(path, &st) == 0;
}

/* A netlab of n ranks, or NULL when this machine cannot make one (the
 * test is then skipped by the caller). */
static netlab *lab_or_skip(int n)
{
    if (geteuid() != 0)
        return NULL;
    netlab *nl = NULL;
    cl_diag d = {{0}};
    int err = netlab_create(&nl, n, 125e6, &d);
    if (err == CL_ENOSYS) {
        fprintf(stderr, "skip: %s\n", d.msg);
        return NULL;
    }
    if (err)
        fail_msg("netlab_create: %s (%s)", cl_errname(err), d.msg);
    return nl;
}

/* Binds a TCP socket to addr, port 0: 0 or the errno. */
static int bind_to(const char *addr)
{
    struct sockaddr_in sa = {.sin_family = AF_INET};
    if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
        return EINVAL;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return errno;
    int rc = bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 ? errno : 0;
    close(fd);
    return rc;
}

/* A port's burst: a millisecond at its rate, never below 16 KiB (an
 * MTU-sized frame and its headers must fit). */
static void test_burst(void **state)
{
    (void)state;
    assert_near(netlab_burst(125e6), 125000, 0);   /* 1 Gbit/s */
    assert_near(netlab_burst(3.125e9), 3125000, 0); /* 25 Gbit/s */
    assert_near(netlab_burst(12.5e6), 16384, 0);   /* 100 Mbit/s: the floor */
}

static void test_bad_args(void **state)
{
    (void)state;
    netlab *nl = (netlab *)&nl; /* set to NULL on failure */
    cl_diag d = {{0}};
    assert_int_equal(netlab_create(&nl, 0, 125e6, &d), CL_EINVAL);
    assert_null(nl);
    assert_string_equal(d.msg, "--netlab runs 1 to 253 ranks, got 0");
    assert_int_equal(netlab_create(&nl, NETLAB_MAX_RANKS + 1, 125e6, &d), CL_EINVAL);
    assert_int_equal(netlab_create(&nl, 2, 0, &d), CL_EINVAL);
    assert_int_equal(netlab_create(&nl, 2, 999, NULL), CL_EINVAL);
    assert_null(nl);
}

/* Without root: CL_ENOSYS and the one sentence the CLI prints (as root,
 * checked in a child that gives root up). */
static void test_not_root(void **state)
{
    (void)state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (geteuid() == 0 && (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534)))
            _exit(3);
        netlab *nl = NULL;
        cl_diag d = {{0}};
        int err = netlab_create(&nl, 2, 125e6, &d);
        _exit(err == CL_ENOSYS && !nl &&
                      strcmp(d.msg, "--netlab needs root to create network namespaces (run as "
                                    "root or without --netlab)") == 0
                  ? 0
                  : 1);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

/* Built: a namespace per rank and the hub; a forked child that enters
 * rank 1's owns 169.254.100.2 (and loopback), the test process does not;
 * destroyed: every name is gone. */
static void test_build_enter_destroy(void **state)
{
    (void)state;
    netlab *nl = lab_or_skip(2);
    if (!nl) {
        skip();
        return;
    }
    pid_t me = getpid();
    assert_true(ns_exists(me, "hub") && ns_exists(me, "0") && ns_exists(me, "1"));
    assert_string_equal(netlab_addr(nl, 0), "169.254.100.1");
    assert_string_equal(netlab_addr(nl, 1), "169.254.100.2");
    assert_near(netlab_rate(nl), 125e6, 0);
    assert_int_equal(netlab_ports(nl), 2);
    assert_int_equal(bind_to("169.254.100.2"), EADDRNOTAVAIL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        cl_diag d = {{0}};
        if (netlab_enter(nl, 1, &d))
            _exit(2);
        _exit(bind_to("169.254.100.2") == 0 && bind_to("127.0.0.1") == 0 &&
                      bind_to("169.254.100.1") == EADDRNOTAVAIL
                  ? 0
                  : 1);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    netlab_destroy(nl);
    assert_false(ns_exists(me, "hub") || ns_exists(me, "0") || ns_exists(me, "1"));
    netlab_destroy(NULL);
}

/* real_run takes a netlab only for a transport whose ranks talk over IP
 * (real_transport.over_netlab: tcp), in a local run, with a port a rank;
 * it refuses the rest before forking anything. */
static void test_run_refuses(void **state)
{
    (void)state;
    netlab *nl = lab_or_skip(2);
    if (!nl) {
        skip();
        return;
    }
    static const struct {
        const char *backend;
        int ranks;
        const char *listen, *says;
    } bad[] = {
        {"shm", 2, NULL, "not with shm"},
        {"tcp", 2, "127.0.0.1", "not with --listen"},
        {"tcp", 3, NULL, "3 ranks on a netlab of 2 ports"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        real_opts o = {.job = {.fn = ring, .nranks = bad[i].ranks, .iters = 1,
                               .eager_limit = 65536},
                       .backend = bad[i].backend, .tcp = {.listen = bad[i].listen, .netlab = nl}};
        run_result res;
        assert_int_equal(real_run(&o, &res), CL_EINVAL);
        if (!strstr(res.diag.msg, bad[i].says))
            fail_msg("%s, %d ranks: '%s' lacks '%s'", bad[i].backend, bad[i].ranks,
                     res.diag.msg, bad[i].says);
        run_result_release(&res);
    }
    netlab_destroy(nl);
}

/* A launcher killed outright leaves clnl-PID-*: the next netlab deletes
 * them once PID is gone, and leaves a live launcher's alone. */
static void test_reap_stale(void **state)
{
    (void)state;
    netlab *probe = lab_or_skip(1);
    if (!probe) {
        skip();
        return;
    }
    netlab_destroy(probe);
    pid_t dead = fork();
    assert_true(dead >= 0);
    if (dead == 0)
        _exit(0);
    assert_int_equal(waitpid(dead, NULL, 0), dead);
    pid_t live = getppid(); /* runs, and is not this test */
    char cmd[160];
    snprintf(cmd, sizeof cmd, "ip netns add clnl-%ld-hub && ip netns add clnl-%ld-0 && "
             "ip netns add clnl-%ld-hub", (long)dead, (long)dead, (long)live);
    assert_int_equal(system(cmd), 0);
    netlab *nl = lab_or_skip(1);
    assert_non_null(nl);
    bool dead_left = ns_exists(dead, "hub") || ns_exists(dead, "0");
    bool live_left = ns_exists(live, "hub");
    snprintf(cmd, sizeof cmd, "ip netns del clnl-%ld-hub", (long)live);
    assert_int_equal(system(cmd), 0);
    netlab_destroy(nl);
    assert_false(dead_left);
    assert_true(live_left);
}

int main(void)
{
    const struct CMUnitTest tests[] = {   cmocka_unit_test(test_burst),
        cmocka_unit_test(test_bad_args),
        cmocka_unit_test(test_not_root),   cmocka_unit_test(test_build_enter_destroy),
        cmocka_unit_test(test_reap_stale), cmocka_unit_test(test_run_refuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
