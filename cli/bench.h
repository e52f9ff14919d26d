/* bench.h - the benchmarks of `commlab bench` that live in their own files. */
#ifndef CL_BENCH_H
#define CL_BENCH_H

#include <stdbool.h>

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
 * (cli/bench_mpi.c; built with CL_HAVE_MPI). */
int bench_mpi(bool quick);

/* k blocking round trips of bytes between ranks 0 and 1, sent from sbuf
 * and received into rbuf (the OSU latency loop both benchmarks time; one
 * buffer where the reference uses one); other ranks do nothing. */
int bench_round_trips(cl_comm *c, void *sbuf, void *rbuf, size_t bytes, long k);

/* The floor under a shared-memory message (cli/bench_line.c): the one-way
 * time of one cache line handed between the cores ranks 0 and 1 are bound
 * to, over `samples` (1..LINE_SAMPLES_MAX) samples, waiting with the pause
 * hint between loads or without.  0, or CL_EIO / CL_ENOMEM / CL_EINVAL. */
#define LINE_SAMPLES_MAX 15
int bench_line_floor(int samples, bool pause, cl_stats *out);

/* "median [min-max]" of s into buf, as times (time) or as bandwidths. */
const char *bench_range(char *buf, size_t len, const cl_stats *s, bool time);

#endif
