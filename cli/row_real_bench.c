/* row_real_bench.c - `commlab bench shm|tcp`: ping-pong latency and windowed
 * bandwidth over a measured transport, side by side with Open MPI's
 * transport of the same kind (shared memory: vader; TCP: tcp) measured the
 * same way in the same run, and for tcp with sockperf and iperf3 where they
 * are installed.
 *
 * The method is the one of real/mpi/mpi_pingpong.c (the OSU benchmarks'):
 *   latency    K = size <= 8 KiB ? 1000 : max(10, 1000 * 8 KiB / size)
 *              blocking round trips per sample; one-way = t / (2 K)
 *   bandwidth  K = max(2, min(100, 256 MiB / (64 * size))) windows of 64
 *              isends answered by a 1-byte ack; bandwidth = 64 size K / t
 *   samples    one warm-up sample, then SAMPLES timed ones; median, min, max
 * Here a sample is one iteration of the launcher: it starts after a
 * barrier and lasts until the slower of the two ranks returns. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/bench.h"
#include "cli/cli.h"
#include "core/record.h"
#include "core/units.h"
#include "real/launch.h"

#define WINDOW 64
#define SAMPLES 7
#define TAG_LAT 1
#define TAG_BW 2
#define TAG_ACK 3

static long latency_rounds(size_t bytes)
{
    if (bytes <= 8192)
        return 1000;
    long k = (long)(1000.0 * 8192 / (double)bytes);
    return k < 10 ? 10 : k;
}

static long bandwidth_windows(size_t bytes)
{
    double k = 256.0 * 1024 * 1024 / (WINDOW * (double)bytes);
    return k < 2 ? 2 : k > 100 ? 100 : (long)k;
}

const char *bench_range(char *buf, size_t len, const cl_stats *s, bool time)
{
    char a[UNITS_BUF], b[UNITS_BUF], c[UNITS_BUF];
    if (time)
        snprintf(buf, len, "%s [%s-%s]", units_time_digits(a, s->median, 3),
                 units_time_digits(b, s->min, 3), units_time_digits(c, s->max, 3));
    else
        snprintf(buf, len, "%s [%s-%s]", units_bandwidth_str(a, s->median),
                 units_bandwidth_str(b, s->min), units_bandwidth_str(c, s->max));
    return buf;
}

int bench_round_trips(cl_comm *c, void *sbuf, void *rbuf, size_t bytes, long k)
{
    int rank = cl_rank(c);
    for (long i = 0; i < k && rank < 2; i++) {
        if (rank == 0) {
            CL_TRY(cl_send(c, sbuf, bytes, 1, TAG_LAT));
            CL_TRY(cl_recv(c, rbuf, bytes, 1, TAG_LAT, NULL));
        } else {
            CL_TRY(cl_recv(c, rbuf, bytes, 0, TAG_LAT, NULL));
            CL_TRY(cl_send(c, sbuf, bytes, 0, TAG_LAT));
        }
    }
    return 0;
}

static int latency_pattern(cl_comm *c, const cl_args *a)
{
    void *buf = cl_alloc(c, a->bytes ? a->bytes : 1); /* one, as mpi_pingpong.c's */
    return bench_round_trips(c, buf, buf, a->bytes, latency_rounds(a->bytes));
}

static int bandwidth_pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c);
    unsigned char *buf = cl_alloc(c, a->bytes ? a->bytes : 1), ack = 0;
    cl_request *req[WINDOW];
    long k = bandwidth_windows(a->bytes);
    for (long w = 0; w < k && rank < 2; w++) {
        for (int i = 0; i < WINDOW; i++) {
            int err = rank == 0 ? cl_isend(c, buf, a->bytes, 1, TAG_BW, &req[i])
                                : cl_irecv(c, buf, a->bytes, 0, TAG_BW, &req[i]);
            if (err) {
                cl_waitall(c, i, req, NULL);
                return err;
            }
        }
        CL_TRY(cl_waitall(c, WINDOW, req, NULL));
        if (rank == 0)
            CL_TRY(cl_recv(c, &ack, 1, 1, TAG_ACK, NULL));
        else
            CL_TRY(cl_send(c, &ack, 1, 0, TAG_ACK));
    }
    return 0;
}

/* One sample per iteration; per-sample values through `scale`: seconds
 * per one-way message (latency) or bytes per second (bandwidth). */
static int measure(const char *backend, cl_pattern_fn *fn, size_t bytes, bool latency,
                   cl_stats *out)
{
    /* Warm buffers, as the reference's own loop keeps them: it never
     * writes its buffers between round trips (core/cache.h). */
    real_opts o = {
        .job = {.fn = fn, .args = {.bytes = bytes}, .nranks = 2, .warmup = 1, .iters = SAMPLES,
                .eager_limit = RUN_EAGER_LIMIT, .payload = true, .cache = CACHE_WARM,
                .report = stderr},
        .backend = backend, .bind = true, .shm.copy = SHM_COPY_AUTO, .deadlock_timeout = 5,
    };
    run_result res;
    int err = real_run(&o, &res);
    if (!err && res.status) {
        fprintf(stderr, "commlab: bench %s at %zu bytes: %s\n", backend, bytes, res.diag.msg);
        err = res.status;
    } else if (err) {
        cli_diag(&res.diag, 0);
    }
    if (!err) {
        for (int i = 0; i < res.iters; i++) {
            double t = res.iter_time[i];
            res.iter_time[i] = latency ? t / (2.0 * (double)latency_rounds(bytes))
                                       : (double)WINDOW * (double)bytes *
                                             (double)bandwidth_windows(bytes) / t;
        }
        err = stats_compute(res.iter_time, (size_t)res.iters, out);
    }
    run_result_release(&res);
    return err;
}

/* Runs argv[0] (looked up on PATH) with stdin from /dev/null and its
 * output to stderr; true when it exits 0. */
static bool run_quiet(char *const argv[])
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return false;
    if (pid == 0) {
        dup2(STDERR_FILENO, STDOUT_FILENO);
        execvp(argv[0], argv);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return false;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

bool bench_reference_find(char *prog, size_t len)
{
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return false;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = 0;
    cli_textf(prog, len, "%s/mpi_pingpong", exe);
    if (access(prog, X_OK) == 0)
        return true;
    char src[4096];
    cl_diag d = {{0}};
    if (cli_data_path(src, sizeof src, "real/mpi/mpi_pingpong.c", &d)) {
        printf("Open MPI: skipped, %s is missing and its source is not here\n", prog);
        return false;
    }
    printf("Open MPI: building the reference program %s with mpicc ...\n", prog);
    char *argv[] = {"mpicc", "-O2", "-std=c11", "-o", prog, src, NULL};
    if (!run_quiet(argv)) {
        printf("Open MPI: skipped, mpicc could not build %s (is libopenmpi-dev installed? "
               "`make deps` installs it)\n", prog);
        unlink(prog);
        return false;
    }
    return true;
}

/* Runs the Open MPI reference over `btl` and fills mpi[] by size index.
 * Returns false (with a line saying why) when it cannot. */
static bool run_mpi(const char *btl, size_t max, bench_point *mpi, size_t n)
{
    char prog[4200];
    if (!bench_reference_find(prog, sizeof prog))
        return false;
    char cmd[8600];
    snprintf(cmd, sizeof cmd,
             "mpirun --allow-run-as-root --oversubscribe -np 2 --bind-to core --mca btl %s "
             "'%s' 1 %zu %d 2>&1", btl, prog, max, SAMPLES);
    fflush(stdout);
    FILE *p = popen(cmd, "r");
    if (!p) {
        printf("Open MPI: skipped, cannot start mpirun\n");
        return false;
    }
    char line[512];
    size_t got = 0;
    while (fgets(line, sizeof line, p)) {
        uint64_t size;
        bench_point pt;
        if (bench_pingpong_parse(line, &size, &pt)) {
            fprintf(stderr, "mpirun: %s", line); /* mpirun's own words, on the same pipe */
            continue;
        }
        for (size_t i = 0; i < n; i++) {
            if (((uint64_t)1 << i) != size)
                continue;
            mpi[i] = pt;
            got++;
        }
    }
    int st = pclose(p);
    if (st != 0 || got != n) {
        printf("Open MPI: the reference run failed (status %d, %zu of %zu sizes)\n", st, got, n);
        return false;
    }
    return true;
}

/* The tools beside Open MPI for tcp: their own figures, printed as they
 * report them, where they are installed. */
static void run_socket_tools(void)
{
    static const struct {
        const char *tool, *what, *cmd;
    } tools[] = {
        {"sockperf", "TCP ping-pong over loopback, 16 B (its smallest is 14 B), 3 s; "
                     "half a round trip",
         "sockperf server --tcp -i 127.0.0.1 -p 11117 >/dev/null 2>&1 & s=$!; sleep 0.5; "
         "sockperf ping-pong --tcp -i 127.0.0.1 -p 11117 -m 16 -t 3 2>&1 | "
         "grep -E 'Summary|percentile 50.000' | sed 's/^sockperf: /  /'; "
         "kill $s 2>/dev/null; wait $s 2>/dev/null; true"},
        {"iperf3", "bulk TCP over loopback, 3 s",
         "iperf3 -s -1 -p 11118 >/dev/null 2>&1 & s=$!; sleep 0.3; "
         "iperf3 -c 127.0.0.1 -p 11118 -t 3 2>&1 | grep -E 'receiver' | sed 's/^/  /'; "
         "wait $s 2>/dev/null"},
    };
    for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++) {
        char probe[128];
        snprintf(probe, sizeof probe, "command -v %s >/dev/null 2>&1", tools[i].tool);
        if (system(probe) != 0) {
            printf("%s: not installed, skipped (apt-get install %s)\n", tools[i].tool,
                   tools[i].tool);
            continue;
        }
        printf("%s (%s):\n", tools[i].tool, tools[i].what);
        fflush(stdout);
        if (system(tools[i].cmd) != 0)
            printf("  %s failed\n", tools[i].tool);
    }
}

/* The smallest and largest ratio commlab / Open MPI over the sizes from
 * lo to hi bytes (both in the sweep): of one-way latencies (latency) or
 * of bandwidths, and at how many of those sizes commlab is the slower. */
static void print_ratio_span(const bench_point *ours, const bench_point *mpi, size_t n,
                             size_t lo, size_t hi, bool latency)
{
    double min = 0, max = 0;
    int sizes = 0, slower = 0;
    for (size_t i = 0; i < n; i++) {
        size_t bytes = (size_t)1 << i;
        if (bytes < lo || bytes > hi || !ours[i].ok || !mpi[i].ok)
            continue;
        double r = latency ? ours[i].lat.median / mpi[i].lat.median
                           : ours[i].bw.median / mpi[i].bw.median;
        min = sizes && min < r ? min : r;
        max = sizes && max > r ? max : r;
        slower += latency ? r > 1 : r < 1;
        sizes++;
    }
    if (!sizes)
        return;
    char a[UNITS_BUF], b[UNITS_BUF];
    printf("  %-10s %s-%s: %.2f-%.2f x Open MPI's: ", latency ? "latency" : "bandwidth",
           units_size_str(a, lo), units_size_str(b, hi), min, max);
    if (slower)
        printf("slower at %d of %d sizes\n", slower, sizes);
    else
        printf("as fast or faster at every size\n");
}

#define SMALL_MAX 256 /* the small messages: 1 B to this */
#define SMALL_SIZES 9 /* ... that many sizes */
#define LINE_ROUNDS_RUN 3

/* The one-way time of the line floor as text ("-" when it failed). */
static const char *line_text(char *buf, const cl_stats *s, bool ok)
{
    return ok ? units_time_digits(buf, s->median, 3) : strcpy(buf, "-");
}

/* Small messages measured again, commlab and Open MPI taking turns for
 * LINE_ROUNDS_RUN rounds, each side just after the line floor.  On a VM
 * whose two cores sometimes share a cache and sometimes do not, one sweep
 * each can compare two machines; a round whose floor moved between the
 * two sides is marked.  Returns a CLI_EXIT_* code. */
static int line_rounds(const char *backend, const char *btl)
{
    cl_stats spin, pause;
    bool ok_spin = !bench_line_floor(SAMPLES, false, &spin);
    bool ok_pause = !bench_line_floor(SAMPLES, true, &pause);
    char a[UNITS_BUF], b[UNITS_BUF];
    printf("\nsmall messages in rounds.  The line: one cache line handed between the same\n"
           "two cores and back (cli/row_real_line.c), the floor under any shared-memory\n"
           "message: %s one-way spinning, %s with the pause hint between loads.\n"
           "Each round measures the line, commlab's 1-%d B, the line, Open MPI's.\n\n",
           line_text(a, &spin, ok_spin), line_text(b, &pause, ok_pause), SMALL_MAX);
    printf("%-6s %-10s %-12s %-10s %-12s %-9s 1-%d B ratios\n", "round", "line", "commlab 8 B",
           "line", "Open MPI 8B", "8 B ratio", SMALL_MAX);
    double ratio8[LINE_ROUNDS_RUN];
    int done = 0, moved = 0;
    for (int r = 0; r < LINE_ROUNDS_RUN; r++) {
        bench_point ours[SMALL_SIZES], mpi[SMALL_SIZES];
        memset(ours, 0, sizeof ours);
        memset(mpi, 0, sizeof mpi);
        cl_stats l0, l1;
        bool ok0 = !bench_line_floor(SAMPLES, false, &l0);
        for (size_t i = 0; i < SMALL_SIZES; i++) {
            if (measure(backend, latency_pattern, (size_t)1 << i, true, &ours[i].lat))
                return CLI_EXIT_FAILED;
            ours[i].ok = true;
        }
        bool ok1 = !bench_line_floor(SAMPLES, false, &l1);
        if (!run_mpi(btl, SMALL_MAX, mpi, SMALL_SIZES))
            return CLI_EXIT_OK; /* run_mpi said why; the table above stands */
        double lo = 0, hi = 0;
        char slower[SMALL_SIZES * 8] = "";
        for (size_t i = 0; i < SMALL_SIZES; i++) {
            double x = ours[i].lat.median / mpi[i].lat.median;
            lo = i && lo < x ? lo : x;
            hi = i && hi > x ? hi : x;
            if (x > 1)
                snprintf(slower + strlen(slower), sizeof slower - strlen(slower), "%s%zu",
                         *slower ? "," : "", (size_t)1 << i);
        }
        ratio8[done++] = ours[3].lat.median / mpi[3].lat.median;
        bool shift = ok0 && ok1 && (l0.median > 1.25 * l1.median || l1.median > 1.25 * l0.median);
        moved += shift;
        char c[UNITS_BUF], d[UNITS_BUF], e[UNITS_BUF], f[UNITS_BUF], round[16];
        snprintf(round, sizeof round, "%d%s", r + 1, shift ? "*" : "");
        printf("%-6s %-10s %-12s %-10s %-12s %-9.2f %.2f-%.2f, slower at %s\n", round,
               line_text(c, &l0, ok0), units_time_digits(d, ours[3].lat.median, 3),
               line_text(e, &l1, ok1), units_time_digits(f, mpi[3].lat.median, 3), ratio8[r],
               lo, hi, *slower ? strcat(slower, " B") : "none");
    }
    cl_stats s;
    if (!stats_compute(ratio8, (size_t)done, &s))
        printf("8 B: commlab / Open MPI %.2f [%.2f-%.2f] over %d rounds\n", s.median, s.min,
               s.max, done);
    if (moved)
        printf("* the line moved by more than a quarter between the two sides: the machine\n"
               "  changed regime within the round, and its ratios compare two machines\n");
    return CLI_EXIT_OK;
}

/* What sets one transport's benchmark apart. */
typedef struct bench_ref {
    const char *backend; /* "shm" */
    const char *where;   /* how its ranks reach each other, for the heading */
    const char *btl;     /* Open MPI's transports of the same kind */
    bool socket_tools;   /* sockperf and iperf3 after the table */
    bool line_rounds;    /* small messages again in rounds beside the line floor */
} bench_ref;

static int bench_transport(const bench_ref *ref, bool quick)
{
    const char *backend = ref->backend;
    size_t max = quick ? 65536 : 4u << 20, n = 0;
    while (((size_t)1 << n) <= max)
        n++;
    bench_point *ours = calloc(n, sizeof *ours), *mpi = calloc(n, sizeof *mpi);
    if (!ours || !mpi) {
        free(ours);
        free(mpi);
        return cli_error("out of memory");
    }
    printf("%s: ping-pong between 2 ranks bound to cores%s; latency is one-way (K round\n"
           "trips per sample), bandwidth uses windows of %d non-blocking sends; %d samples,\n"
           "median [min-max].  Open MPI runs the same method (real/mpi/mpi_pingpong.c)\n"
           "with --mca btl %s in the same run.\n\n", backend, ref->where, WINDOW, SAMPLES,
           ref->btl);
    int rc = CLI_EXIT_OK;
    /* What it is doing, on stderr: the table comes only once both sides
     * are measured, seconds later. */
    char top[UNITS_BUF];
    fprintf(stderr, "bench %s: measuring commlab, 1 B to %s (%zu sizes, latency and "
            "bandwidth) ...\n", backend, units_size_str(top, max), n);
    for (size_t i = 0; i < n && rc == CLI_EXIT_OK; i++) {
        size_t bytes = (size_t)1 << i;
        if (measure(backend, latency_pattern, bytes, true, &ours[i].lat) ||
            measure(backend, bandwidth_pattern, bytes, false, &ours[i].bw))
            rc = CLI_EXIT_FAILED;
        ours[i].ok = rc == CLI_EXIT_OK;
    }
    if (rc == CLI_EXIT_OK)
        fprintf(stderr, "bench %s: measuring Open MPI (--mca btl %s) the same way ...\n",
                backend, ref->btl);
    bool have_mpi = rc == CLI_EXIT_OK && run_mpi(ref->btl, max, mpi, n);
    printf("%-8s %-30s %-12s %-6s %-36s %-12s %-6s\n", "size", "commlab latency", "Open MPI",
           "ratio", "commlab bandwidth", "Open MPI", "ratio");
    for (size_t i = 0; i < n && ours[i].ok; i++) {
        char sz[UNITS_BUF], l[96], b[96], ml[UNITS_BUF] = "-", mb[UNITS_BUF] = "-";
        char lr[16] = "-", br[16] = "-";
        if (have_mpi) {
            units_time_digits(ml, mpi[i].lat.median, 3);
            units_bandwidth_str(mb, mpi[i].bw.median);
            snprintf(lr, sizeof lr, "%.2f", ours[i].lat.median / mpi[i].lat.median);
            snprintf(br, sizeof br, "%.2f", ours[i].bw.median / mpi[i].bw.median);
        }
        printf("%-8s %-30s %-12s %-6s %-36s %-12s %-6s\n", units_size_str(sz, (uint64_t)1 << i),
               bench_range(l, sizeof l, &ours[i].lat, true), ml, lr,
               bench_range(b, sizeof b, &ours[i].bw, false), mb, br);
    }
    if (have_mpi) {
        printf("\nratio: commlab / Open MPI (latency: below 1 is faster; bandwidth: above 1 "
               "is faster)\nover the sizes where the two are compared:\n");
        print_ratio_span(ours, mpi, n, 1, 256, true);
        print_ratio_span(ours, mpi, n, (size_t)1 << 20, (size_t)4 << 20, false);
    }
    if (ref->line_rounds && have_mpi && rc == CLI_EXIT_OK)
        rc = line_rounds(backend, ref->btl);
    if (ref->socket_tools && rc == CLI_EXIT_OK) {
        printf("\n");
        run_socket_tools();
    }
    free(ours);
    free(mpi);
    return rc;
}

int bench_shm(bool quick)
{
    static const bench_ref ref = {"shm", "", "self,vader", false, true};
    return bench_transport(&ref, quick);
}

int bench_tcp(bool quick)
{
    static const bench_ref ref = {"tcp", ", over loopback", "self,tcp", true, false};
    return bench_transport(&ref, quick);
}
