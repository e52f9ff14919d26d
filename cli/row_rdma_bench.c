/* row_rdma_bench.c - `commlab bench rdma`: ping-pong latency and bandwidth of
 * the rdma backend on each usable provider, side by side with libfabric's
 * own fi_pingpong (libfabric-bin) on the same provider in the same run.
 *
 * Both sides measure the same thing the same way, fi_pingpong's way: K
 * blocking round trips of one tagged message each way between two
 * processes (K = 10,000 up to 8 KiB, fewer above), timed from the first
 * round trip to the last with no warm-up round trips before them
 * (fi_pingpong has none); one-way latency = t / (2 K), fi_pingpong's
 * "usec/xfer"; bandwidth = size / one-way latency.
 *
 * Like fi_pingpong, each side sends from one buffer and receives into
 * another, so the bytes a rank sends were last written at the start, not
 * by its last receive (with one buffer the data crosses between the cores'
 * caches dirty every time: 64 KiB measured 1.52 x fi_pingpong against
 * 1.18 x with two, 9 pairs each).  Like fi_pingpong, each side allocates
 * and touches its buffers before its clock starts: commlab runs two timed
 * iterations, the first only allocates (cl_alloc zeroes the blocks, which
 * faults their pages in), the second, whose time counts, gets the same
 * blocks back untouched and runs the round trips.  (Timing the first
 * allocation too put 2 x 4 MiB of page faults per rank into 20 round trips
 * of 4 MiB: their first round trip took 1.7-2.0 ms, the others 0.73 ms.)
 *
 * The two programs run on the same two cores: commlab binds its ranks
 * (rank 0 times), fi_pingpong's client (which times) is bound to rank 0's
 * core and its server to rank 1's.  SAMPLES pairs per size, the two
 * programs taking turns (the order alternates), so a change of load on a
 * shared machine falls on both; each ratio is the median of the pairs'
 * ratios, with their min and max. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/bench.h"
#include "cli/cli.h"
#include "core/record.h"
#include "core/units.h"
#include "real/bind.h"
#include "real/launch.h"
#include "real/rdma.h"

#define SAMPLES 7
#define PINGPONG_SECONDS 60 /* one fi_pingpong run is stopped after this */

static long rounds(size_t bytes)
{
    if (bytes <= 8192)
        return 10000;
    long k = (long)(10000.0 * 8192 / (double)bytes);
    return k < 20 ? 20 : k;
}

#define TIMED_ITER 1 /* the iteration that runs the round trips; the one before allocates */

static int pingpong_pattern(cl_comm *c, const cl_args *a)
{
    size_t len = a->bytes ? a->bytes : 1;
    void *rbuf = cl_alloc(c, len), *sbuf = cl_alloc(c, len);
    if (a->iteration != TIMED_ITER)
        return 0;
    return bench_round_trips(c, sbuf, rbuf, a->bytes, rounds(a->bytes));
}

/* One commlab sample at bytes over prov: its one-way seconds in *out.
 * 0, or the run's exit status (its diag printed). */
static int measure_once(const char *prov, size_t bytes, double *out)
{
    /* Warm buffers, as fi_pingpong keeps its own (core/cache.h). */
    real_opts o = {
        .job = {.fn = pingpong_pattern, .args = {.bytes = bytes}, .nranks = 2, .warmup = 0,
                .iters = TIMED_ITER + 1, .eager_limit = RUN_EAGER_LIMIT, .payload = true,
                .cache = CACHE_WARM, .report = stderr},
        .backend = "rdma", .rdma.provider = prov, .bind = true, .deadlock_timeout = 10,
    };
    run_result res;
    int err = real_run(&o, &res);
    if (!err && res.status) {
        fprintf(stderr, "commlab: bench rdma at %zu bytes: %s\n", bytes, res.diag.msg);
        err = res.status;
    } else if (err) {
        cli_diag(&res.diag, 0);
    }
    if (!err)
        *out = res.iter_time[TIMED_ITER] / (2.0 * (double)rounds(bytes));
    run_result_release(&res);
    return err;
}

/* Starts argv with its stdout on fd (-1: /dev/null) and stderr silenced,
 * bound where commlab's rank `rank` runs (b NULL: unbound). */
static pid_t spawn(char *const argv[], int fd, const real_binder *b, int rank)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    if (b)
        real_binder_apply(b, rank, NULL);
    int null = open("/dev/null", O_RDWR);
    dup2(fd >= 0 ? fd : null, STDOUT_FILENO);
    dup2(null, STDERR_FILENO);
    execvp(argv[0], argv);
    _exit(127);
}

/* Waits for pid until deadline (job_now seconds), then kills it.  Its exit
 * status, or -1. */
static int reap(pid_t pid, double deadline)
{
    int st;
    for (;;) {
        pid_t got = waitpid(pid, &st, WNOHANG);
        if (got == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        if (got < 0)
            return -1;
        if (job_now() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            return -1;
        }
        struct timespec ts = {0, 5000000L};
        nanosleep(&ts, NULL);
    }
}

/* One fi_pingpong run at bytes over prov: its one-way microseconds in
 * *usec.  False (nothing measured) when it could not run. */
static bool pingpong_once(const char *prov, size_t bytes, int port, const real_binder *b,
                          double *usec)
{
    char size[32], iters[32], sport[16];
    snprintf(size, sizeof size, "%zu", bytes);
    snprintf(iters, sizeof iters, "%ld", rounds(bytes));
    snprintf(sport, sizeof sport, "%d", port);
    char *server[] = {"fi_pingpong", "-p", (char *)prov, "-e", "rdm", "-m", "tagged", "-S", size,
                      "-I", iters, "-B", sport, NULL};
    char *client[] = {"fi_pingpong", "-p", (char *)prov, "-e", "rdm", "-m", "tagged", "-S", size,
                      "-I", iters, "-P", sport, "127.0.0.1", NULL};
    int fds[2];
    if (pipe(fds))
        return false;
    double deadline = job_now() + PINGPONG_SECONDS;
    pid_t srv = spawn(server, -1, b, 1);
    struct timespec ts = {0, 200000000L}; /* the server listens before the client calls */
    nanosleep(&ts, NULL);
    pid_t cli = spawn(client, fds[1], b, 0);
    close(fds[1]);
    char out[4096];
    size_t len = 0;
    ssize_t n;
    while (len < sizeof out - 1 && (n = read(fds[0], out + len, sizeof out - 1 - len)) > 0)
        len += (size_t)n;
    out[len] = 0;
    close(fds[0]);
    int rc_cli = cli > 0 ? reap(cli, deadline) : -1;
    int rc_srv = srv > 0 ? reap(srv, deadline) : -1;
    /* "bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec", then
     * "8 10k =10k 156k 0.01s 10.67 0.75 1.33" */
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        char f[8][32];
        if (sscanf(line, "%31s %31s %31s %31s %31s %31s %31s %31s", f[0], f[1], f[2], f[3],
                   f[4], f[5], f[6], f[7]) == 8 &&
            strcmp(f[0], "bytes") != 0) { /* the one size asked for, "4k" for 4096 */
            *usec = strtod(f[6], NULL);
            return rc_cli == 0 && rc_srv == 0 && *usec > 0;
        }
    }
    return false;
}

/* Bandwidth samples from latency samples: bytes / one-way time (min and
 * max swap). */
static cl_stats bandwidth_of(const cl_stats *lat, size_t bytes)
{
    return (cl_stats){.median = (double)bytes / lat->median, .min = (double)bytes / lat->max,
                      .max = (double)bytes / lat->min, .n = lat->n};
}

/* "1.12 [1.05-1.30]": the median of the pairs' ratios, min and max. */
static const char *ratios(char *buf, size_t len, const double *r, int n)
{
    cl_stats s;
    if (stats_compute(r, (size_t)n, &s))
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.2f [%.2f-%.2f]", s.median, s.min, s.max);
    return buf;
}

static int bench_provider(const char *prov, bool quick, bool have_pp, const real_binder *b)
{
    static const size_t all[] = {8, 512, 4096, 65536, 1 << 20, 4 << 20};
    size_t nsizes = quick ? 4 : sizeof all / sizeof all[0];
    printf("provider %s: one-way latency (K round trips per sample, no warm-up) and\n"
           "bandwidth (size / one-way); %d samples each, taking turns with fi_pingpong -e rdm\n"
           "-m tagged on the same cores; median [min-max]\n\n", prov, SAMPLES);
    printf("%-8s %-30s %-30s %-19s %-36s %-19s\n", "size", "commlab latency", "fi_pingpong",
           "ratio", "commlab bandwidth", "ratio");
    int port = 20000 + (int)(getpid() % 20000);
    for (size_t i = 0; i < nsizes; i++) {
        double ours[SAMPLES], theirs[SAMPLES], lat_r[SAMPLES], bw_r[SAMPLES];
        bool pp = have_pp;
        for (int k = 0; k < SAMPLES; k++) {
            /* Turns: commlab first in even pairs, fi_pingpong first in odd. */
            for (int turn = 0; turn < 2; turn++) {
                if ((turn == 0) == (k % 2 == 0)) {
                    if (measure_once(prov, all[i], &ours[k]))
                        return CLI_EXIT_FAILED;
                } else if (pp) {
                    pp = pingpong_once(prov, all[i], port++, b, &theirs[k]);
                    theirs[k] *= 1e-6;
                }
            }
            if (pp) {
                lat_r[k] = ours[k] / theirs[k];
                bw_r[k] = theirs[k] / ours[k]; /* bandwidths: the times inverted */
            }
        }
        cl_stats lat, pps;
        stats_compute(ours, SAMPLES, &lat);
        char sz[UNITS_BUF], l[96], f[96] = "-", bw[96], lr[32] = "-", br[32] = "-";
        cl_stats bws = bandwidth_of(&lat, all[i]);
        if (pp && !stats_compute(theirs, SAMPLES, &pps)) {
            bench_range(f, sizeof f, &pps, true);
            ratios(lr, sizeof lr, lat_r, SAMPLES);
            ratios(br, sizeof br, bw_r, SAMPLES);
        }
        printf("%-8s %-30s %-30s %-19s %-36s %-19s\n", units_size_str(sz, all[i]),
               bench_range(l, sizeof l, &lat, true), f, lr,
               bench_range(bw, sizeof bw, &bws, false), br);
        fflush(stdout);
    }
    printf("\nratio: commlab / fi_pingpong (latency: below 1 is faster; bandwidth: above 1\n"
           "is faster); each the median of the %d pairs' ratios [min-max]\n", SAMPLES);
    return CLI_EXIT_OK;
}

int bench_rdma(bool quick)
{
    bool have_pp = system("command -v fi_pingpong >/dev/null 2>&1") == 0;
    if (!have_pp)
        printf("fi_pingpong: skipped, not installed (Debian: libfabric-bin)\n\n");
    rdma_provider_desc *v;
    size_t n;
    cl_diag d = {{0}};
    if (rdma_providers_list(&v, &n, &d))
        return cli_diag(&d, CLI_EXIT_FAILED);
    /* fi_pingpong runs on the cores commlab binds its two ranks to. */
    real_binder *b = NULL;
    if (have_pp && real_binder_create(&b, 2, true, NULL))
        printf("fi_pingpong: not bound to cores (hwloc failed); commlab's ranks are\n\n");
    int rc = CLI_EXIT_OK;
    char done[512] = " ";
    /* The providers commlab runs on and the run tests cover. */
    static const char *const wanted[] = {"shm", "tcp"};
    for (size_t w = 0; w < 2 && rc == CLI_EXIT_OK; w++)
        for (size_t i = 0; i < n; i++) {
            char key[40];
            snprintf(key, sizeof key, " %s ", v[i].name);
            if (strcmp(v[i].name, wanted[w]) || strstr(done, key))
                continue;
            snprintf(done + strlen(done), sizeof done - strlen(done), "%s ", v[i].name);
            rc = bench_provider(v[i].name, quick, have_pp, b);
            printf("\n");
            break;
        }
    free(v);
    real_binder_destroy(b);
    return rc;
}
