/* bench.h - the benchmarks of `commlab bench` that live in their own files. */
#ifndef CL_BENCH_H
#define CL_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "commlab.h"
#include "core/record.h"

/* `commlab bench start` (cli/bench_start.c): a command's cost as a whole
 * process; a CLI_EXIT_* code. */
int bench_start(bool quick);
/* Runs `exe argv...` as a whole process; returns the seconds from fork to
 * its exit, or -1 when it cannot start or exits non-zero.  Its stdout goes
 * into out (NUL-terminated; what does not fit in len - 1 bytes is read and
 * dropped) where out is not NULL, else to /dev/null; stderr to /dev/null.
 * *peak_kib, where not NULL, gets its peak resident memory in KiB. */
double bench_process(const char *exe, char *const argv[], char *out, size_t len,
                     long *peak_kib);

/* The backend table's bench entries (cli/backend.h); each returns a
 * CLI_EXIT_* code.  `commlab bench sim`: the simulator's speed. */
int bench_sim(bool quick);
/* The same with bench sim's own options: --profile, --long. */
int bench_sim_run(bool quick, bool profile, bool run_long);
/* The end of `bench sim` (cli/bench_ref.c): commlab and SimGrid simulating
 * the same ring all-reduce and linear all-to-all, timed as whole processes
 * (SimGrid's 1,024-rank all-to-all quoted from a stored run unless
 * run_long).  Prints; a reference that cannot run says so. */
void bench_references(bool run_long);
/* `commlab bench shm` and `bench tcp`: latency and bandwidth beside Open
 * MPI's transport of the same kind. */
int bench_shm(bool quick);
int bench_tcp(bool quick);
/* `commlab bench rdma`: the same, per libfabric provider, beside
 * fi_pingpong. */
int bench_rdma(bool quick);
/* mpi: commlab's ping-pong over the MPI library beside the library's own
 * (cli/row_mpi_bench.c; built with CL_HAVE_MPI). */
int bench_mpi(bool quick);

/* k blocking round trips of bytes between ranks 0 and 1, sent from sbuf
 * and received into rbuf (the OSU latency loop both benchmarks time; one
 * buffer where the reference uses one); other ranks do nothing. */
int bench_round_trips(cl_comm *c, void *sbuf, void *rbuf, size_t bytes, long k);

/* The floor under a shared-memory message (cli/row_real_line.c): the one-way
 * time of one cache line handed between the cores ranks 0 and 1 are bound
 * to, over `samples` (1..LINE_SAMPLES_MAX) samples, waiting with the pause
 * hint between loads or without.  0, or CL_EIO / CL_ENOMEM / CL_EINVAL. */
#define LINE_SAMPLES_MAX 15
int bench_line_floor(int samples, bool pause, cl_stats *out);

/* "median [min-max]" of s into buf, as times (time) or as bandwidths. */
const char *bench_range(char *buf, size_t len, const cl_stats *s, bool time);

/* The Open MPI reference program (real/mpi/mpi_pingpong.c) next to the
 * binary, built now with mpicc where it is missing (cli/row_real_bench.c).
 * Fills prog and returns true, or prints one line saying why not and
 * returns false. */
bool bench_reference_find(char *prog, size_t len);

/* ---- the figures read back from other programs (cli/bench_parse.c) ---- */

/* One size measured both ways. */
typedef struct bench_point {
    cl_stats lat; /* one-way seconds */
    cl_stats bw;  /* bytes per second */
    bool ok;      /* measured */
} bench_point;

/* One line of the reference's output, "size=B lat_us_median=.. lat_us_min=..
 * lat_us_max=.. bw_Bps_median=.. bw_Bps_min=.. bw_Bps_max=..", its newline
 * at most after it: its size into *bytes, its figures (latency in seconds,
 * median, min and max alone) into *out.  CL_EPARSE for anything else (a
 * field missing, renamed or moved, a figure that is not a number above 0,
 * a median outside [min, max], text after it), nothing changed then. */
int bench_pingpong_parse(const char *line, uint64_t *bytes, bench_point *out);

/* The first columns of a row of `run --csv`, whose header begins so. */
#define BENCH_CSV_HEAD "bytes,iters,time_median_s,time_min_s,time_max_s,"
/* One row of `run --csv`: its bytes into *bytes, its time's median, min and
 * max (seconds) and its iterations (n) into *time.  CL_EPARSE for anything
 * else, nothing changed then. */
int bench_csv_parse(const char *line, uint64_t *bytes, cl_stats *time);

#endif
