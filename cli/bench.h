/* bench.h - the benchmarks of `commlab bench` that live in their own files. */
#ifndef CL_BENCH_H
#define CL_BENCH_H

#include <stdbool.h>

/* `commlab bench shm`: prints the table; returns a CLI_EXIT_* code. */
int bench_shm(bool quick);
/* `commlab bench rdma`: the same, per libfabric provider, beside
 * fi_pingpong. */
int bench_rdma(bool quick);

#endif
