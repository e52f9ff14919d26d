/* bench.h - the benchmarks of `commlab bench` that live in their own files. */
#ifndef CL_BENCH_H
#define CL_BENCH_H

#include <stdbool.h>

/* `commlab bench shm` or `bench tcp` (backend "shm" or "tcp"): prints the
 * table beside Open MPI's; returns a CLI_EXIT_* code. */
int bench_transport(const char *backend, bool quick);
/* `commlab bench rdma`: the same, per libfabric provider, beside
 * fi_pingpong. */
int bench_rdma(bool quick);

#endif
