/* cmd_run.c - `commlab run PATTERN` and `commlab patterns`. */
#include <assert.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/pattern.h"
#include "cli/run_check.h"
#include "cli/run_print.h"
#include "cli/run_size.h"
#include "cli/student.h"
#include "core/record.h"
#include "core/trace.h"
#include "core/units.h"

const char cmd_run_usage[] =
    "usage: commlab run PATTERN [options]\n"
    "       commlab run COLLECTIVE [--algo NAME|all] [options]\n"
    "       commlab run FILE.c [options]\n"
    "\n"
    "Runs a pattern on every rank and reports its time per message size.\n"
    "`commlab patterns` lists the patterns, and the collectives with their\n"
    "algorithms: `run allreduce --algo ring` is the pattern allreduce-ring, `run\n"
    "allreduce` its default algorithm, `--algo all` every one side by side.  A\n"
    "collective's table adds nccl-tests' algbw (size / time) and busbw (algbw x\n"
    "2(K-1)/K for allreduce; (K-1)/K for allgather, reducescatter, alltoall,\n"
    "gather, scatter; 1 for broadcast, reduce).  A FILE.c (a name ending in .c or\n"
    "holding a '/') is your own pattern: it includes commlab.h and defines\n"
    "int pattern(cl_comm *c, const cl_args *a); commlab compiles it with cc\n"
    "($CC) into a temporary shared object and runs it on any backend.\n"
    "\n"
    "  -b, --backend NAME       sim (modeled; the default), shm (measured: one\n"
    "                           process per rank over shared memory), tcp (one\n"
    "                           process per rank over TCP sockets), rdma (one\n"
    "                           process per rank through libfabric) or mpi (one MPI\n"
    "                           process per rank; started under mpirun -np N when\n"
    "                           not started by mpirun or srun)\n"
    "  -n, --ranks N            ranks (default 2)\n"
    "      --bytes SIZE         message size (default 1MiB)\n"
    "  -s, --sizes LIST         several sizes: 8,1KiB,4MiB or 8:4MiB:x4\n"
    "  -i, --iters N            timed iterations (default: 1 modeled, the model is\n"
    "                           exact; 10 measured)\n"
    "      --warmup N           untimed iterations first (default: 0 modeled, 2 measured)\n"
    "      --eager-limit SIZE   largest message sent eagerly (default 64KiB); larger\n"
    "                           ones wait for the matching receive (rendezvous)\n"
    "      --check              also checksum every message; measured runs then run\n"
    "                           the pattern's data checks on every iteration, not\n"
    "                           only on the warm-up and the first timed one\n"
    "      --timeout TIME       end a run that takes longer than this per size (default\n"
    "                           600s; 0: no limit), saying which rank made no progress\n"
    "                           and in which call (a stopped rank is named as such),\n"
    "                           or that the ranks were still making progress; exit 4\n"
    "      --debug              catch misused buffers, on every backend: a send buffer\n"
    "                           modified before its send completed, a receive buffer\n"
    "                           written or used before its receive completed (until\n"
    "                           then it holds the poison byte 0xdb, which a failed\n"
    "                           data check points out); exit 1 with the rank, the\n"
    "                           call and the buffer.  Off by default: it hashes and\n"
    "                           copies every non-blocking message's buffer\n"
    "measured (shm, tcp, rdma, mpi):\n"
    "      --bind WHERE         core (one core per rank, spread; the default) or none\n"
    "      --deadlock-timeout TIME  report a deadlock after every rank has been\n"
    "                           blocked this long with no progress (default 2s)\n"
    "      --sync WAY           when each timed iteration starts: window (every rank\n"
    "                           at one release time the barrier hands out, a little\n"
    "                           ahead, on the common clock; clocks of ranks started\n"
    "                           apart are offset-corrected; the default) or barrier\n"
    "                           (each rank when the barrier lets it go, so a rank's\n"
    "                           time counts the others' lateness); the start skew,\n"
    "                           the spread of the ranks' starts, is in --json\n"
    "      --cache MODE         where the lines of each rank's cl_alloc buffers are\n"
    "                           when an iteration starts, set before its barrier:\n"
    "                           fresh (every line written back unchanged by the\n"
    "                           rank's core, as a producer that just computed its\n"
    "                           data; the default), warm (left as the last iteration\n"
    "                           left them) or cold (flushed from every cache)\n"
    "      --shm-copy WAY       messages above the eager limit: auto (one copy with\n"
    "                           process_vm_readv, staging if refused; the default),\n"
    "                           cma (one copy or fail) or staging (through the ring);\n"
    "                           shm only\n"
    "      --listen ADDR        tcp: the numeric address ranks listen on (default\n"
    "                           127.0.0.1); every connection proves a per-job secret\n"
    "      --netlab RATE        tcp, root only: every rank in a network namespace of\n"
    "                           its own, all joined by a bridge through veth ports\n"
    "                           limited to RATE each way with tc tbf (e.g. 1Gbit/s): a\n"
    "                           switch whose shared ports show contention (incast);\n"
    "                           removed at the end, on Ctrl-C and on failure\n"
    "processes started elsewhere (tcp, rdma; one process per rank):\n"
    "      --rank R --world N   this process is rank R of N; or from the environment:\n"
    "                           RANK/WORLD_SIZE (torchrun's), OMPI_COMM_WORLD_RANK/\n"
    "                           SIZE (mpirun), PMI_RANK/SIZE, SLURM_PROCID/NTASKS (srun)\n"
    "      --master HOST:PORT   rank 0's rendezvous (or MASTER_ADDR and MASTER_PORT);\n"
    "                           not needed when mpirun or srun put every rank on this\n"
    "                           host.  Across hosts, set COMMLAB_SECRET (the same\n"
    "                           everywhere, random, 128+ bits: openssl rand -hex 16):\n"
    "                           every process proves it\n"
    "      --join-timeout TIME  how long rank 0 waits for the others (default 60s)\n"
    "      --provider NAME      rdma: the libfabric provider: auto (shm on one host;\n"
    "                           the default), shm, tcp, verbs, efa, ... (`commlab\n"
    "                           fabric` lists the ones here)\n"
    "model (sim):\n"
    "  -t, --tier NAME          every pair of ranks on its own link of this tier\n"
    "                           (default nvlink; tiers from configs/tiers.yaml)\n"
    "      --topology FILE      hosts, switches and links from a YAML file instead\n"
    "  -c, --config FILE        tiers file (default configs/tiers.yaml)\n"
    "      --model NAME         alphabeta (the default)\n"
    "      --sharing HOW        maxmin (the default): messages that cross one link\n"
    "                           direction at the same time share its bandwidth,\n"
    "                           max-min fair (a --tier run gives each rank one port\n"
    "                           in and one out behind a non-blocking switch); none:\n"
    "                           every message is priced alone.  A --model file is\n"
    "                           always none: its calibration holds what it shares\n"
    "      --model FILE.yaml    a machine file from `commlab calibrate`: every pair of\n"
    "                           ranks costs its calibrated piecewise alpha + n/B (the\n"
    "                           rendezvous handshake is inside it); its eager limit is\n"
    "                           the default; not with --tier, --topology, --config\n"
    "      --reduce-bandwidth RATE  how fast a rank reduces (cl_reduce_local), for\n"
    "                           every type: overrides the tier's or topology's\n"
    "                           reduce_bandwidth (default 680GB/s, an A100's memory\n"
    "                           speed over 3); inf: reducing is free\n"
    "      --rendezvous-handshake  rendezvous also pays the 2 alpha request/clear-to-\n"
    "                           send round trip (off: the course's figures stay exact)\n"
    "      --no-payload         move no bytes, skip data checks (scale runs)\n"
    "      --stack-size SIZE    per-rank stack (default 64KiB)\n"
    "pattern options:\n"
    "      --fix WAY            deadlock: order or nonblocking\n"
    "      --microbatches M     pipeline: microbatches (default 4)\n"
    "      --compute TIME       pipeline: compute per stage per microbatch (e.g. 1ms)\n"
    "      --schedule NAME      pipeline: gpipe (all forwards, then all backwards;\n"
    "                           the default) or 1f1b (one forward, one backward)\n"
    "      --chunk SIZE         chunked, broadcast-chain: bytes per piece (default SIZE/8)\n"
    "      --pieces N           relay-chunked: pieces (default 8); overlap: gradient\n"
    "                           buckets (default 4), each computed for --compute\n"
    "      --algo NAME          a collective's algorithm (`commlab patterns`), or all\n"
    "      --library            mpi: the MPI library's own call for the collective\n"
    "                           (MPI_Allreduce, ...), from the same data and with the\n"
    "                           same check, as a row \"library\" after the --algo ones\n"
    "                           (alone without --algo)\n"
    "      --group G            allreduce-hierarchical: ranks per group (default: the\n"
    "                           topology's first dimension; else all ranks, one group);\n"
    "                           grid: ranks per data-parallel group, dividing the\n"
    "                           ranks (default: the topology's first dimension, else 2)\n"
    "      --op OP              reduce, allreduce, reducescatter (and a FILE.c, as\n"
    "                           a->op): sum (the default), avg, prod, min, max, band,\n"
    "                           bor, bxor\n"
    "      --dtype TYPE         their elements (a->dtype): f64 (the default), f32,\n"
    "                           bf16, f16, i32, i64; band, bor, bxor take i32 and i64.\n"
    "                           Reducing costs modeled ranks gamma = 1 / the tier's or\n"
    "                           topology's reduce_bandwidth per byte\n"
    "output:\n"
    "      --trace FILE.json    Perfetto / chrome://tracing timeline (one size only)\n"
    "      --timeline FILE.csv  the last iteration's records per rank, for\n"
    "                           `commlab plot` (one size only; written for a\n"
    "                           deadlocked run too)\n"
    "      --csv, --json        machine-readable results\n"
    "  -h, --help               this text\n"
    "\n"
    "exit status: 0 ok, 1 a data check failed (or --debug caught a misuse), 2 bad\n"
    "usage, 3 deadlock (the wait-for report is printed), 4 a rank failed (crashed,\n"
    "called exit(), overflowed its stack, or ran past --timeout), 128+N stopped by\n"
    "signal N (Ctrl-C: 130)\n"
    "\n"
    "examples:\n"
    "  commlab run pingpong --tier infiniband --bytes 256MiB\n"
    "  commlab run deadlock --bytes 1MiB            # deadlocks: exit 3\n"
    "  commlab run deadlock --bytes 1MiB --fix order\n"
    "  commlab run pingpong --backend shm --sizes 8:4MiB:x8\n"
    "  commlab run deadlock --backend shm --bytes 1MiB   # measured: exit 3 too\n"
    "  commlab run pingpong --backend tcp --sizes 8:4MiB:x8\n"
    "  sudo commlab run pingpong --backend tcp --netlab 1Gbit/s --bytes 16MiB\n"
    "  mpirun -np 4 commlab run ring --backend tcp\n"
    "  COMMLAB_SECRET=... commlab run ring --backend tcp --rank 1 --world 2 \\\n"
    "      --master node0:29500                          # on the second host\n"
    "  commlab run pingpong --backend rdma --provider tcp --sizes 8:4MiB:x8\n"
    "  commlab run allreduce-ring -n 16 --tier infiniband --bytes 256MiB --no-payload\n"
    "  commlab run allreduce --algo all -n 16 --topology configs/topologies/dgx-2node.yaml\n"
    "  commlab run ./myring.c -n 4                 # your own pattern\n"
    "  commlab run ./myring.c -n 4 --debug         # ... checked for misused buffers\n";

const char cmd_patterns_usage[] =
    "usage: commlab patterns\n"
    "\n"
    "Lists the built-in patterns with a line each, then the collectives with\n"
    "their algorithms (`commlab run COLLECTIVE --algo NAME`; the first listed\n"
    "is the default) and each algorithm's alpha-beta formula.\n";

/* Long options without a short letter. */
enum {
    OPT_CSV = 256, OPT_JSON, OPT_BYTES, OPT_WARMUP, OPT_TOPOLOGY, OPT_MODEL, OPT_EAGER,
    OPT_HANDSHAKE, OPT_NO_PAYLOAD, OPT_STACK, OPT_FIX, OPT_MICRO, OPT_COMPUTE, OPT_CHUNK,
    OPT_TRACE, OPT_CHECK, OPT_BIND, OPT_DEADLOCK_TIMEOUT, OPT_SYNC, OPT_SHM_COPY, OPT_LISTEN,
    OPT_MASTER, OPT_RANK, OPT_WORLD, OPT_JOIN_TIMEOUT, OPT_TIMELINE, OPT_PROVIDER,
    OPT_DEBUG, OPT_NETLAB, OPT_SHARING, OPT_TIMEOUT, OPT_ALGO, OPT_GROUP, OPT_LIBRARY,
    OPT_PIECES, OPT_SCHEDULE, OPT_CACHE, OPT_OP, OPT_DTYPE, OPT_REDUCE_BW,
};

/* How an option's value is kept: parsed by parse_value (a number, a
 * choice, or not a field of run_opts), or stored in the run_opts field
 * the row names: the text itself, or a flag set or cleared. */
enum { KEEP_PARSE, KEEP_TEXT, KEEP_TRUE, KEEP_FALSE };

#define ANY_BACKEND (-1) /* an option every backend takes */

/* One option of `commlab run`: getopt_long's name, argument and value,
 * the group of options not every backend takes that the backend table
 * refuses it in (cli/backend.h), and where its value goes.  `at` is an
 * offsetof, checked by nothing but the row: a KEEP_TEXT row names a
 * const char * field, a KEEP_TRUE or KEEP_FALSE row a bool. */
typedef struct run_option {
    const char *name; /* the long option */
    int has_arg;      /* required_argument or no_argument */
    int val;          /* its short letter, or an OPT_* */
    int group;        /* BOPT_*, or ANY_BACKEND */
    int keep;         /* KEEP_* */
    size_t at;        /* the field of run_opts, unless KEEP_PARSE */
} run_option;

#define ARG required_argument
#define NOARG no_argument
#define PARSE KEEP_PARSE, 0
#define TEXT(field) KEEP_TEXT, offsetof(run_opts, field)
#define SET(field) KEEP_TRUE, offsetof(run_opts, field)
#define CLEAR(field) KEEP_FALSE, offsetof(run_opts, field)

/* In the order cli_bad_option proposes the nearest of. */
static const run_option options[] = {
    {"backend", ARG, 'b', ANY_BACKEND, TEXT(backend)},
    {"ranks", ARG, 'n', ANY_BACKEND, PARSE},
    {"bytes", ARG, OPT_BYTES, ANY_BACKEND, PARSE},
    {"sizes", ARG, 's', ANY_BACKEND, PARSE},
    {"iters", ARG, 'i', ANY_BACKEND, PARSE},
    {"warmup", ARG, OPT_WARMUP, ANY_BACKEND, PARSE},
    {"tier", ARG, 't', BOPT_MODEL, TEXT(sim.tier)},
    {"topology", ARG, OPT_TOPOLOGY, BOPT_MODEL, TEXT(sim.topology)},
    {"config", ARG, 'c', BOPT_MODEL, TEXT(sim.config)},
    {"model", ARG, OPT_MODEL, BOPT_MODEL, TEXT(sim.model)},
    {"eager-limit", ARG, OPT_EAGER, ANY_BACKEND, PARSE},
    {"rendezvous-handshake", NOARG, OPT_HANDSHAKE, BOPT_MODEL, SET(sim.handshake)},
    {"no-payload", NOARG, OPT_NO_PAYLOAD, BOPT_MODEL, CLEAR(payload)},
    {"stack-size", ARG, OPT_STACK, BOPT_MODEL, PARSE},
    {"fix", ARG, OPT_FIX, ANY_BACKEND, TEXT(args.fix)},
    {"microbatches", ARG, OPT_MICRO, ANY_BACKEND, PARSE},
    {"compute", ARG, OPT_COMPUTE, ANY_BACKEND, PARSE},
    {"schedule", ARG, OPT_SCHEDULE, ANY_BACKEND, TEXT(args.schedule)},
    {"chunk", ARG, OPT_CHUNK, ANY_BACKEND, PARSE},
    {"pieces", ARG, OPT_PIECES, ANY_BACKEND, PARSE},
    {"algo", ARG, OPT_ALGO, ANY_BACKEND, TEXT(algo)},
    {"library", NOARG, OPT_LIBRARY, ANY_BACKEND, SET(library)},
    {"group", ARG, OPT_GROUP, ANY_BACKEND, PARSE},
    {"op", ARG, OPT_OP, ANY_BACKEND, PARSE},
    {"dtype", ARG, OPT_DTYPE, ANY_BACKEND, PARSE},
    {"trace", ARG, OPT_TRACE, ANY_BACKEND, TEXT(trace)},
    {"timeline", ARG, OPT_TIMELINE, ANY_BACKEND, TEXT(timeline)},
    {"check", NOARG, OPT_CHECK, ANY_BACKEND, SET(check)},
    {"debug", NOARG, OPT_DEBUG, ANY_BACKEND, SET(debug)},
    {"sharing", ARG, OPT_SHARING, BOPT_MODEL, PARSE},
    {"reduce-bandwidth", ARG, OPT_REDUCE_BW, BOPT_MODEL, PARSE},
    {"bind", ARG, OPT_BIND, BOPT_MEASURED, PARSE},
    {"deadlock-timeout", ARG, OPT_DEADLOCK_TIMEOUT, BOPT_MEASURED, PARSE},
    {"sync", ARG, OPT_SYNC, BOPT_MEASURED, PARSE},
    {"cache", ARG, OPT_CACHE, BOPT_MEASURED, PARSE},
    {"timeout", ARG, OPT_TIMEOUT, ANY_BACKEND, PARSE},
    {"shm-copy", ARG, OPT_SHM_COPY, BOPT_SHM_COPY, PARSE},
    {"listen", ARG, OPT_LISTEN, BOPT_LISTEN, TEXT(real.listen)},
    {"master", ARG, OPT_MASTER, BOPT_WORLD, TEXT(real.wargs.master)},
    {"rank", ARG, OPT_RANK, BOPT_WORLD, PARSE},
    {"world", ARG, OPT_WORLD, BOPT_WORLD, PARSE},
    {"join-timeout", ARG, OPT_JOIN_TIMEOUT, BOPT_WORLD, PARSE},
    {"provider", ARG, OPT_PROVIDER, BOPT_PROVIDER, TEXT(real.provider)},
    {"netlab", ARG, OPT_NETLAB, BOPT_NETLAB, PARSE},
    {"csv", NOARG, OPT_CSV, ANY_BACKEND, PARSE},
    {"json", NOARG, OPT_JSON, ANY_BACKEND, PARSE},
    {"help", NOARG, 'h', ANY_BACKEND, PARSE},
};
#define NOPTIONS (sizeof options / sizeof *options)

/* The row of getopt_long's value c, or NULL ('?', ':': not an option). */
static const run_option *option_of(int c)
{
    for (size_t i = 0; i < NOPTIONS; i++)
        if (options[i].val == c)
            return &options[i];
    return NULL;
}

static int parse_size_opt(const char *opt, const char *text, uint64_t *out)
{
    cl_diag d = {{0}};
    if (units_parse_size(text, opt, out, &d))
        return cli_diag(&d, CLI_EXIT_USAGE);
    return 0;
}

/* A time from lo (lo_text) to an hour into *out. */
static int parse_time_within(const char *opt, const char *text, double lo, const char *lo_text,
                             double *out)
{
    cl_diag d = {{0}};
    if (units_parse_time(text, opt, out, &d))
        return cli_diag(&d, CLI_EXIT_USAGE);
    if (!(*out >= lo && *out <= 3600))
        return cli_error("%s must be between %s and 1h, got '%s'", opt, lo_text, text);
    return 0;
}

/* The value text of a KEEP_PARSE option r into o (--bytes and --sizes
 * into *bytes and *sizes, parsed once the pattern is known).  0, -1
 * after --help's text, or the exit status after printing why. */
static int parse_value(run_opts *o, const run_option *r, const char *text, const char **bytes,
                       const char **sizes)
{
    switch (r->val) {
    case 'n':
        o->ranks_given = true;
        return cli_parse_int("--ranks", text, 1, 1 << 24, &o->ranks);
    case 'i': return cli_parse_int("--iters", text, 1, 1000000, &o->iters);
    case OPT_WARMUP: return cli_parse_int("--warmup", text, 0, 1000000, &o->warmup);
    case OPT_RANK:
        return cli_parse_int("--rank", text, 0, RUN_WORLD_MAX_RANKS - 1, &o->real.wargs.rank);
    case OPT_WORLD:
        return cli_parse_int("--world", text, 1, RUN_WORLD_MAX_RANKS, &o->real.wargs.world);
    case OPT_JOIN_TIMEOUT:
        return parse_time_within("--join-timeout", text, 0.1, "100ms", &o->real.wargs.join_timeout);
    case OPT_DEADLOCK_TIMEOUT:
        return parse_time_within("--deadlock-timeout", text, 0.01, "10ms",
                                 &o->real.deadlock_timeout);
    case OPT_BYTES: *bytes = text; return 0;
    case 's': *sizes = text; return 0;
    case OPT_EAGER:
        o->eager_given = true;
        return parse_size_opt("--eager-limit", text, &o->eager_limit);
    case OPT_STACK: return parse_size_opt("--stack-size", text, &o->sim.stack);
    case OPT_MICRO: case OPT_COMPUTE: case OPT_CHUNK: case OPT_GROUP: case OPT_PIECES:
        return run_pattern_option(r->name, text, &o->args);
    case OPT_OP: case OPT_DTYPE: return run_parse_reduction(o, r->name, text);
    case OPT_SHARING: return run_parse_sharing(text, o);
    case OPT_REDUCE_BW: return run_parse_reduce_bandwidth(text, &o->sim.reduce_bw);
    case OPT_BIND: return cli_parse_bind(text, &o->real.bind);
    case OPT_TIMEOUT: return run_parse_timeout(text, &o->timeout);
    case OPT_SYNC: return run_parse_sync(text, &o->real.sync);
    case OPT_CACHE: return run_parse_cache(text, &o->real.cache);
    case OPT_NETLAB: return run_parse_netlab(text, &o->real.netlab);
    case OPT_SHM_COPY: return run_parse_copy(text, &o->real.copy);
    case OPT_CSV: o->fmt = CLI_CSV; return 0;
    case OPT_JSON: o->fmt = CLI_JSON; return 0;
    case 'h': fputs(cmd_run_usage, stdout); return -1;
    }
    assert(!"a KEEP_PARSE option parse_value does not know");
    return CLI_EXIT_USAGE;
}

/* The command line into o: 0, -1 after --help's text, or the exit status
 * after printing why. */
static int parse_args(int argc, char **argv, run_opts *o)
{
    struct option opts[NOPTIONS + 1] = {{0}};
    for (size_t i = 0; i < NOPTIONS; i++)
        opts[i] = (struct option){options[i].name, options[i].has_arg, NULL, options[i].val};
    const char *bytes_s = NULL, *sizes_s = NULL;
    cl_diag d = {{0}};
    int c, rc = 0;
    while (!rc && (c = getopt_long(argc, argv, ":b:n:s:i:t:c:h", opts, NULL)) != -1) {
        const run_option *r = option_of(c);
        if (!r)
            return cli_bad_option("run", opts, argv, c);
        /* Remember the first option of each group that not every backend
         * takes, for the backend table to refuse (cli/backend.h). */
        if (r->group != ANY_BACKEND)
            backend_give(&o->given, r->group, r->name, optarg);
        char *field = (char *)o + r->at;
        if (r->keep == KEEP_TEXT)
            *(const char **)field = optarg;
        else if (r->keep != KEEP_PARSE)
            *(bool *)field = r->keep == KEEP_TRUE;
        else
            rc = parse_value(o, r, optarg, &bytes_s, &sizes_s);
    }
    if (rc)
        return rc;
    if (optind >= argc)
        return cli_error("run: which pattern? (`commlab patterns` lists them)\n"
                         "try 'commlab help run'");
    const char *name = argv[optind++];
    if ((rc = cli_no_extra("run", argc, argv)))
        return rc;
    if ((rc = run_find_pattern(o, name)))
        return rc;
    if (bytes_s && sizes_s)
        return cli_error("run: give either --bytes or --sizes, not both");
    if (sizes_s)
        rc = units_parse_sizes(sizes_s, "--sizes", &o->sizes, &o->nsizes, &d);
    else
        rc = units_parse_sizes(bytes_s ? bytes_s : "1MiB", "--bytes", &o->sizes, &o->nsizes, &d);
    if (rc)
        return cli_diag(&d, CLI_EXIT_USAGE);
    return 0;
}

/* Every size of the nalgos patterns of algos into lines (size i of
 * algorithm a at i * nalgos + a), until one fails; *done counts the rows
 * filled.  Returns the last run's status (0 or a CL_E* code, reported). */
static int run_rows(run_opts *o, run_env *env, const pattern_info **algos, size_t nalgos,
                    run_algo_row *lines, rec_log *log, size_t *done)
{
    int status = 0;
    /* --algo all, --library: every size of one algorithm, then the next,
     * printed size by size so the algorithms of one size stand side by side. */
    for (size_t a = 0; a < nalgos && status == 0; a++) {
        o->pattern = algos[a];
        for (size_t i = 0; i < o->nsizes && status == 0; i++) {
            rec_log *l = o->trace || o->timeline ? log : NULL;
            run_algo_row *line = &lines[i * nalgos + a];
            line->p = o->pattern;
            status = run_size(o, env, o->sizes[i], l, *done == 0, &line->row);
            *done += status == 0;
        }
    }
    return status;
}

/* --trace's file from log: 0, or the exit status after printing why (a
 * trace asked for and not written is a failed run, as a timeline is). */
static int write_trace(const run_opts *o, const rec_log *log)
{
    cl_diag d = {{0}};
    trace_meta meta = {.pattern = o->pattern->name, .backend = o->backend, .ranks = o->ranks};
    if (log->dropped)
        fprintf(stderr, "commlab: the trace keeps the first %zu records; %zu more were "
                        "dropped\n", log->n, log->dropped);
    if (trace_write_file(o->trace, log->v, log->n, &meta, &d))
        return cli_diag(&d, CLI_EXIT_USAGE);
    if (o->fmt == CLI_TEXT)
        printf("\ntrace: %s (open it in https://ui.perfetto.dev)\n", o->trace);
    return CLI_EXIT_OK;
}

/* --timeline's file from log, for a run whose last status is status, with
 * the backend's words on where it ran: 0, or the exit status after
 * printing why. */
static int write_timeline(const run_opts *o, const backend_desc *desc, const rec_log *log,
                          int status)
{
    const char *where = desc->note[0] ? desc->note : NULL;
    int rc = cli_timeline_write(o->timeline, log, o->pattern->name, o->backend, where,
                                o->ranks, o->sizes[0], status);
    if (!rc && o->fmt == CLI_TEXT)
        printf("%stimeline: %s (draw it with commlab plot)\n", o->trace ? "" : "\n",
               o->timeline);
    return rc;
}

/* `commlab run`: the options, their checks, every row, their print, the
 * trace and the timeline; returns the exit status.  Every way out goes
 * through `out`, which gives back what the command holds (each release
 * also takes what was never made). */
static int run_command(int argc, char **argv, char *secret)
{
    run_opts o = {
        .backend = "sim", .ranks = 2, .iters = 0, .warmup = -1, .sim.model = "alphabeta",
        .eager_limit = RUN_EAGER_LIMIT, .payload = true, .fmt = CLI_TEXT, .real.bind = true,
        .real.deadlock_timeout = 2.0, .timeout = RUN_TIMEOUT_DEFAULT, .args = {.microbatches = 4},
        .real.wargs = {.rank = -1, .world = -1, .secret = secret},
    };
    run_env env = {0};
    backend_desc desc;
    rec_log log;
    rec_log_init(&log, 4u << 20);
    const pattern_info **algos = NULL;
    run_algo_row *lines = NULL;
    int rc = parse_args(argc, argv, &o);
    if (rc == -1) {
        rc = CLI_EXIT_OK; /* --help */
        goto out;
    }
    if (rc || (rc = run_check(&o, &env.session)))
        goto out;
    /* The key is stretched from it (the session's world): its text goes
     * now, so no rank, and no pattern reading its memory, holds it. */
    if (secret)
        cli_wipe(secret, strlen(secret));
    o.real.wargs.secret = NULL;
    if (o.be->enter && (rc = o.be->enter(env.session, &o, argc, argv)) >= 0)
        goto out;
    if ((rc = o.be->start(env.session, &o, &env)))
        goto out;
    size_t nalgos = 0, done = 0;
    while (run_algo_at(&o, nalgos))
        nalgos++;
    algos = calloc(nalgos, sizeof *algos);
    for (size_t a = 0; algos && a < nalgos; a++)
        algos[a] = run_algo_at(&o, a);
    lines = algos ? calloc(nalgos * o.nsizes, sizeof *lines) : NULL;
    if (!lines) {
        rc = cli_error("out of memory");
        goto out;
    }
    int status = run_rows(&o, &env, algos, nalgos, lines, &log, &done);
    o.be->describe(env.session, &o, &env, &desc);
    int lab_rc = backend_close(o.be, env.session), trace_rc = CLI_EXIT_OK;
    env.session = NULL;
    if (done < nalgos * o.nsizes && nalgos > 1)
        done = 0; /* a failed algorithm leaves holes: the error says which */
    if (!env.mute)
        run_print(&o, &env, &desc, lines, done, nalgos > 1, status);
    bool files = status != CL_ENOMEM && !env.signal && !env.mute;
    if (o.trace && files)
        trace_rc = write_trace(&o, &log);
    rc = run_exit_code(status, &env);
    if (rc == CLI_EXIT_OK)
        rc = lab_rc ? lab_rc : trace_rc;
    int wrc = o.timeline && files ? write_timeline(&o, &desc, &log, status) : 0;
    if (wrc && rc == CLI_EXIT_OK)
        rc = wrc;
out:
    if (o.be)
        backend_close(o.be, env.session);
    rec_log_release(&log);
    free(lines);
    free(algos);
    student_unload(&o.student);
    free(o.sizes);
    return rc;
}

/* COMMLAB_SECRET leaves the environment before anything is started (the
 * compiler of a pattern file, the ranks, the pattern itself): only the
 * rendezvous reads it (real/world.h). */
int cmd_run(int argc, char **argv)
{
    char *secret = cli_env_take("COMMLAB_SECRET");
    int rc = run_command(argc, argv, secret);
    cli_env_free(secret);
    return rc;
}

int cmd_patterns(int argc, char **argv)
{
    static const struct option opts[] = {{"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        if (c == 'h') {
            fputs(cmd_patterns_usage, stdout);
            return CLI_EXIT_OK;
        }
        return cli_bad_option("patterns", opts, argv, c);
    }
    int rc = cli_no_extra("patterns", argc, argv);
    if (rc)
        return rc;
    /* Each column as wide as its widest entry. */
    const pattern_info *p;
    int wname = 0, wchap = 0, walgo = 0, wfull = 0, wform = 0;
    for (size_t i = 0; (p = pattern_at(i)) != NULL; i++) {
        int *w = p->collective ? &wfull : &wname;
        *w = (int)fmax(*w, (double)strlen(p->name));
        if (p->collective) {
            walgo = (int)fmax(walgo, (double)strlen(p->algo));
            wform = (int)fmax(wform, (double)strlen(p->formula_text));
        } else {
            wchap = (int)fmax(wchap, (double)strlen(p->chapter));
        }
    }
    for (size_t i = 0; (p = pattern_at(i)) != NULL; i++)
        if (!p->collective)
            printf("%-*s  %-*s  %s\n", wname, p->name, wchap, p->chapter, p->summary);
    printf("\ncollectives (04-collectives): commlab run COLLECTIVE --algo NAME|all; * is the "
           "default;\nthe time of each message alone, n bytes on K ranks, a = alpha, B = "
           "bandwidth\n");
    const collective_info *coll;
    for (size_t i = 0; (coll = collective_at(i)) != NULL; i++) {
        printf("\n%s: %s\n", coll->name, coll->summary);
        for (size_t j = 0; (p = collective_algo_at(coll, j)) != NULL; j++)
            printf("  %-*s %s %-*s  %-*s  %s\n", walgo, p->algo,
                   strcmp(p->algo, coll->algo) == 0 ? "*" : " ", wfull, p->name, wform,
                   p->formula_text, p->summary);
    }
    return CLI_EXIT_OK;
}
