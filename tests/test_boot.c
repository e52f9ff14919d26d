/* test_boot.c - a process's world from the command line and launchers'
 * environments (real/world.c), and the rendezvous that joins processes
 * started elsewhere (real/boot.c): who is let in, who is refused, and that
 * a stranger at the door does not stop the world from joining. */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

#include "commlab.h"
#include "real/boot.h"
#include "real/world.h"

/* ---- a fake environment ---- */

static const char *const *fake_env; /* "NAME=value" pairs, NULL-terminated */

static const char *fake_getenv(const char *name)
{
    size_t n = strlen(name);
    for (const char *const *e = fake_env; *e; e++)
        if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
            return *e + n + 1;
    return NULL;
}

/* The secret comes as the command line takes it out of the environment. */
static int detect(real_world *w, const world_args *a, const char *const *env, cl_diag *d)
{
    fake_env = env;
    world_args with = *a;
    with.secret = fake_getenv("COMMLAB_SECRET");
    return world_detect(w, &with, fake_getenv, d);
}

static const world_args no_args = {.rank = -1, .world = -1};

static void test_no_world(void **state)
{
    (void)state;
    real_world w;
    cl_diag d = {{0}};
    const char *const env[] = {"HOME=/root", NULL};
    assert_int_equal(detect(&w, &no_args, env, &d), 0);
    assert_int_equal(w.size, 0);
    /* A batch script's own shell under Slurm is no srun step. */
    const char *const batch[] = {"SLURM_PROCID=0", "SLURM_NTASKS=4", "SLURM_JOB_ID=7", NULL};
    assert_int_equal(detect(&w, &no_args, batch, &d), 0);
    assert_int_equal(w.size, 0);
}

static void test_torchrun(void **state)
{
    (void)state;
    real_world w;
    cl_diag d = {{0}};
    const char *const env[] = {"RANK=3", "WORLD_SIZE=4", "MASTER_ADDR=10.0.0.1",
                               "MASTER_PORT=29500", "COMMLAB_SECRET=0123456789abcdefXYZ",
                               "LOCAL_RANK=1", NULL};
    assert_int_equal(detect(&w, &no_args, env, &d), 0);
    assert_int_equal(w.rank, 3);
    assert_int_equal(w.size, 4);
    assert_int_equal(w.local_rank, 1);
    assert_int_equal(w.rdv, WORLD_RDV_TCP);
    assert_string_equal(w.master_host, "10.0.0.1");
    assert_string_equal(w.master_port, "29500");
    assert_true(w.have_secret);
    world_release(&w);
}

static void test_across_hosts_needs_a_secret(void **state)
{
    (void)state;
    real_world w;
    cl_diag d = {{0}};
    const char *const env[] = {"RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=10.0.0.1",
                               "MASTER_PORT=29500", NULL};
    assert_int_equal(detect(&w, &no_args, env, &d), CL_EINVAL);
    assert_non_null(strstr(d.msg, "COMMLAB_SECRET"));
    const char *const short_secret[] = {"RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=10.0.0.1",
                                        "MASTER_PORT=29500", "COMMLAB_SECRET=short", NULL};
    assert_int_equal(detect(&w, &no_args, short_secret, &d), CL_EINVAL);
    assert_non_null(strstr(d.msg, "at least 16"));
    /* On loopback with no secret: a private local socket named after the port. */
    const char *const local[] = {"RANK=1", "WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1",
                                 "MASTER_PORT=29500", NULL};
    assert_int_equal(detect(&w, &no_args, local, &d), 0);
    assert_int_equal(w.rdv, WORLD_RDV_UNIX);
    assert_non_null(strstr(w.unix_path, "port-29500"));
}

static void test_open_mpi_one_host(void **state)
{
    (void)state;
    real_world w;
    cl_diag d = {{0}};
    const char *const env[] = {"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2",
                               "OMPI_COMM_WORLD_LOCAL_SIZE=2", "OMPI_COMM_WORLD_LOCAL_RANK=1",
                               "OMPI_MCA_ess_base_jobid=1955921921", NULL};
    assert_int_equal(detect(&w, &no_args, env, &d), 0);
    assert_int_equal(w.rank, 1);
    assert_int_equal(w.size, 2);
    assert_int_equal(w.rdv, WORLD_RDV_UNIX);
    assert_non_null(strstr(w.unix_path, "1955921921"));
    assert_non_null(strstr(w.source, "Open MPI"));
    /* Over two hosts, nothing says where rank 0 is. */
    const char *const two[] = {"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=4",
                               "OMPI_COMM_WORLD_LOCAL_SIZE=2",
                               "OMPI_MCA_ess_base_jobid=1955921921", NULL};
    assert_int_equal(detect(&w, &no_args, two, &d), CL_EINVAL);
    assert_non_null(strstr(d.msg, "MASTER_ADDR"));
}

static void test_slurm_and_pmi(void **state)
{
    (void)state;
    real_world w;
    cl_diag d = {{0}};
    const char *const slurm[] = {"SLURM_PROCID=2", "SLURM_NTASKS=3", "SLURM_STEP_ID=0",
                                 "SLURM_JOB_ID=42", "SLURM_STEP_NUM_NODES=1", NULL};
    assert_int_equal(detect(&w, &no_args, slurm, &d), 0);
    assert_int_equal(w.rank, 2);
    assert_int_equal(w.size, 3);
    assert_non_null(strstr(w.unix_path, "42.0"));
    const char *const pmi[] = {"PMI_RANK=0", "PMI_SIZE=2", "MASTER_ADDR=127.0.0.1",
                               "MASTER_PORT=4000", NULL};
    assert_int_equal(detect(&w, &no_args, pmi, &d), 0);
    assert_non_null(strstr(w.source, "PMI"));
}

static void test_bad_values(void **state)
{
    (void)state;
    real_world w;
    cl_diag d = {{0}};
    const char *const cases[][6] = {
        {"RANK=2", "WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=1", NULL},
        {"RANK=x", "WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=1", NULL},
        {"RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=99999", NULL},
        {"RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1", NULL},
        {"RANK=0", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=1", NULL},
    };
    const char *want[] = {"outside a world", "RANK must be", "MASTER_PORT must be", "MASTER_PORT",
                          "WORLD_SIZE"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        d.msg[0] = '\0';
        assert_int_equal(detect(&w, &no_args, cases[i], &d), CL_EINVAL);
        if (!strstr(d.msg, want[i]))
            fail_msg("case %zu: '%s' lacks '%s'", i, d.msg, want[i]);
    }
    world_args half = {.rank = 1, .world = -1};
    const char *const none[] = {NULL};
    assert_int_equal(detect(&w, &half, none, &d), CL_EINVAL);
    assert_non_null(strstr(d.msg, "go together"));
    world_args bad_master = {.rank = 0, .world = 2, .master = "nocolon"};
    assert_int_equal(detect(&w, &bad_master, none, &d), CL_EINVAL);
    /* The command line wins over the environment. */
    world_args cli = {.rank = 1, .world = 3, .master = "[::1]:5000"};
    const char *const env[] = {"RANK=0", "WORLD_SIZE=2", NULL};
    assert_int_equal(detect(&w, &cli, env, &d), 0);
    assert_int_equal(w.rank, 1);
    assert_int_equal(w.size, 3);
    assert_string_equal(w.master_host, "::1");
}

/* ---- the rendezvous ---- */

#define SECRET "a-test-secret-of-enough-length"

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    bind(fd, (struct sockaddr *)&a, sizeof a);
    getsockname(fd, (struct sockaddr *)&a, &len);
    close(fd);
    return ntohs(a.sin_port);
}

static void make_world(real_world *w, int rank, int size, int port, const char *secret)
{
    char master[32];
    snprintf(master, sizeof master, "127.0.0.1:%d", port);
    world_args a = {.rank = rank, .world = size, .master = master, .join_timeout = 10};
    char env_secret[80];
    snprintf(env_secret, sizeof env_secret, "COMMLAB_SECRET=%s", secret);
    const char *const env[] = {env_secret, NULL};
    const char *const none[] = {NULL};
    cl_diag d = {{0}};
    assert_int_equal(detect(w, &a, secret ? env : none, &d), 0);
}

/* A child process joins as rank `rank`; its exit status says how it went:
 * 0 joined with the master's secret, 1 refused, 2 something else. */
static pid_t join_child(int rank, int size, int port, const char *secret,
                        const unsigned char *digest)
{
    pid_t pid = fork();
    if (pid)
        return pid;
    real_world w;
    make_world(&w, rank, size, port, secret);
    boot *b;
    cl_diag d = {{0}};
    int err = boot_open(&b, &w, digest, &d);
    if (err) {
        fprintf(stderr, "child rank %d: %s\n", rank, d.msg);
        _exit(strstr(d.msg, "refused") || strstr(d.msg, "COMMLAB_SECRET") ? 1 : 2);
    }
    boot_close(b);
    _exit(0);
}

static int child_status(pid_t pid)
{
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 100;
}

static int connect_to(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    for (int tries = 0; tries < 200; tries++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0)
            return fd;
        close(fd);
        struct timespec ts = {0, 10000000L};
        nanosleep(&ts, NULL);
    }
    return -1;
}

/* The master waits in a child; strangers knock one after the other
 * (garbage, an HTTP request, silence) and each is shut out; then two real
 * ranks join and the master's boot_open succeeds. */
static void test_join_past_strangers(void **state)
{
    (void)state;
    int port = free_port();
    unsigned char digest[AUTH_HASH_BYTES] = {1, 2, 3};
    real_world w;
    make_world(&w, 0, 3, port, SECRET);
    pid_t master = fork();
    if (master == 0) {
        boot *b;
        cl_diag d = {{0}};
        int err = boot_open(&b, &w, digest, &d);
        if (err)
            fprintf(stderr, "master: %s\n", d.msg);
        else if (strcmp(boot_listen_addr(b), "127.0.0.1") != 0 || boot_size(b) != 3)
            err = 1;
        boot_close(b);
        _exit(err ? 2 : 0);
    }
    static const char *const visits[] = {"\x7f\x01garbage garbage garbage garbage",
                                         "GET / HTTP/1.1\r\nHost: x\r\n\r\n", ""};
    for (size_t i = 0; i < 3; i++) {
        int fd = connect_to(port);
        assert_true(fd >= 0);
        if (visits[i][0])
            send(fd, visits[i], strlen(visits[i]), MSG_NOSIGNAL);
        /* Shut out: the challenge, then the end (silence: after 2 s). */
        char buf[256];
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        ssize_t n = 1;
        while (n > 0 && poll(&pf, 1, 5000) > 0)
            n = recv(fd, buf, sizeof buf, 0);
        if (n != 0 && !(n < 0 && errno == ECONNRESET))
            fail_msg("stranger %zu was not shut out (%zd, %s)", i, n, strerror(errno));
        close(fd);
    }
    pid_t r1 = join_child(1, 3, port, SECRET, digest);
    pid_t r2 = join_child(2, 3, port, SECRET, digest);
    assert_int_equal(child_status(r1), 0);
    assert_int_equal(child_status(r2), 0);
    assert_int_equal(child_status(master), 0);
    world_release(&w);
}

/* A rank with another secret is refused and told so; the right one then
 * joins and the run goes on. */
static void test_wrong_secret_refused(void **state)
{
    (void)state;
    int port = free_port();
    unsigned char digest[AUTH_HASH_BYTES] = {9};
    pid_t liar = join_child(1, 2, port, "not-the-secret-at-all", digest);
    real_world w;
    make_world(&w, 0, 2, port, SECRET);
    /* The master refuses the liar, then waits: the right rank 1 comes after. */
    pid_t master = fork();
    if (master == 0) {
        boot *b;
        cl_diag d = {{0}};
        _exit(boot_open(&b, &w, digest, &d) ? 2 : (boot_close(b), 0));
    }
    assert_int_equal(child_status(liar), 1);
    pid_t honest = join_child(1, 2, port, SECRET, digest);
    assert_int_equal(child_status(honest), 0);
    assert_int_equal(child_status(master), 0);
    world_release(&w);
}

/* Processes started with other options are refused, with the reason. */
static void test_other_options_refused(void **state)
{
    (void)state;
    int port = free_port();
    unsigned char mine[AUTH_HASH_BYTES] = {1}, theirs[AUTH_HASH_BYTES] = {2};
    pid_t r1 = join_child(1, 2, port, SECRET, theirs);
    real_world w;
    make_world(&w, 0, 2, port, SECRET);
    boot *b;
    cl_diag d = {{0}};
    assert_int_equal(boot_open(&b, &w, mine, &d), CL_EINVAL);
    assert_non_null(strstr(d.msg, "other options"));
    assert_int_equal(child_status(r1), 1);
    world_release(&w);
}

/* Nobody comes: the master gives up after the join timeout, naming who. */
static void test_join_timeout(void **state)
{
    (void)state;
    real_world w;
    make_world(&w, 0, 2, free_port(), SECRET);
    w.join_timeout = 0.3;
    boot *b;
    cl_diag d = {{0}};
    assert_int_equal(boot_open(&b, &w, (const unsigned char[AUTH_HASH_BYTES]){0}, &d),
                     CL_ETIMEOUT);
    assert_non_null(strstr(d.msg, "rank 1 did not"));
    world_release(&w);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_world),
        cmocka_unit_test(test_torchrun),
        cmocka_unit_test(test_across_hosts_needs_a_secret),
        cmocka_unit_test(test_open_mpi_one_host),
        cmocka_unit_test(test_slurm_and_pmi),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_join_past_strangers),
        cmocka_unit_test(test_wrong_secret_refused),
        cmocka_unit_test(test_other_options_refused),
        cmocka_unit_test(test_join_timeout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
