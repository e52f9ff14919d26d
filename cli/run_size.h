/*
 * run_size.h - one size of one pattern on one backend, for the commands
 * that run patterns (run, compare, calibrate): the options a run takes,
 * how they become the job of core/run.h for the backend's run_size entry
 * (cli/backend.h), and the exit status a run maps to.
 *
 * A failed size prints its error on stderr once (the CLI's one channel)
 * and leaves its row unfilled.
 */
#ifndef CL_RUN_SIZE_H
#define CL_RUN_SIZE_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/backend.h"
#include "core/pattern.h"
#include "cli/student.h"
#include "core/record.h"
#include "core/cache.h"
#include "core/run.h"

struct netlab;

/* --sharing: how the model prices messages that cross one link at once. */
typedef enum run_sharing {
    RUN_SHARE_MAXMIN, /* they share its bandwidth, max-min fair */
    RUN_SHARE_NONE,   /* each is priced alone */
} run_sharing;

/* --shm-copy: how shm moves a message above the eager limit. */
typedef enum run_copy {
    RUN_COPY_AUTO,    /* single copy; staging if refused */
    RUN_COPY_CMA,     /* single copy only */
    RUN_COPY_STAGING, /* through the shared ring */
} run_copy;

#define RUN_WORLD_MAX_RANKS 4096 /* --world's largest (real/world.h's bound) */

/* --master, --rank, --world, --join-timeout: a world of processes started
 * elsewhere, as given (the rows that take BOPT_WORLD learn it). */
typedef struct run_world_args {
    int rank, world;        /* -1: not given */
    const char *master;     /* "HOST:PORT" */
    double join_timeout;    /* 0: the default */
    const char *secret;     /* COMMLAB_SECRET, taken out of the environment */
} run_world_args;

/* What only the model reads of a run (backend sim). */
typedef struct run_sim_opts {
    const char *tier, *topology, *config, *model;
    bool model_file;        /* --model names a machine file (core/machine.h) */
    uint64_t stack;         /* --stack-size: each rank's stack; 0: the default */
    bool handshake;         /* --rendezvous-handshake */
    run_sharing sharing;    /* --sharing: how messages share links */
    bool sharing_given;
    double reduce_bw;       /* --reduce-bandwidth, bytes/s (INFINITY: free);
                               0: the network's own */
} run_sim_opts;

/* What only the measured backends read of a run (shm, tcp, rdma, mpi). */
typedef struct run_real_opts {
    bool bind;              /* --bind core */
    run_copy copy;          /* shm: --shm-copy */
    const char *listen;     /* tcp: --listen ADDR */
    double netlab;          /* tcp: --netlab RATE, bytes/s per port each way; 0: off */
    const struct netlab *lab; /* the netlab of that rate the command holds (run_lab_open) */
    const char *provider;   /* rdma: --provider NAME */
    run_world_args wargs;   /* tcp, rdma, mpi: --master, --rank, --world, --join-timeout */
    double deadlock_timeout;
    run_sync sync;          /* --sync: when measured iterations start (core/run.h) */
    cache_mode cache;       /* --cache: the buffers' lines when measured iterations
                               start (core/cache.h) */
} run_real_opts;

typedef struct run_opts {
    const pattern_info *pattern;
    const collective_info *coll; /* PATTERN named a collective: its algorithms */
    const char *algo;       /* --algo NAME, or "all": every algorithm of coll */
    bool library;           /* --library: the backend library's own call for the
                               collective, beside the algorithms or alone */
    pattern_info library_pattern; /* that call as a row's pattern (algo "library") */
    char library_name[40];  /* its name: "allreduce-library" */
    const char *backend;    /* its name, as printed */
    const backend_info *be; /* the backend table's entry for it (cli/backend.h) */
    int ranks;
    uint64_t *sizes;
    size_t nsizes;
    int iters, warmup;
    const char *trace;
    const char *timeline;   /* --timeline FILE.csv */
    bool eager_given;       /* --eager-limit was given */
    uint64_t eager_limit;
    bool payload;
    bool check;
    bool check_warmup;      /* data checks on the warm-up only (run_job.check_warmup) */
    bool debug;             /* --debug: buffer misuse checks (core/debug.h) */
    bool ranks_given;       /* -n was on the command line */
    double timeout;         /* --timeout: seconds one size may take; 0: no limit */
    backend_given given;    /* the options given that not every backend takes */
    student_pattern student; /* PATTERN given as a FILE.c */
    cl_args args;
    bool op_given;          /* --op or --dtype was on the command line */
    cli_format fmt;
    FILE *quiet;            /* not NULL: where a run's pattern lines, reports and
                               errors go instead (compare's model curve: runs
                               nobody asked to read) */
    FILE *lines;            /* not NULL: where a run's pattern lines (cl_printf) go
                               instead, its errors staying where they were
                               (compare's session: runs whose lines nobody reads) */
    run_sim_opts sim;       /* the model's own options */
    run_real_opts real;     /* the measured backends' own */
} run_opts;

/* What the header line and the JSON say about where the run ran. */
typedef struct run_env {
    backend_session *session; /* run's session of o->be (cli/backend.h); NULL: none */
    char binding[160]; /* measured */
    const char *clock; /* measured: what the ranks' clock read (run_result.clock) */
    int cores;
    int signal;        /* measured: the launcher was interrupted */
    bool mute;         /* a process of a world that does not report (not rank 0's) */
} run_env;

/* o->pattern for name: a built-in pattern; a collective, whose algorithm
 * is o->algo (its default when NULL; with "all", its first, and o->coll
 * lists the others); or a student's FILE.c compiled and loaded into
 * o->student (student_unload gives it back).  Prints why and returns an
 * exit status when none. */
int run_find_pattern(run_opts *o, const char *name);
/* A pattern option's value into a: name is "microbatches", "compute",
 * "chunk" or "group" (the long option's name).  0, or prints why and returns
 * CLI_EXIT_USAGE. */
int run_pattern_option(const char *name, const char *text, cl_args *a);
/* --op or --dtype (name "op" or "dtype") into o->args; or prints why
 * (the known names) and returns CLI_EXIT_USAGE. */
int run_parse_reduction(run_opts *o, const char *name, const char *text);
/* Whether o's pattern reduces: a reduction's algorithm, or a FILE.c given
 * --op or --dtype (which it reads from cl_args). */
bool run_reduces(const run_opts *o);
/* The pattern options o->pattern constrains: --schedule against its
 * schedules, and the ranks against --group when the group must divide
 * them (by default 2; a --topology's group is its own), --op and --dtype
 * against a reduction (bitwise operators: integer types).  0, or a usage
 * error (printed) naming the pattern or the nearest known schedule. */
int run_check_pattern_args(const run_opts *o);
/* Whether o runs every algorithm of a collective (--algo all). */
static inline bool run_all_algos(const run_opts *o)
{
    return o->coll && o->algo && strcmp(o->algo, "all") == 0;
}

/* The --timeout of a run of one size when none is given: long enough for
 * any run of the course, short of a hang nobody is told about. */
#define RUN_TIMEOUT_DEFAULT 600.0 /* seconds */

/* --timeout's value (a time, or 0 or "none" for no limit) into *out; or
 * prints why and returns CLI_EXIT_USAGE. */
int run_parse_timeout(const char *text, double *out);

/* --sync's value (window or barrier) into *out; or prints why and returns
 * CLI_EXIT_USAGE. */
int run_parse_sync(const char *text, run_sync *out);

/* --cache's value (fresh, warm or cold) into *out; or prints why and
 * returns CLI_EXIT_USAGE (cold where this machine cannot flush a line). */
int run_parse_cache(const char *text, cache_mode *out);
/* The words a header says of it: "buffers written just before
 * (--cache fresh)".  Cannot fail. */
const char *run_cache_words(cache_mode m);
/* --reduce-bandwidth's value (a bandwidth, or inf: reducing is free) into
 * *out; or prints why and returns CLI_EXIT_USAGE. */
int run_parse_reduce_bandwidth(const char *text, double *out);

/* --sharing's value into o; or prints why and returns CLI_EXIT_USAGE. */
int run_parse_sharing(const char *text, run_opts *o);
/* "max-min" (text) or "maxmin" (JSON), "none". */
const char *run_sharing_name(run_sharing s, bool text);
/* --shm-copy's value into *out; or prints why and returns CLI_EXIT_USAGE. */
int run_parse_copy(const char *text, run_copy *out);
/* "auto", "cma" or "staging". */
const char *run_copy_name(run_copy c);

/* --netlab: the network of namespaces that every measured
 * run of one command shares, built once rather than once a run.  While it
 * is held, SIGINT, SIGTERM and SIGHUP are blocked: one that comes during a
 * run stops that run (real_run takes it as an event), one that comes
 * between runs stops the next, and one still pending is found by
 * run_lab_close; so the command always gets to delete the netlab. */
typedef struct run_lab {
    struct netlab *nl; /* NULL: none held */
    sigset_t old; /* the signal mask before run_lab_open */
} run_lab;

/* --netlab's value (a rate of at least 8 kbit/s) into *out, bytes per
 * second; or prints why and returns CLI_EXIT_USAGE. */
int run_parse_netlab(const char *text, double *out);
/* Builds a netlab of ports ports of rate_Bps each way and blocks the
 * signals.  0, or the exit status after printing why (2 when this machine
 * cannot: not root, no ip or tc, a kernel without namespaces or tbf), with
 * nothing left behind and the mask as it was. */
int run_lab_open(run_lab *lab, int ports, double rate_Bps);
/* The same without printing: 0, or netlab_create's error (CL_ENOSYS: this
 * machine cannot, CL_EINVAL, ...) with d saying why, nothing left behind
 * and the mask as it was. */
int run_lab_try(run_lab *lab, int ports, double rate_Bps, cl_diag *d);
/* The bytes a netlab port of rate_Bps sends at once after idling (its
 * token bucket's burst, real/netlab.h).  Cannot fail. */
double run_lab_burst(double rate_Bps);
/* Deletes the netlab and gives the signal mask back.  Returns 0, or
 * 128+N after saying so when signal N came while it was held and no run
 * took it.  A lab never opened (nl NULL) does nothing and returns 0. */
int run_lab_close(run_lab *lab);

/* The exit status of a run whose last status is status (0, CL_E*). */
int run_exit_code(int status, const run_env *env);

/* For the rows' run_size entries: the job of one size of o. */
run_job run_job_of(const run_opts *o, uint64_t bytes, rec_log *log);
/* Refuses, before it starts, a size whose buffers cannot fit in memory,
 * printing why and hint (NULL: none).  CL_ENOSYS or 0. */
int run_check_memory(const run_opts *o, uint64_t bytes, const char *hint);
/* What a row's run of one size comes to: err (the run could not be
 * carried out) or the pattern's outcome is reported (with hint after
 * running out of memory), else row is filled.  Returns the status to
 * carry on with. */
int run_size_outcome(const run_opts *o, uint64_t bytes, int err, run_result *res,
                     run_row *row, const char *hint);

/* Runs one size on o->be. */
static inline int run_size(const run_opts *o, run_env *env, uint64_t bytes, rec_log *log,
                           bool first, run_row *row)
{
    return o->be->run_size(o, env, bytes, log, first, row);
}

#endif
