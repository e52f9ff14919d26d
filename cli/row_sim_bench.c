/* row_sim_bench.c - `commlab bench sim`, the model's row's benchmark
 * (cli/backend.h's bench hook): how fast the simulator runs, then the
 * references beside SimGrid (cli/bench_ref.c).  Prints figures; asserts
 * nothing (tests never depend on timing). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

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
    double t0 = cli_now();
    while (!sim_coro_done(&co))
        sim_coro_resume(&sched, &co);
    double ns = (cli_now() - t0) * 1e9 / (2.0 * (double)p.rounds);
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
            double t0 = cli_now();
            int err = sim_run(&o, &res, &st);
            double t1 = cli_now();
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

int bench_sim_run(bool quick, bool profile, bool run_long)
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
