/* cmd_bench.c - `commlab bench`: each row of the backend table's
 * benchmark (its bench hook: cli/row_sim_bench.c, cli/row_real_bench.c,
 * cli/row_rdma_bench.c, cli/row_mpi_bench.c) and the start-up's
 * (cli/bench_start.c).  Prints figures; asserts nothing (tests never
 * depend on timing). */
#include <stdlib.h>
#include <string.h>

#include "cli/backend.h"
#include "cli/bench.h"
#include "cli/cli.h"

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
