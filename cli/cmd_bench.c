/* cmd_bench.c - `commlab bench`: how fast the simulator runs (bench sim,
 * here) and the transports next to references (bench_real.c,
 * bench_rdma.c).  Prints figures; asserts nothing (tests never depend on
 * timing). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/backend.h"
#include "cli/bench.h"
#include "cli/cli.h"
#include "cli/prof.h"
#include "core/pattern.h"
#include "core/tier.h"
#include "core/units.h"
#include "sim/coro.h"
#include "sim/engine.h"
#include "sim/flow.h"
#include "sim/net.h"

const char cmd_bench_usage[] =
    "usage: commlab bench start|sim|shm|tcp|rdma|mpi|all [--quick]\n"
    "       commlab bench sim [--profile] [--long] [--quick]\n"
    "\n"
    "start: a command as a whole process, fork to exit (--help, price, a small\n"
    "simulated run, and fabric, which opens libfabric): what every script, test\n"
    "and exercise check pays per command.\n"
    "sim: the context-switch cost of a rank, then simulated messages per second\n"
    "of wall time and peak memory for allreduce-ring --no-payload (1 MiB, tier\n"
    "infiniband) at 1,000, 10,000, 100,000 and 1,000,000 ranks.  Runs past\n"
    "20 million messages stop there and report the rate so far.  Each size runs\n"
    "in a child process so its peak memory is its own; the memory a size needs\n"
    "(the size before's peak, scaled to its ranks) is printed before it runs, and\n"
    "a size needing more than MemAvailable is skipped.  Then the contended case,\n"
    "alltoall-linear at 64 and 1,024 ranks (1 MiB a block), whose messages share\n"
    "every port, with the max-min solver's share of the time.  Then the\n"
    "references, whole processes from fork to exit taking turns, each row with\n"
    "its simulated time and the ratio of wall times: the ring all-reduce at\n"
    "1,000 ranks run to the end next to SimGrid 3.32 simulating it with exact\n"
    "alpha-beta flags on its fastest platforms for it (a one-dimensional torus,\n"
    "a star of host links), on the torus at full precision (SimGrid's default\n"
    "rounds the ring's time by 0.32 us) and on a star behind a backbone; and\n"
    "the linear all-to-all at 256, 512 and 1,024 ranks, 1 MiB a block, next to\n"
    "SimGrid on the star (its 1,024-rank run, minutes long, quoted from a stored\n"
    "run unless --long).  SimGrid is sim/simgrid/reference.c, built by `make\n"
    "bench` where Debian's libsimgrid-dev installs.  Last, the solver alone\n"
    "(all-to-all flows solved one at a time and in one batch, disjoint flows'\n"
    "fast path).\n"
    "\n"
    "shm: one-way latency and bandwidth (windows of 64 non-blocking sends) of\n"
    "the shared-memory transport from 1 B to 4 MiB, next to Open MPI's shared\n"
    "memory measured the same way in the same run, where mpirun is installed\n"
    "(its reference program, real/mpi/mpi_pingpong.c, is built with mpicc next\n"
    "to the binary the first time; `make bench` builds it too).  Then 1-256 B\n"
    "again in 3 rounds, commlab and Open MPI taking turns, each just after the\n"
    "line: one cache line handed between the same two cores, the floor under any\n"
    "shared-memory message (a round whose line moved between the two sides\n"
    "compares two regimes of the machine and is marked).\n"
    "tcp: the same over loopback TCP, next to Open MPI's TCP transport (--mca btl\n"
    "self,tcp), then sockperf's and iperf3's own figures where they are installed.\n"
    "rdma: one-way latency and bandwidth of the rdma backend per libfabric\n"
    "provider, next to fi_pingpong (libfabric-bin) on the same provider in the\n"
    "same run.\n"
    "mpi (where built): one-way latency of commlab over the MPI library (`run\n"
    "pingpong --backend mpi --cache warm --csv`, one round trip a sample, under\n"
    "mpirun) from 8 B to 4 MiB by x8, next to the library's own ping-pong\n"
    "(real/mpi/mpi_pingpong.c, OSU's method, under mpirun; built as for shm) in\n"
    "the same run, with the ratio.  A figure either side leaves out or garbles\n"
    "is an error (exit 4), never a zero.\n"
    "\n"
    "all: every one of them in turn: start, sim, shm, tcp, rdma, mpi.  Figures only:\n"
    "nothing is asserted.\n"
    "\n"
    "      --quick   sim: only 1,000 and 10,000 ranks, 2 million messages at most,\n"
    "                the all-to-all at 64 ranks, not the solver alone nor SimGrid;\n"
    "                shm, tcp, rdma: sizes up to 64 KiB; mpi: 8 B, 64 KiB, 1 MiB\n"
    "      --long    sim only: run SimGrid's 1,024-rank all-to-all (about 6 minutes\n"
    "                and 2.5 GB) rather than quote its stored time\n"
    "      --profile sim only: under each run, where its time goes by phase\n"
    "                (context switches, event queue, matching, flow pricing, the\n"
    "                engine's operations, pattern code and API, libc) and its top\n"
    "                functions, and the engine's counters per message.  Sampled:\n"
    "                SIGPROF every 50 us of wall time records the interrupted\n"
    "                program counter, named afterwards from the executable's\n"
    "                symbol table (inlined code counts as its caller), so a run\n"
    "                without --profile pays nothing; a profiled run is slower by\n"
    "                the signals (its messages per second are printed all the same)\n";

static double wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct ping {
    sim_sched *sched;
    sim_coro *co;
    long rounds;
} ping;

static void ping_main(void *arg)
{
    ping *p = arg;
    for (long i = 0; i < p->rounds; i++)
        sim_coro_yield(p->sched, p->co);
}

/* Nanoseconds per switch: a resume and a yield are two switches. */
static double switch_ns(void)
{
    sim_stacks *st;
    if (sim_stacks_create(&st, 1, 0))
        return -1;
    sim_sched sched;
    sim_coro co;
    sim_sched_init(&sched);
    ping p = {&sched, &co, 2000000};
    sim_coro_init(&co, st, 0, ping_main, &p);
    double t0 = wall();
    while (!sim_coro_done(&co))
        sim_coro_resume(&sched, &co);
    double ns = (wall() - t0) * 1e9 / (2.0 * (double)p.rounds);
    sim_stacks_destroy(st);
    return ns;
}

typedef struct bench_row {
    double seconds;    /* wall time of the run */
    double messages;   /* messages simulated */
    double solve_s;    /* wall seconds in the max-min solver */
    double simulated;  /* virtual seconds of the (first) iteration */
    int status;        /* 0 or CL_ETIMEOUT (budget reached) */
    char profile[4096]; /* --profile: the breakdown (prof.h), or "" */
} bench_row;

/* The engine's counters of a run, per message, under its profile. */
static void profile_counters(char *buf, size_t len, const sim_stats *st)
{
    double m = st->total_messages ? (double)st->total_messages : 1;
    snprintf(buf, len,
             "    per message: %.2f events, %.2f flows (%.2f priced alone, %.3f handed to\n"
             "    the solver), %.3f max-min solves\n",
             (double)st->events / m, (double)st->flows / m, (double)st->lone / m,
             (double)st->adopted / m, (double)st->solves / m);
}

/* Runs fn at `ranks` with bytes in this process (sampled when profile);
 * writes the row to fd. */
static void bench_child(cl_pattern_fn *fn, int ranks, size_t bytes, uint64_t budget,
                        bool profile, int fd)
{
    bench_row row = {0};
    tier_set ts;
    sim_net *net = NULL;
    cl_diag d;
    if (cli_load_tiers(&ts, NULL, "infiniband") == 0) {
        if (sim_net_create_tier(&net, &ts.tiers[0], ranks, &d) == 0) {
            sim_opts o = {
                .job = {.fn = fn, .args = {.bytes = bytes},
                        .nranks = ranks, .eager_limit = RUN_EAGER_LIMIT, .payload = false, .iters = 1,
                        .out = stdout, .report = stderr},
                .net = net, .max_messages = budget, .stack_bytes = 16384,
            };
            run_result res;
            sim_stats st;
            prof *p = NULL;
            int perr = profile ? prof_start(&p, 50e-6, (size_t)1 << 22) : 0;
            if (perr)
                snprintf(row.profile, sizeof row.profile, "    (no profile: %s)\n",
                         cl_strerror(perr));
            double t0 = wall();
            int err = sim_run(&o, &res, &st);
            double t1 = wall();
            prof_stop(p);
            if (err == 0) {
                row.seconds = t1 - t0;
                if (p) {
                    profile_counters(row.profile, sizeof row.profile, &st);
                    size_t used = strlen(row.profile);
                    prof_report(p, 12, row.profile + used, sizeof row.profile - used);
                }
                row.messages = (double)st.total_messages;
                row.solve_s = st.solve_s;
                row.simulated = res.iter_time ? res.iter_time[0] : 0;
                row.status = res.status;
            }
            prof_destroy(p);
            run_result_release(&res);
            sim_net_destroy(net);
        }
        tier_set_release(&ts);
    }
    if (write(fd, &row, sizeof row) != (ssize_t)sizeof row)
        _exit(1);
}

/* Runs fn at `ranks` with bytes in a child process (its peak memory its
 * own) into *row and *ru; false when it failed. */
static bool bench_fork(cl_pattern_fn *fn, int ranks, size_t bytes, uint64_t budget,
                       bool profile, bench_row *row, struct rusage *ru)
{
    int fds[2];
    if (pipe(fds))
        return false;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        bench_child(fn, ranks, bytes, budget, profile, fds[1]);
        _exit(0);
    }
    close(fds[1]);
    *row = (bench_row){0};
    ssize_t got = pid > 0 ? read(fds[0], row, sizeof *row) : -1;
    close(fds[0]);
    int st;
    return pid > 0 && wait4(pid, &st, 0, ru) == pid && got == (ssize_t)sizeof *row &&
           row->seconds > 0;
}

/* Runs fn at `ranks` in a child and prints the rest of its row (the ranks
 * and the memory it was expected to need are out already); returns the
 * child's peak resident memory in bytes, 0 when the run failed. */
static double bench_run(cl_pattern_fn *fn, int ranks, size_t bytes, uint64_t budget,
                        bool profile)
{
    bench_row row;
    struct rusage ru;
    if (!bench_fork(fn, ranks, bytes, budget, profile, &row, &ru)) {
        printf("(run failed)\n");
        return 0;
    }
    printf("%12.0f  %8.2f  %10.2f  %9.1f  %7.1f%%  %s\n", row.messages,
           row.seconds, row.messages / row.seconds / 1e6, (double)ru.ru_maxrss / 1024.0,
           100 * row.solve_s / row.seconds, row.status ? "stopped at the budget" : "complete");
    fputs(row.profile, stdout);
    return (double)ru.ru_maxrss * 1024.0;
}

/* A series of runs at growing rank counts whose memory grows as
 * ranks^power: each size's need is the size before's peak scaled so, and
 * a size that would not fit in the memory available is skipped (at a
 * million ranks the simulator holds gigabytes). */
typedef struct bench_series {
    cl_pattern_fn *fn;
    const int *ranks;
    size_t n;
    double power;     /* memory ~ ranks^power: 1 one flow per rank, 2 all-to-all */
    bool per_block;   /* 1 MiB to each rank (bytes = ranks MiB), else 1 MiB in all */
    uint64_t budget;  /* messages before a run stops */
    uint64_t avail;   /* bytes of memory available; 0: unknown, nothing skipped */
    bool profile;     /* --profile: each run sampled, its breakdown under its row */
} bench_series;

static void bench_series_run(const bench_series *s)
{
    double peak = 0;
    for (size_t i = 0; i < s->n; i++) {
        double need = i > 0 && peak > 0 ? peak * pow((double)s->ranks[i] / s->ranks[i - 1],
                                                     s->power)
                                        : 0;
        if (need > 0)
            printf("%10d  %9.0f  ", s->ranks[i], need / (1 << 20));
        else
            printf("%10d  %9s  ", s->ranks[i], "-");
        if (s->avail && need > (double)s->avail) {
            char a[UNITS_BUF];
            printf("(skipped: more than the %s available)\n", units_size_str(a, s->avail));
            peak = 0;
            continue;
        }
        size_t bytes = (s->per_block ? (size_t)s->ranks[i] : 1) << 20;
        peak = bench_run(s->fn, s->ranks[i], bytes, s->budget, s->profile);
    }
}

static int bench_sim_run(bool quick, bool profile, bool run_long)
{
    uint64_t avail = 0;
    char a[UNITS_BUF];
    printf("sim: context switch between the scheduler and a rank: %.1f ns\n", switch_ns());
    if (cli_mem_available(&avail) == 0)
        printf("memory: %s available.  'need' is the size before's peak scaled to the\n"
               "ranks (printed before the run); a size that does not fit is skipped\n",
               units_size_str(a, avail));
    static const char head[] = "%10s  %9s  %12s  %8s  %10s  %9s  %8s\n";
    printf("\nuncontended: allreduce-ring --no-payload, 1 MiB, tier infiniband (no two\n"
           "messages share a port), 16 KiB stacks\n");
    printf(head, "ranks", "need MiB", "messages", "wall (s)", "Mmsg/s", "peak MiB", "solver");
    static const int sizes[] = {1000, 10000, 100000, 1000000};
    uint64_t budget = quick ? 2000000 : 20000000;
    bench_series ring = {pattern_find("allreduce-ring")->fn, sizes, quick ? 2u : 4u, 1.0,
                         false, budget, avail, profile};
    bench_series_run(&ring);
    printf("\ncontended: alltoall-linear --no-payload, 1 MiB a block, tier infiniband (every\n"
           "port carries K - 1 flows at once, shared max-min); solver: its share of the time\n");
    printf(head, "ranks", "need MiB", "messages", "wall (s)", "Mmsg/s", "peak MiB", "solver");
    static const int a2a[] = {64, 1024};
    bench_series all = {pattern_find("alltoall-linear")->fn, a2a, quick ? 1u : 2u, 2.0, true,
                        budget, avail, profile};
    bench_series_run(&all);
    if (quick)
        return CLI_EXIT_OK;
    bench_references(run_long);
    printf("\nthe max-min solver alone (sim/flow.h), flows of 256 MiB at 50 GB/s:\n");
    fflush(stdout);
    int err = sim_flow_bench(stdout);
    return err ? cli_error("bench sim: %s", cl_strerror(err)) : CLI_EXIT_OK;
}

int bench_sim(bool quick)
{
    return bench_sim_run(quick, false, false);
}

int cmd_bench(int argc, char **argv)
{
    static const struct option opts[] = {{"quick", no_argument, NULL, 'q'},
                                         {"profile", no_argument, NULL, 'p'},
                                         {"long", no_argument, NULL, 'l'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    bool quick = false, profile = false, run_long = false;
    int c;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        if (c == 'h') {
            fputs(cmd_bench_usage, stdout);
            return CLI_EXIT_OK;
        }
        if (c == 'q' || c == 'p' || c == 'l') {
            quick = quick || c == 'q';
            profile = profile || c == 'p';
            run_long = run_long || c == 'l';
            continue;
        }
        return cli_bad_option("bench", opts, argv, c);
    }
    char names[128];
    backend_names(names, sizeof names, false, ", ");
    if (optind + 1 != argc)
        return cli_error("bench: which benchmark? start, %s or all\ntry 'commlab help bench'",
                         names);
    const char *what = argv[optind];
    bool all = strcmp(what, "all") == 0;
    const char *sim_only = profile ? "--profile" : run_long ? "--long" : NULL;
    if ((all || strcmp(what, "start") == 0) && sim_only)
        return cli_error("bench: %s is for 'bench sim' only", sim_only);
    if (strcmp(what, "start") == 0)
        return bench_start(quick);
    const backend_info *b = NULL;
    if (!all) {
        int rc = backend_lookup(what, "bench", false, &b);
        if (!rc && sim_only && b->bench != bench_sim)
            rc = cli_error("bench: %s is for 'bench sim' only", sim_only);
        if (!rc && sim_only)
            return bench_sim_run(quick, profile, run_long);
        return rc ? rc : b->bench(quick);
    }
    int rc = bench_start(quick);
    for (size_t i = 0; rc == CLI_EXIT_OK && (b = backend_at(i)) != NULL; i++) {
        printf("\n");
        rc = b->bench(quick);
    }
    return rc;
}
