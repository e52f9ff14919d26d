/* cmd_run.c - `commlab run PATTERN` and `commlab patterns`. */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/patterns.h"
#include "core/json.h"
#include "core/record.h"
#include "core/table.h"
#include "core/tier.h"
#include "core/trace.h"
#include "core/units.h"
#include "real/launch.h"
#include "real/rdma.h"
#include "sim/engine.h"
#include "sim/net.h"

const char cmd_run_usage[] =
    "usage: commlab run PATTERN [options]\n"
    "\n"
    "Runs a pattern on every rank and reports its time per message size.\n"
    "`commlab patterns` lists the patterns.\n"
    "\n"
    "  -b, --backend NAME       sim (modeled; the default), shm (measured: one\n"
    "                           process per rank over shared memory), tcp (one\n"
    "                           process per rank over TCP sockets) or rdma (one\n"
    "                           process per rank through libfabric); mpi is not\n"
    "                           built yet\n"
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
    "measured (shm, tcp, rdma):\n"
    "      --bind WHERE         core (one core per rank, spread; the default) or none\n"
    "      --deadlock-timeout TIME  report a deadlock after every rank has been\n"
    "                           blocked this long with no progress (default 2s)\n"
    "      --shm-copy WAY       messages above the eager limit: auto (one copy with\n"
    "                           process_vm_readv, staging if refused; the default),\n"
    "                           cma (one copy or fail) or staging (through the ring);\n"
    "                           shm only\n"
    "      --listen ADDR        tcp: the numeric address ranks listen on (default\n"
    "                           127.0.0.1); every connection proves a per-job secret\n"
    "      --provider NAME      rdma: the libfabric provider: auto (shm on one host;\n"
    "                           the default), shm, tcp, verbs, efa, ... (`commlab\n"
    "                           fabric` lists the ones here)\n"
    "model (sim):\n"
    "  -t, --tier NAME          every pair of ranks on its own link of this tier\n"
    "                           (default nvlink; tiers from configs/tiers.yaml)\n"
    "      --topology FILE      hosts, switches and links from a YAML file instead\n"
    "  -c, --config FILE        tiers file (default configs/tiers.yaml)\n"
    "      --model NAME         alphabeta (the default; flow is not built yet)\n"
    "      --rendezvous-handshake  rendezvous also pays the 2 alpha request/clear-to-\n"
    "                           send round trip (off: the course's figures stay exact)\n"
    "      --no-payload         move no bytes, skip data checks (scale runs)\n"
    "      --stack-size SIZE    per-rank stack (default 64KiB)\n"
    "pattern options:\n"
    "      --fix WAY            deadlock: order or nonblocking\n"
    "      --microbatches M     pipeline: microbatches (default 4)\n"
    "      --compute TIME       pipeline: compute per stage per microbatch (e.g. 1ms)\n"
    "      --chunk SIZE         chunked: bytes per piece (default SIZE/8)\n"
    "output:\n"
    "      --trace FILE.json    Perfetto / chrome://tracing timeline (one size only)\n"
    "      --csv, --json        machine-readable results\n"
    "  -h, --help               this text\n"
    "\n"
    "exit status: 0 ok, 1 a data check failed, 2 bad usage, 3 deadlock (the wait-for\n"
    "report is printed), 4 a rank failed, 128+N stopped by signal N (Ctrl-C: 130)\n"
    "\n"
    "examples:\n"
    "  commlab run pingpong --tier infiniband --bytes 256MiB\n"
    "  commlab run deadlock --bytes 1MiB            # deadlocks: exit 3\n"
    "  commlab run deadlock --bytes 1MiB --fix order\n"
    "  commlab run pingpong --backend shm --sizes 8:4MiB:x8\n"
    "  commlab run deadlock --backend shm --bytes 1MiB   # measured: exit 3 too\n"
    "  commlab run pingpong --backend tcp --sizes 8:4MiB:x8\n"
    "  commlab run pingpong --backend rdma --provider tcp --sizes 8:4MiB:x8\n"
    "  commlab run allreduce-ring -n 16 --tier infiniband --bytes 256MiB --no-payload\n";

const char cmd_patterns_usage[] =
    "usage: commlab patterns\n"
    "\n"
    "Lists the built-in patterns with a line each.\n";

enum {
    OPT_CSV = 256, OPT_JSON, OPT_BYTES, OPT_WARMUP, OPT_TOPOLOGY, OPT_MODEL, OPT_EAGER,
    OPT_HANDSHAKE, OPT_NO_PAYLOAD, OPT_STACK, OPT_FIX, OPT_MICRO, OPT_COMPUTE, OPT_CHUNK,
    OPT_TRACE, OPT_CHECK, OPT_BIND, OPT_DEADLOCK_TIMEOUT, OPT_SHM_COPY, OPT_LISTEN,
    OPT_PROVIDER,
};

typedef struct run_opts {
    const pattern_info *pattern;
    const char *backend;
    int ranks;
    uint64_t *sizes;
    size_t nsizes;
    int iters, warmup;
    const char *tier, *topology, *config, *model, *trace;
    uint64_t eager_limit, stack;
    bool handshake, payload;
    bool measured;          /* a real backend, not sim */
    bool check, bind;
    shm_copy copy;
    const char *listen;     /* tcp: --listen ADDR */
    const char *provider;   /* rdma: --provider NAME */
    double deadlock_timeout;
    const char *model_only; /* the first sim-only option given */
    const char *real_only;  /* the first measured-only option given */
    const char *shm_only;   /* --shm-copy, if given */
    cl_args args;
    cli_format fmt;
} run_opts;

static int parse_int(const char *opt, const char *text, int min, int max, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (!*text || *end || errno || v < min || v > max)
        return cli_error("%s must be an integer in %d..%d, got '%s'", opt, min, max, text);
    *out = (int)v;
    return 0;
}

static int parse_size_opt(const char *opt, const char *text, uint64_t *out)
{
    cl_diag d = {{0}};
    if (units_parse_size(text, opt, out, &d))
        return cli_diag(&d, CLI_EXIT_USAGE);
    return 0;
}

static int parse_args(int argc, char **argv, run_opts *o)
{
    static const struct option opts[] = {
        {"backend", required_argument, NULL, 'b'},
        {"ranks", required_argument, NULL, 'n'},
        {"bytes", required_argument, NULL, OPT_BYTES},
        {"sizes", required_argument, NULL, 's'},
        {"iters", required_argument, NULL, 'i'},
        {"warmup", required_argument, NULL, OPT_WARMUP},
        {"tier", required_argument, NULL, 't'},
        {"topology", required_argument, NULL, OPT_TOPOLOGY},
        {"config", required_argument, NULL, 'c'},
        {"model", required_argument, NULL, OPT_MODEL},
        {"eager-limit", required_argument, NULL, OPT_EAGER},
        {"rendezvous-handshake", no_argument, NULL, OPT_HANDSHAKE},
        {"no-payload", no_argument, NULL, OPT_NO_PAYLOAD},
        {"stack-size", required_argument, NULL, OPT_STACK},
        {"fix", required_argument, NULL, OPT_FIX},
        {"microbatches", required_argument, NULL, OPT_MICRO},
        {"compute", required_argument, NULL, OPT_COMPUTE},
        {"chunk", required_argument, NULL, OPT_CHUNK},
        {"trace", required_argument, NULL, OPT_TRACE},
        {"check", no_argument, NULL, OPT_CHECK},
        {"bind", required_argument, NULL, OPT_BIND},
        {"deadlock-timeout", required_argument, NULL, OPT_DEADLOCK_TIMEOUT},
        {"shm-copy", required_argument, NULL, OPT_SHM_COPY},
        {"listen", required_argument, NULL, OPT_LISTEN},
        {"provider", required_argument, NULL, OPT_PROVIDER},
        {"csv", no_argument, NULL, OPT_CSV},
        {"json", no_argument, NULL, OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *bytes_s = NULL, *sizes_s = NULL;
    cl_diag d = {{0}};
    uint64_t v;
    int c, rc = 0, idx = 0;
    while (!rc && (c = getopt_long(argc, argv, ":b:n:s:i:t:c:h", opts, &idx)) != -1) {
        /* Remember the first option of one side only, to refuse it on the other. */
        switch (c) {
        case 't': case 'c': case OPT_TOPOLOGY: case OPT_MODEL: case OPT_HANDSHAKE:
        case OPT_NO_PAYLOAD: case OPT_STACK:
            if (!o->model_only)
                o->model_only = c == 't' ? "--tier" : c == 'c' ? "--config" : opts[idx].name;
            break;
        case OPT_BIND: case OPT_DEADLOCK_TIMEOUT: case OPT_SHM_COPY: case OPT_LISTEN:
        case OPT_PROVIDER:
            if (!o->real_only)
                o->real_only = opts[idx].name;
            break;
        }
        switch (c) {
        case 'b': o->backend = optarg; break;
        case 'n': rc = parse_int("--ranks", optarg, 1, 1 << 24, &o->ranks); break;
        case OPT_BYTES: bytes_s = optarg; break;
        case 's': sizes_s = optarg; break;
        case 'i': rc = parse_int("--iters", optarg, 1, 1000000, &o->iters); break;
        case OPT_WARMUP: rc = parse_int("--warmup", optarg, 0, 1000000, &o->warmup); break;
        case 't': o->tier = optarg; break;
        case OPT_TOPOLOGY: o->topology = optarg; break;
        case 'c': o->config = optarg; break;
        case OPT_MODEL: o->model = optarg; break;
        case OPT_EAGER: rc = parse_size_opt("--eager-limit", optarg, &o->eager_limit); break;
        case OPT_HANDSHAKE: o->handshake = true; break;
        case OPT_NO_PAYLOAD: o->payload = false; break;
        case OPT_STACK: rc = parse_size_opt("--stack-size", optarg, &o->stack); break;
        case OPT_FIX: o->args.fix = optarg; break;
        case OPT_MICRO:
            rc = parse_int("--microbatches", optarg, 1, 1000000, &o->args.microbatches);
            break;
        case OPT_COMPUTE:
            if (units_parse_time(optarg, "--compute", &o->args.compute, &d))
                rc = cli_diag(&d, CLI_EXIT_USAGE);
            break;
        case OPT_CHUNK:
            rc = parse_size_opt("--chunk", optarg, &v);
            o->args.chunk = (size_t)v;
            if (!rc && v == 0)
                rc = cli_error("--chunk must be at least 1 byte");
            break;
        case OPT_TRACE: o->trace = optarg; break;
        case OPT_CHECK: o->check = true; break;
        case OPT_BIND:
            if (strcmp(optarg, "core") == 0 || strcmp(optarg, "none") == 0)
                o->bind = strcmp(optarg, "core") == 0;
            else
                rc = cli_error("--bind must be core or none, got '%s'", optarg);
            break;
        case OPT_DEADLOCK_TIMEOUT:
            if (units_parse_time(optarg, "--deadlock-timeout", &o->deadlock_timeout, &d))
                rc = cli_diag(&d, CLI_EXIT_USAGE);
            else if (!(o->deadlock_timeout >= 0.01 && o->deadlock_timeout <= 3600))
                rc = cli_error("--deadlock-timeout must be between 10ms and 1h, got '%s'",
                               optarg);
            break;
        case OPT_LISTEN: o->listen = optarg; break;
        case OPT_PROVIDER: o->provider = optarg; break;
        case OPT_SHM_COPY:
            o->shm_only = "--shm-copy";
            if (strcmp(optarg, "auto") == 0)
                o->copy = SHM_COPY_AUTO;
            else if (strcmp(optarg, "cma") == 0)
                o->copy = SHM_COPY_CMA;
            else if (strcmp(optarg, "staging") == 0)
                o->copy = SHM_COPY_STAGING;
            else
                rc = cli_error("--shm-copy must be auto, cma or staging, got '%s'", optarg);
            break;
        case OPT_CSV: o->fmt = CLI_CSV; break;
        case OPT_JSON: o->fmt = CLI_JSON; break;
        case 'h': fputs(cmd_run_usage, stdout); return -1;
        default: return cli_bad_option("run", argv, c);
        }
    }
    if (rc)
        return rc;
    if (optind >= argc)
        return cli_error("run: which pattern? (`commlab patterns` lists them)\n"
                         "try 'commlab help run'");
    const char *name = argv[optind++];
    if ((rc = cli_no_extra("run", argc, argv)))
        return rc;
    o->pattern = patterns_find(name);
    if (!o->pattern)
        return cli_error("unknown pattern '%s' (`commlab patterns` lists them)", name);
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

/* Checks what parse_args cannot check alone. */
static int validate(run_opts *o)
{
    const char *planned[] = {"mpi"};
    for (size_t i = 0; i < sizeof planned / sizeof planned[0]; i++)
        if (strcmp(o->backend, planned[i]) == 0)
            return cli_error("the '%s' backend is not built yet; use sim (modeled), shm, tcp "
                             "or rdma (measured)", o->backend);
    if (strcmp(o->backend, "shm") == 0 || strcmp(o->backend, "tcp") == 0 ||
        strcmp(o->backend, "rdma") == 0)
        o->measured = true;
    else if (strcmp(o->backend, "sim") != 0)
        return cli_error("unknown backend '%s' (sim, shm, tcp, rdma, mpi)", o->backend);
    if (o->measured && o->model_only)
        return cli_error("%s%s is an option of the model: it does not apply to --backend %s",
                         o->model_only[0] == '-' ? "" : "--", o->model_only, o->backend);
    if (!o->measured && o->real_only)
        return cli_error("--%s is an option of measured runs: it does not apply to "
                         "--backend sim", o->real_only);
    if (o->measured && o->shm_only && strcmp(o->backend, "shm") != 0)
        return cli_error("%s is an option of --backend shm: it does not apply to --backend %s",
                         o->shm_only, o->backend);
    if (o->measured && o->listen && strcmp(o->backend, "tcp") != 0)
        return cli_error("--listen is an option of --backend tcp: it does not apply to "
                         "--backend %s", o->backend);
    if (o->measured && o->provider && strcmp(o->backend, "rdma") != 0)
        return cli_error("--provider is an option of --backend rdma: it does not apply to "
                         "--backend %s", o->backend);
    cl_diag pd = {{0}};
    if (strcmp(o->backend, "rdma") == 0 && rdma_provider_check(o->provider, &pd))
        return cli_diag(&pd, CLI_EXIT_USAGE);
    unsigned char addr[sizeof(struct in6_addr)];
    if (o->listen && inet_pton(AF_INET, o->listen, addr) != 1 &&
        inet_pton(AF_INET6, o->listen, addr) != 1)
        return cli_error("--listen must be a numeric IPv4 or IPv6 address, got '%s'",
                         o->listen);
    if (o->iters == 0)
        o->iters = o->measured ? 10 : 1;
    if (o->warmup < 0)
        o->warmup = o->measured ? 2 : 0;
    if (o->measured && o->ranks > 256)
        return cli_error("--backend %s runs at most 256 ranks (one process each), got -n %d",
                         o->backend, o->ranks);
    if (strcmp(o->model, "alphabeta") != 0)
        return cli_error(strcmp(o->model, "flow") == 0
                             ? "--model flow (max-min link sharing) is not built yet; use "
                               "alphabeta"
                             : "unknown model '%s' (alphabeta)",
                         o->model);
    if (o->ranks < o->pattern->min_ranks)
        return cli_error("%s needs at least %d ranks, got -n %d", o->pattern->name,
                         o->pattern->min_ranks, o->ranks);
    if (o->args.fix) {
        const char *f = o->pattern->fixes;
        size_t len = strlen(o->args.fix);
        const char *hit = f ? strstr(f, o->args.fix) : NULL;
        if (!f)
            return cli_error("--fix applies to the deadlock pattern, not '%s'", o->pattern->name);
        if (!hit || (hit[len] != ',' && hit[len] != 0) || (hit != f && hit[-1] != ','))
            return cli_error("unknown --fix '%s' for %s (%s)", o->args.fix, o->pattern->name, f);
    }
    if (o->tier && o->topology)
        return cli_error("run: give either --tier or --topology, not both");
    if (o->trace && o->nsizes > 1)
        return cli_error("--trace records one run: give one size with --bytes");
    for (size_t i = 0; i < o->nsizes; i++)
        if (o->sizes[i] > SIZE_MAX / 4)
            return cli_error("size %llu is too large", (unsigned long long)o->sizes[i]);
    return 0;
}

static int build_net(const run_opts *o, sim_net **net)
{
    /* With --tier, selecting the one tier also reports an unknown name
     * along with the known ones. */
    tier_set ts;
    int rc = cli_load_tiers(&ts, o->config, o->topology ? NULL : o->tier ? o->tier : "nvlink");
    if (rc)
        return rc;
    cl_diag d = {{0}};
    int err;
    if (o->topology) {
        err = sim_net_load(net, o->topology, &ts, &d);
    } else {
        err = sim_net_create_tier(net, &ts.tiers[0], o->ranks, &d);
    }
    tier_set_release(&ts);
    if (err)
        return cli_diag(&d, CLI_EXIT_USAGE);
    if (sim_net_ranks(*net) < o->ranks) {
        int have = sim_net_ranks(*net);
        sim_net_destroy(*net);
        return cli_error("the topology '%s' has %d devices, -n asks for %d ranks", o->topology,
                         have, o->ranks);
    }
    return 0;
}

typedef struct run_row {
    uint64_t bytes;
    cl_stats t;        /* per-iteration times, divided by the pattern's divisor */
    double bandwidth;  /* bytes / median time */
    uint64_t messages; /* per iteration */
} run_row;

/* What the header line and the JSON say about where the run ran. */
typedef struct run_env {
    sim_net *net;      /* sim */
    char binding[160]; /* measured */
    int cores;
    int signal;        /* measured: the launcher was interrupted */
} run_env;

static int exit_code(int status, const run_env *env)
{
    if (env->signal)
        return 128 + env->signal;
    switch (status) {
    case 0: return CLI_EXIT_OK;
    case CL_ECHECK: return CLI_EXIT_CHECK;
    case CL_EDEADLOCK: return CLI_EXIT_DEADLOCK;
    default: return CLI_EXIT_FAILED;
    }
}

static const char *copy_name(shm_copy c)
{
    return c == SHM_COPY_CMA ? "cma" : c == SHM_COPY_STAGING ? "staging" : "auto";
}

static void print_text(const run_opts *o, const run_env *env, const run_row *rows, size_t n)
{
    char el[UNITS_BUF];
    if (o->measured)
        printf("%s on %s: %d ranks, %s (%d cores), eager limit %s, %d iteration%s after %d "
               "warm-up\n\n", o->pattern->name, o->backend, o->ranks, env->binding, env->cores,
               units_size_str(el, o->eager_limit), o->iters, o->iters == 1 ? "" : "s",
               o->warmup);
    else
        printf("%s on sim: %d ranks, %s, eager limit %s, %d iteration%s\n\n", o->pattern->name,
               o->ranks, sim_net_describe(env->net), units_size_str(el, o->eager_limit),
               o->iters, o->iters == 1 ? "" : "s");
    const char *h[] = {"size", "time (median)", "min", "max", "bandwidth", "messages"};
    table t;
    if (table_init(&t, 6, h))
        return;
    for (size_t i = 0; i < n; i++) {
        char b[UNITS_BUF], m[UNITS_BUF], lo[UNITS_BUF], hi[UNITS_BUF], bw[UNITS_BUF];
        table_add(&t, "%s", units_size_str(b, rows[i].bytes));
        table_add(&t, "%s", units_time_digits(m, rows[i].t.median, 4));
        table_add(&t, "%s", units_time_digits(lo, rows[i].t.min, 4));
        table_add(&t, "%s", units_time_digits(hi, rows[i].t.max, 4));
        table_add(&t, "%s", rows[i].bytes ? units_bandwidth_str(bw, rows[i].bandwidth) : "-");
        table_add(&t, "%llu", (unsigned long long)rows[i].messages);
    }
    table_print(&t, stdout, 0);
    table_release(&t);
}

static void print_csv(const run_row *rows, size_t n)
{
    const char *h[] = {"bytes", "iters", "time_median_s", "time_min_s", "time_max_s",
                       "bandwidth_Bps", "messages"};
    table t;
    if (table_init(&t, 7, h))
        return;
    for (size_t i = 0; i < n; i++) {
        table_add(&t, "%llu", (unsigned long long)rows[i].bytes);
        table_add(&t, "%zu", rows[i].t.n);
        table_add(&t, "%.12g", rows[i].t.median);
        table_add(&t, "%.12g", rows[i].t.min);
        table_add(&t, "%.12g", rows[i].t.max);
        table_add(&t, "%.12g", rows[i].bandwidth);
        table_add(&t, "%llu", (unsigned long long)rows[i].messages);
    }
    table_print_csv(&t, stdout);
    table_release(&t);
}

static void print_json(const run_opts *o, const run_env *env, const run_row *rows, size_t n,
                       int status)
{
    json_writer w;
    json_init(&w, stdout, true);
    json_begin_object(&w);
    json_kv_string(&w, "command", "run");
    json_kv_string(&w, "pattern", o->pattern->name);
    json_kv_string(&w, "backend", o->backend);
    json_kv_uint(&w, "ranks", (uint64_t)o->ranks);
    if (o->measured) {
        json_kv_string(&w, "binding", env->binding);
        json_kv_uint(&w, "cores", (uint64_t)env->cores);
        if (strcmp(o->backend, "shm") == 0)
            json_kv_string(&w, "shm_copy", copy_name(o->copy));
        json_kv_uint(&w, "warmup", (uint64_t)o->warmup);
    } else {
        json_kv_string(&w, "model", o->model);
        json_kv_string(&w, "network", sim_net_describe(env->net));
    }
    json_kv_uint(&w, "eager_limit_bytes", o->eager_limit);
    json_kv_string(&w, "status", status == 0 ? "ok" : cl_errname(status));
    json_key(&w, "results");
    json_begin_array(&w);
    for (size_t i = 0; i < n; i++) {
        json_begin_object(&w);
        json_kv_uint(&w, "bytes", rows[i].bytes);
        json_kv_uint(&w, "iters", rows[i].t.n);
        json_key(&w, "time_s");
        json_begin_object(&w);
        json_kv_number(&w, "median", rows[i].t.median);
        json_kv_number(&w, "min", rows[i].t.min);
        json_kv_number(&w, "max", rows[i].t.max);
        json_end_object(&w);
        json_kv_number(&w, "bandwidth_Bps", rows[i].bandwidth);
        json_kv_uint(&w, "messages", rows[i].messages);
        json_end_object(&w);
    }
    json_finish(&w);
}

static void fill_row(const run_opts *o, uint64_t bytes, double *iter_time, int iters,
                     uint64_t messages, run_row *row)
{
    for (int i = 0; i < iters; i++)
        iter_time[i] /= o->pattern->time_divisor;
    stats_compute(iter_time, (size_t)iters, &row->t);
    row->bytes = bytes;
    row->bandwidth = row->t.median > 0 ? (double)bytes / row->t.median : 0;
    row->messages = messages / (uint64_t)(o->iters + o->warmup);
}

/* What a backend's run of one size comes to: err (the run could not be
 * carried out) or status (the pattern's outcome) is reported, else row is
 * filled.  Returns the status to carry on with. */
static int size_outcome(const run_opts *o, uint64_t bytes, int err, int status,
                        const cl_diag *diag, double *iter_time, int iters, uint64_t messages,
                        run_row *row)
{
    if (err) {
        cli_diag(diag, 0);
        return err;
    }
    if (status)
        fprintf(stderr, "commlab: %s\n", diag->msg);
    else
        fill_row(o, bytes, iter_time, iters, messages, row);
    return status;
}

/* Runs one size modeled; fills row.  Returns the run's status (0, CL_E*). */
static int run_sim(const run_opts *o, run_env *env, uint64_t bytes, rec_log *log, run_row *row)
{
    sim_opts so = {
        .nranks = o->ranks, .net = env->net, .eager_limit = o->eager_limit,
        .handshake = o->handshake, .payload = o->payload, .stack_bytes = (size_t)o->stack,
        .warmup = o->warmup, .iters = o->iters, .records = log, .out = stdout,
        .report = stderr,
    };
    cl_args a = o->args;
    a.bytes = (size_t)bytes;
    sim_result res;
    int err = sim_run(&so, o->pattern->fn, &a, &res);
    int status = size_outcome(o, bytes, err, res.status, &res.diag, res.iter_time, res.iters,
                              res.messages, row);
    sim_result_release(&res);
    return status;
}

/* Runs one size measured; fills row. */
static int run_real(const run_opts *o, run_env *env, uint64_t bytes, rec_log *log, bool first,
                    run_row *row)
{
    real_opts ro = {
        .backend = o->backend, .nranks = o->ranks, .warmup = o->warmup, .iters = o->iters,
        .eager_limit = o->eager_limit, .check = o->check, .bind = o->bind, .copy = o->copy,
        .listen = o->listen, .provider = o->provider,
        .deadlock_timeout = o->deadlock_timeout, .records = log,
        .report = stderr, .warn = first ? stderr : NULL,
    };
    cl_args a = o->args;
    a.bytes = (size_t)bytes;
    real_result res;
    int err = real_run(&ro, o->pattern->fn, &a, &res);
    snprintf(env->binding, sizeof env->binding, "%s", res.binding);
    env->cores = res.cores;
    env->signal = res.signal;
    int status = size_outcome(o, bytes, err, res.status, &res.diag, res.iter_time, res.iters,
                              res.messages, row);
    real_result_release(&res);
    return status;
}

int cmd_run(int argc, char **argv)
{
    run_opts o = {
        .backend = "sim", .ranks = 2, .iters = 0, .warmup = -1, .model = "alphabeta",
        .eager_limit = 64 * 1024, .payload = true, .fmt = CLI_TEXT, .bind = true,
        .deadlock_timeout = 2.0, .args = {.microbatches = 4},
    };
    int rc = parse_args(argc, argv, &o);
    if (rc == -1) {
        free(o.sizes);
        return CLI_EXIT_OK;
    }
    if (rc || (rc = validate(&o))) {
        free(o.sizes);
        return rc;
    }
    run_env env = {0};
    if (!o.measured && (rc = build_net(&o, &env.net))) {
        free(o.sizes);
        return rc;
    }
    run_row *rows = calloc(o.nsizes, sizeof *rows);
    rec_log log;
    rec_log_init(&log, 4u << 20);
    int status = 0;
    size_t done = 0;
    if (!rows) {
        rc = cli_error("out of memory");
        goto out;
    }
    for (; done < o.nsizes && status == 0; done++) {
        rec_log *l = o.trace ? &log : NULL;
        status = o.measured ? run_real(&o, &env, o.sizes[done], l, done == 0, &rows[done])
                            : run_sim(&o, &env, o.sizes[done], l, &rows[done]);
        if (status)
            break;
    }
    if (o.fmt == CLI_JSON)
        print_json(&o, &env, rows, done, status);
    else if (o.fmt == CLI_CSV)
        print_csv(rows, done);
    else if (done > 0)
        print_text(&o, &env, rows, done);
    if (o.trace && status != CL_ENOMEM && !env.signal) {
        cl_diag d = {{0}};
        trace_meta meta = {.pattern = o.pattern->name, .backend = o.backend, .ranks = o.ranks};
        if (log.dropped)
            fprintf(stderr, "commlab: the trace keeps the first %zu records; %zu more were "
                            "dropped\n", log.n, log.dropped);
        if (trace_write_file(o.trace, log.v, log.n, &meta, &d))
            cli_diag(&d, 0);
        else if (o.fmt == CLI_TEXT)
            printf("\ntrace: %s (open it in https://ui.perfetto.dev)\n", o.trace);
    }
    rc = exit_code(status, &env);
out:
    rec_log_release(&log);
    free(rows);
    sim_net_destroy(env.net);
    free(o.sizes);
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
        return cli_bad_option("patterns", argv, c);
    }
    int rc = cli_no_extra("patterns", argc, argv);
    if (rc)
        return rc;
    const pattern_info *p;
    for (size_t i = 0; (p = patterns_at(i)) != NULL; i++)
        printf("%-16s %-18s %s\n", p->name, p->chapter, p->summary);
    return CLI_EXIT_OK;
}
