/* test_boot.c - a process's world from the command line and launchers'
 * environments (real/world.c), and the rendezvous that joins processes
 * started elsewhere (real/boot.c, real/admit.c): who is let in, who is
 * refused, that strangers at the door (one after another, or fifteen idle
 * at once) do not stop the world from joining, the key each job derives,
 * and the Unix rendezvous: its private folder, and another user's process
 * in rank 0's place (as root). */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
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

#define SECRET "a-test-secret-of-enough-length"

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
    assert_non_null(strstr(w.unix_name, "port-29500"));
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
    assert_non_null(strstr(w.unix_name, "1955921921"));
    assert_non_null(strstr(w.source, "Open MPI"));
    /* Over two hosts, nothing says where rank 0 is. */
    const char *const two[] = {"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=4",
                               "OMPI_COMM_WORLD_LOCAL_SIZE=2",
                               "OMPI_MCA_ess_base_jobid=1955921921", NULL};
    assert_int_equal(detect(&w, &no_args, two, &d), CL_EINVAL);
    assert_non_null(strstr(d.msg, "MASTER_ADDR"));
}

/* The key is stretched from COMMLAB_SECRET salted with the launcher's job:
 * the same secret gives one key within a job, another in another job. */
static void test_key_bound_to_job(void **state)
{
    (void)state;
    real_world a, b, c;
    cl_diag d = {{0}};
    const char *const job7[] = {"SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_STEP_ID=0",
                                "SLURM_JOB_ID=7", "MASTER_ADDR=10.0.0.1", "MASTER_PORT=29500",
                                "COMMLAB_SECRET=" SECRET, NULL};
    const char *const job7_rank1[] = {"SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_STEP_ID=0",
                                      "SLURM_JOB_ID=7", "MASTER_ADDR=10.0.0.1",
                                      "MASTER_PORT=29500", "COMMLAB_SECRET=" SECRET, NULL};
    const char *const job8[] = {"SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_STEP_ID=0",
                                "SLURM_JOB_ID=8", "MASTER_ADDR=10.0.0.1", "MASTER_PORT=29500",
                                "COMMLAB_SECRET=" SECRET, NULL};
    assert_int_equal(detect(&a, &no_args, job7, &d), 0);
    assert_int_equal(detect(&b, &no_args, job7_rank1, &d), 0);
    assert_int_equal(detect(&c, &no_args, job8, &d), 0);
    assert_string_equal(a.job_id, "7.0");
    assert_true(memcmp(a.secret, b.secret, AUTH_KEY_BYTES) == 0);
    assert_true(memcmp(a.secret, c.secret, AUTH_KEY_BYTES) != 0);
    world_release(&a);
    world_release(&b);
    world_release(&c);
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
    assert_non_null(strstr(w.unix_name, "42.0"));
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

/* A child process joins w; its exit status says how it went: 0 joined
 * (and, with key_fd >= 0, wrote the job's key there), 1 refused, 2
 * something else. */
static pid_t join_world(const real_world *w, const unsigned char *digest, int key_fd)
{
    pid_t pid = fork();
    if (pid)
        return pid;
    boot *b;
    cl_diag d = {{0}};
    int err = boot_open(&b, w, digest, &d);
    if (err) {
        fprintf(stderr, "child rank %d: %s\n", w->rank, d.msg);
        _exit(strstr(d.msg, "refused") || strstr(d.msg, "COMMLAB_SECRET") ? 1 : 2);
    }
    if (key_fd >= 0 && write(key_fd, boot_secret(b), AUTH_KEY_BYTES) != AUTH_KEY_BYTES)
        _exit(2);
    boot_close(b);
    _exit(0);
}

/* A child process joins as rank `rank` of a TCP rendezvous. */
static pid_t join_child(int rank, int size, int port, const char *secret,
                        const unsigned char *digest)
{
    real_world w;
    make_world(&w, rank, size, port, secret);
    pid_t pid = join_world(&w, digest, -1);
    world_release(&w);
    return pid;
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

/* Fifteen strangers connect and say nothing; the ranks that come after
 * them join well within the join timeout (10 s), although each stranger
 * may keep its connection for 2 s: handshakes run side by side. */
static void test_idle_strangers_do_not_stop_join(void **state)
{
    (void)state;
    int port = free_port();
    unsigned char digest[AUTH_HASH_BYTES] = {4};
    real_world w;
    make_world(&w, 0, 3, port, SECRET);
    pid_t master = join_world(&w, digest, -1);
    int idle[15];
    for (int i = 0; i < 15; i++) {
        idle[i] = connect_to(port);
        assert_true(idle[i] >= 0);
    }
    pid_t r1 = join_child(1, 3, port, SECRET, digest);
    pid_t r2 = join_child(2, 3, port, SECRET, digest);
    assert_int_equal(child_status(r1), 0);
    assert_int_equal(child_status(r2), 0);
    assert_int_equal(child_status(master), 0);
    for (int i = 0; i < 15; i++)
        close(idle[i]);
    world_release(&w);
}

/* Two jobs given one secret: within each, every rank has the same key;
 * the keys of the two differ (rank 0 draws each job's id), so neither
 * job's ranks accept a connection of the other's. */
static void test_two_jobs_one_secret(void **state)
{
    (void)state;
    unsigned char digest[AUTH_HASH_BYTES] = {5};
    unsigned char keys[2][2][AUTH_KEY_BYTES]; /* [job][rank] */
    for (int job = 0; job < 2; job++) {
        int port = free_port(), p[2];
        assert_int_equal(pipe(p), 0);
        real_world w0, w1;
        make_world(&w0, 0, 2, port, SECRET);
        make_world(&w1, 1, 2, port, SECRET);
        pid_t r1 = join_world(&w1, digest, p[1]);
        boot *b;
        cl_diag d = {{0}};
        assert_int_equal(boot_open(&b, &w0, digest, &d), 0);
        memcpy(keys[job][0], boot_secret(b), AUTH_KEY_BYTES);
        assert_int_equal(read(p[0], keys[job][1], AUTH_KEY_BYTES), AUTH_KEY_BYTES);
        assert_int_equal(child_status(r1), 0);
        boot_close(b);
        close(p[0]);
        close(p[1]);
        world_release(&w0);
        world_release(&w1);
    }
    assert_memory_equal(keys[0][0], keys[0][1], AUTH_KEY_BYTES);
    assert_memory_equal(keys[1][0], keys[1][1], AUTH_KEY_BYTES);
    assert_memory_not_equal(keys[0][0], keys[1][0], AUTH_KEY_BYTES);
}

/* ---- the Unix rendezvous: one host, no secret ---- */

static char xdg[64]; /* this test's $XDG_RUNTIME_DIR: the rendezvous folder is in it */

static void make_unix_world(real_world *w, int rank, int size, int port)
{
    if (!xdg[0]) {
        snprintf(xdg, sizeof xdg, "/tmp/commlab-test-boot-XXXXXX");
        assert_non_null(mkdtemp(xdg));
    }
    char master[32], env_xdg[96];
    snprintf(master, sizeof master, "127.0.0.1:%d", port);
    snprintf(env_xdg, sizeof env_xdg, "XDG_RUNTIME_DIR=%s", xdg);
    world_args a = {.rank = rank, .world = size, .master = master, .join_timeout = 10};
    const char *const env[] = {env_xdg, NULL};
    cl_diag d = {{0}};
    assert_int_equal(detect(w, &a, env, &d), 0);
    assert_int_equal(w->rdv, WORLD_RDV_UNIX);
    assert_true(strncmp(w->unix_path, xdg, strlen(xdg)) == 0);
}

static void remove_xdg(void)
{
    if (!xdg[0])
        return;
    char dir[96];
    snprintf(dir, sizeof dir, "%s/commlab", xdg);
    rmdir(dir);
    rmdir(xdg);
}

/* A socket file with nobody behind it, as a rank 0 killed while joining
 * leaves. */
static void leave_stale_socket(const char *dir, const char *path)
{
    mkdir(dir, 0700);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    snprintf(un.sun_path, sizeof un.sun_path, "%s", path);
    assert_int_equal(bind(fd, (struct sockaddr *)&un, sizeof un), 0);
    close(fd);
}

/* Three ranks meet in the private folder (made 0700), over a stale socket
 * file that rank 0 replaces; rank 0's drawn secret reaches every rank; the
 * socket's file is gone once all have joined. */
static void test_unix_rendezvous(void **state)
{
    (void)state;
    unsigned char digest[AUTH_HASH_BYTES] = {6};
    int port = free_port(), p[2];
    real_world w[3];
    for (int r = 0; r < 3; r++)
        make_unix_world(&w[r], r, 3, port);
    leave_stale_socket(w[0].unix_dir, w[0].unix_path);
    assert_int_equal(pipe(p), 0);
    pid_t r1 = join_world(&w[1], digest, p[1]);
    pid_t r2 = join_world(&w[2], digest, p[1]);
    boot *b;
    cl_diag d = {{0}};
    if (boot_open(&b, &w[0], digest, &d))
        fail_msg("rank 0: %s", d.msg);
    for (int i = 0; i < 2; i++) {
        unsigned char key[AUTH_KEY_BYTES];
        assert_int_equal(read(p[0], key, sizeof key), sizeof key);
        assert_memory_equal(key, boot_secret(b), AUTH_KEY_BYTES);
    }
    assert_int_equal(child_status(r1), 0);
    assert_int_equal(child_status(r2), 0);
    struct stat st;
    assert_int_equal(lstat(w[0].unix_dir, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    assert_int_equal(access(w[0].unix_path, F_OK), -1);
    boot_close(b);
    close(p[0]);
    close(p[1]);
}

/* A rendezvous folder open to other users is refused, by either side. */
static void test_unix_folder_checked(void **state)
{
    (void)state;
    real_world w;
    make_unix_world(&w, 1, 2, free_port());
    mkdir(w.unix_dir, 0700);
    assert_int_equal(chmod(w.unix_dir, 0755), 0);
    boot *b;
    cl_diag d = {{0}};
    assert_int_equal(boot_open(&b, &w, (const unsigned char[AUTH_HASH_BYTES]){0}, &d), CL_EIO);
    assert_non_null(strstr(d.msg, "open to other users"));
    w.rank = 0;
    assert_int_equal(boot_open(&b, &w, (const unsigned char[AUTH_HASH_BYTES]){0}, &d), CL_EIO);
    assert_non_null(strstr(d.msg, "open to other users"));
    assert_int_equal(chmod(w.unix_dir, 0700), 0);
}

#define NOBODY 65534 /* the uid and gid of another user */

static void become_nobody(void)
{
    if (setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
        _exit(3);
}

/* Another user's process at the socket's place is not rank 0: the joiner
 * sees its uid (SO_PEERCRED) and refuses before a byte is read.  (The
 * squatter binds as root, then listens as nobody: the kernel reports the
 * listener's user as it was at listen().)  Another user can neither take
 * the name nor reach the socket in the folder, and a folder that is
 * another user's is refused. */
static void test_unix_other_user(void **state)
{
    (void)state;
    if (geteuid() != 0) {
        fprintf(stderr, "skipped: test_unix_other_user needs root, to act as user %d\n",
                NOBODY);
        skip();
    }
    unsigned char digest[AUTH_HASH_BYTES] = {7};
    real_world w;
    make_unix_world(&w, 1, 2, free_port());
    w.join_timeout = 5;
    mkdir(w.unix_dir, 0700);
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    snprintf(un.sun_path, sizeof un.sun_path, "%s", w.unix_path);
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t squatter = fork();
    if (squatter == 0) {
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        if (bind(fd, (struct sockaddr *)&un, sizeof un) < 0)
            _exit(3);
        become_nobody();
        if (listen(fd, 8) < 0 || write(ready[1], "x", 1) != 1)
            _exit(3);
        for (;;)
            accept(fd, NULL, NULL); /* and says nothing: a fake rank 0 would */
    }
    char x;
    assert_int_equal(read(ready[0], &x, 1), 1);
    boot *b;
    cl_diag d = {{0}};
    assert_int_equal(boot_open(&b, &w, digest, &d), CL_EIO);
    if (!strstr(d.msg, "another user's process (uid 65534"))
        fail_msg("not refused for its user: %s", d.msg);
    kill(squatter, SIGKILL);
    waitpid(squatter, NULL, 0);
    close(ready[0]);
    close(ready[1]);
    unlink(w.unix_path);
    pid_t outsider = fork();
    if (outsider == 0) {
        become_nobody();
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        bool kept_out = bind(fd, (struct sockaddr *)&un, sizeof un) < 0 && errno == EACCES &&
                        connect(fd, (struct sockaddr *)&un, sizeof un) < 0 && errno == EACCES;
        _exit(kept_out ? 0 : 1);
    }
    assert_int_equal(child_status(outsider), 0);
    assert_int_equal(chown(w.unix_dir, NOBODY, NOBODY), 0);
    w.rank = 0;
    assert_int_equal(boot_open(&b, &w, digest, &d), CL_EIO);
    assert_non_null(strstr(d.msg, "another user's"));
    assert_int_equal(chown(w.unix_dir, 0, 0), 0);
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
        cmocka_unit_test(test_key_bound_to_job),
        cmocka_unit_test(test_slurm_and_pmi),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_join_past_strangers),
        cmocka_unit_test(test_wrong_secret_refused),
        cmocka_unit_test(test_other_options_refused),
        cmocka_unit_test(test_join_timeout),
        cmocka_unit_test(test_idle_strangers_do_not_stop_join),
        cmocka_unit_test(test_two_jobs_one_secret),
        cmocka_unit_test(test_unix_rendezvous),
        cmocka_unit_test(test_unix_folder_checked),
        cmocka_unit_test(test_unix_other_user),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    remove_xdg();
    return failed;
}
