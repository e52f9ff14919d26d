/* row_mpi_bench.c - `commlab bench mpi`: commlab's ping-pong over the MPI
 * library (`run pingpong --backend mpi --csv`, which starts itself under
 * mpirun) beside the library's own ping-pong (real/mpi/mpi_pingpong.c,
 * OSU's method, under mpirun), both run now, in one table of one-way
 * latencies with their ratio, so the cost of commlab's layer over MPI
 * shows.  Figures only.
 *
 * Both are separate programs; their figures come back as text, read by
 * cli/bench_parse.c, and a figure that is missing or garbled ends the
 * benchmark with an error rather than entering the table. */
#ifdef CL_HAVE_MPI
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/bench.h"
#include "cli/cli.h"
#include "core/diag.h"
#include "core/units.h"
#include "real/mpi/mpib.h"

#define SIZES_MAX 8
#define QUICK_ITERS 20
#define FULL_ITERS 200
#define QUICK_SAMPLES 3 /* the reference's samples a size */
#define FULL_SAMPLES 7

/* The sizes of one side's run and the one-way times it reported. */
typedef struct sweep {
    const char *who;           /* the program, for errors */
    const uint64_t *sizes;     /* the sizes compared */
    size_t n;
    cl_stats time[SIZES_MAX];  /* one-way seconds, by size */
    bool seen[SIZES_MAX];
    bool header;               /* `run --csv`: its header line was read */
} sweep;

/* Reads one line of a side's output into s: false when it is not one. */
typedef bool line_reader(sweep *s, const char *line);

/* Records t as the time of `bytes`: false when that is no size of s. */
static bool take(sweep *s, uint64_t bytes, const cl_stats *t)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->sizes[i] == bytes) {
            s->time[i] = *t;
            s->seen[i] = true;
            return true;
        }
    return false;
}

/* A line of `run --csv`: the header, then one row per size asked for. */
static bool read_commlab(sweep *s, const char *line)
{
    if (!s->header)
        return s->header = strncmp(line, BENCH_CSV_HEAD, strlen(BENCH_CSV_HEAD)) == 0;
    uint64_t bytes;
    cl_stats t;
    return bench_csv_parse(line, &bytes, &t) == 0 && take(s, bytes, &t);
}

/* A line of the reference: it sweeps every doubling up to the largest
 * size, so a size not compared is read and left. */
static bool read_library(sweep *s, const char *line)
{
    uint64_t bytes;
    bench_point pt;
    if (bench_pingpong_parse(line, &bytes, &pt))
        return false;
    take(s, bytes, &pt.lat);
    return true;
}

/* Runs the shell command cmd (its stderr passed through) and reads every
 * line of its stdout with read.  CLI_EXIT_OK, or CLI_EXIT_FAILED after
 * saying why: it could not run or failed (having said why itself), a
 * line is not one of its figures, or a size has none. */
static int run_side(const char *cmd, line_reader *read, sweep *s)
{
    cl_diag d = {{0}};
    fflush(stdout);
    FILE *p = popen(cmd, "r");
    if (!p) {
        diag_set(&d, CL_EIO, "bench mpi: cannot start %s: %s", s->who, strerror(errno));
        return cli_diag(&d, CLI_EXIT_FAILED);
    }
    char line[512];
    /* Read to the end even past a bad line: the program must not block on
     * a full pipe, and its exit status says more than its output. */
    while (fgets(line, sizeof line, p))
        if (!d.msg[0] && !read(s, line))
            diag_set(&d, CL_EPARSE, "bench mpi: %s printed '%.*s', which is not one of its "
                     "figures", s->who, (int)strcspn(line, "\n"), line);
    int st = pclose(p);
    if (st == -1 || !WIFEXITED(st))
        diag_set(&d, CL_EIO, "bench mpi: %s did not exit normally", s->who);
    else if (WEXITSTATUS(st) != 0)
        diag_set(&d, CL_EIO, "bench mpi: %s exited %d", s->who, WEXITSTATUS(st));
    for (size_t i = 0; !d.msg[0] && i < s->n; i++)
        if (!s->seen[i])
            diag_set(&d, CL_EPARSE, "bench mpi: %s printed no figures for %llu bytes", s->who,
                     (unsigned long long)s->sizes[i]);
    return d.msg[0] ? cli_diag(&d, CLI_EXIT_FAILED) : CLI_EXIT_OK;
}

/* The sizes compared: 8 B, 64 KiB and 1 MiB (quick), else 8 B to 4 MiB by
 * x8; how many. */
static size_t sizes_of(bool quick, uint64_t sizes[SIZES_MAX])
{
    static const uint64_t few[] = {8, 64 << 10, 1 << 20};
    if (quick) {
        memcpy(sizes, few, sizeof few);
        return sizeof few / sizeof few[0];
    }
    size_t n = 0;
    for (uint64_t b = 8; b <= 4u << 20; b *= 8)
        sizes[n++] = b;
    return n;
}

/* commlab's side: `run pingpong --backend mpi` at the sizes, its CSV read
 * into ours.  Warm buffers, as the reference's own loop keeps them (it
 * never writes them between round trips). */
static int run_commlab(const char *exe, int iters, sweep *ours)
{
    char list[SIZES_MAX * 12] = "", cmd[PATH_MAX + 256];
    for (size_t i = 0; i < ours->n; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%llu", i ? "," : "",
                 (unsigned long long)ours->sizes[i]);
    snprintf(cmd, sizeof cmd, "'%s' run pingpong --backend mpi --sizes %s --iters %d "
             "--cache warm --csv", exe, list, iters);
    return run_side(cmd, read_commlab, ours);
}

/* The library's side: prog under mpirun from 8 B to the largest size. */
static int run_library(const char *prog, int samples, sweep *lib)
{
    char cmd[PATH_MAX + 256];
    snprintf(cmd, sizeof cmd, "mpirun %s--oversubscribe -q -np 2 '%s' 8 %llu %d",
             geteuid() == 0 ? "--allow-run-as-root " : "", prog,
             (unsigned long long)lib->sizes[lib->n - 1], samples);
    return run_side(cmd, read_library, lib);
}

/* The table: commlab's median [min-max], the library's median and their
 * ratio by size ("-" where the library's side is missing). */
static void print_table(const sweep *ours, const sweep *lib, bool have_lib)
{
    printf("%-8s %-30s %-12s %s\n", "size", "commlab latency", "library", "ratio");
    for (size_t i = 0; i < ours->n; i++) {
        char sz[UNITS_BUF], l[96], ml[UNITS_BUF] = "-", r[16] = "-";
        if (have_lib) {
            units_time_digits(ml, lib->time[i].median, 3);
            snprintf(r, sizeof r, "%.2f", ours->time[i].median / lib->time[i].median);
        }
        printf("%-8s %-30s %-12s %s\n", units_size_str(sz, ours->sizes[i]),
               bench_range(l, sizeof l, &ours->time[i], true), ml, r);
    }
    if (have_lib)
        printf("\nratio: commlab / the library's own (below 1 is faster)\n");
}

int bench_mpi(bool quick)
{
    char exe[PATH_MAX], lib[256], prog[PATH_MAX + 20];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0)
        return cli_error("bench mpi: cannot find this program");
    exe[len] = 0;
    cl_diag d = {{0}};
    if (mpib_library(lib, sizeof lib, &d))
        return cli_diag(&d, CLI_EXIT_FAILED);
    uint64_t sizes[SIZES_MAX];
    size_t n = sizes_of(quick, sizes);
    int iters = quick ? QUICK_ITERS : FULL_ITERS, samples = quick ? QUICK_SAMPLES : FULL_SAMPLES;
    sweep ours = {.who = "'run pingpong --backend mpi --csv'", .sizes = sizes, .n = n};
    sweep ref = {.who = "the library's ping-pong", .sizes = sizes, .n = n};
    printf("mpi: one-way latency (round trip / 2) over %s, median [min-max].\n"
           "commlab: `run pingpong --backend mpi --cache warm`, one round trip a sample,\n"
           "%d samples.  library: its own ping-pong (real/mpi/mpi_pingpong.c, OSU's method:\n"
           "up to 1,000 blocking MPI_Send/MPI_Recv round trips a sample, %d samples).\n"
           "Both under mpirun, in this run.\n\n", lib, iters, samples);
    fprintf(stderr, "bench mpi: measuring commlab over %s ...\n", lib);
    int rc = run_commlab(exe, iters, &ours);
    if (rc != CLI_EXIT_OK)
        return rc;
    bool have_ref = bench_reference_find(prog, sizeof prog);
    if (have_ref) {
        fprintf(stderr, "bench mpi: measuring the library's own ping-pong (%s) ...\n", prog);
        rc = run_library(prog, samples, &ref);
    }
    print_table(&ours, &ref, have_ref && rc == CLI_EXIT_OK);
    return rc;
}
#endif
