/*
 * launch.h - measured runs: fork the ranks, watch them, gather the results.
 *
 * real_run() is the measured twin of sim_run(): it forks one process per
 * rank (like torch's mp.spawn), binds each to a core, runs the warm-up and
 * timed iterations over a transport, and gathers per-iteration times and
 * records through one anonymous shared mapping.  Its watchdog reads every
 * rank's status slot: when every unfinished rank is blocked and nothing
 * progressed for the deadlock timeout it prints the wait-for report of
 * core/waitfor and stops the ranks; a rank that dies is reported by rank
 * and cause and the others are stopped.  No process outlives the call:
 * every rank leads a process group of its own, and the launcher kills the
 * groups when the run ends, so what a pattern forks ends with it (unless
 * it leaves the group with setsid).  Nothing it made has a name anywhere,
 * except the rdma shm provider's regions in /dev/shm: named after the
 * launcher's pid, so a later run removes those of a launcher that died.
 *
 * Transports (shm, tcp, rdma) plug in through real_transport.
 *
 * A run whose processes were started elsewhere (by hand on several hosts,
 * mpirun, srun: real/world.h) passes the rendezvous it joined (real/boot.h)
 * in real_opts.boot: each process then forks only its own rank, and rank 0's
 * process watches the whole world through what the others report.
 */
#ifndef REAL_LAUNCH_H
#define REAL_LAUNCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "commlab.h"
#include "core/diag.h"
#include "core/record.h"
#include "core/run.h"
#include "real/boot.h"
#include "real/job.h"
#include "real/rank.h"

/* How shm moves a message above the eager limit. */
typedef enum shm_copy {
    SHM_COPY_AUTO,    /* single copy (process_vm_readv); staging if refused */
    SHM_COPY_CMA,     /* single copy only: an error if the kernel refuses */
    SHM_COPY_STAGING, /* always the pipelined copy through the shared ring */
} shm_copy;

/* The measured backends' options; the job (core/run.h) is what every
 * backend shares (its check also checksums every message). */
/* What only one transport reads of a run (the others ignore it). */
typedef struct real_shm_opts {
    shm_copy copy; /* the large-message path */
} real_shm_opts;

typedef struct real_tcp_opts {
    const char *listen;          /* numeric address the ranks listen on; NULL: 127.0.0.1 */
    const struct netlab *netlab; /* the netlab (real/netlab.h) the caller holds, with a
                                    port per rank at least: rank i runs in its namespace i;
                                    NULL: none */
} real_tcp_opts;

typedef struct real_rdma_opts {
    const char *provider; /* libfabric provider (auto, shm, tcp, verbs...); NULL: auto */
    bool no_rma;          /* rendezvous by tagged messages even where RDMA reads exist */
    bool own_match;       /* commlab matches messages even where libfabric's is trusted */
} real_rdma_opts;

typedef struct real_opts {
    run_job job;             /* pattern, ranks, iterations, eager limit, output */
    const char *backend;     /* "shm" */
    bool bind;               /* pin ranks to cores (hwloc) */
    double deadlock_timeout; /* seconds without progress before reporting */
    FILE *warn;              /* warnings (more ranks than cores); NULL: none */
    boot *boot;              /* a run over processes started elsewhere (nranks is the
                                world's size; this process runs one rank); NULL: local */
    real_shm_opts shm;       /* the transport's own options */
    real_tcp_opts tcp;
    real_rdma_opts rdma;
} real_opts;

/* A transport's hooks; every rank_* runs in the rank process. */
typedef struct real_transport {
    const char *name;
    /* The rank runs in the launcher's own process, on the calling thread,
     * and the watchdog on a second one: for a library that a process can
     * start only once (MPI_Init), so a rank cannot be a new process per
     * run.  Only in a run over processes started elsewhere (o->boot).  The
     * watchdog cannot kill such a rank: it stores the failure in job.stop,
     * which the transport's poll returns, and the rank unwinds. */
    bool in_process;
    /* Its ranks can each run in a network namespace of their own, a
     * netlab's (real/netlab.h): they talk over IP.  Only in a local run
     * (no o->boot) and without --listen, which the netlab's addresses
     * replace. */
    bool over_netlab;
    /* Optional (NULL: none): bytes of shared memory it needs (made before
     * the fork). */
    size_t (*shared_bytes)(const real_opts *o);
    /* Optional: fills its zeroed shared area, in the launcher. */
    int (*shared_init)(void *area, const real_opts *o, cl_diag *d);
    /* Optional: in the launcher once every rank is gone, removes what a
     * killed rank could not (rdma: shared-memory regions in /dev/shm). */
    void (*shared_release)(void *area, const real_opts *o);
    /* Sets up rank `rank`: its real_rank (embedded first in the
     * transport's state) in *out. */
    int (*rank_open)(real_rank **out, const job *j, int rank, const real_opts *o, cl_diag *d);
    void (*rank_close)(real_rank *r);
} real_transport;

extern const real_transport shm_transport;
/* For tests: the lines a rank of the shm transport has written toward
 * world rank dst (where a message's first record starts when nothing is
 * queued ahead of it) and the lines of that ring; false when c is not a
 * rank of the shm transport or dst no rank. */
bool shm_ring_position(const cl_comm *c, int dst, uint64_t *written, uint64_t *lines);
extern const real_transport tcp_transport;
extern const real_transport rdma_transport;
#ifdef CL_HAVE_MPI
extern const real_transport mpi_transport; /* real/mpi/mpib.h */
#endif

/* The transport called name, or NULL. */
const real_transport *real_transport_find(const char *name);

/* Runs o->job on o->job.nranks processes.  Returns 0 when the run itself
 * could be carried out (the outcome is in res->status), or CL_EINVAL /
 * CL_ENOMEM / CL_EIO with res->diag saying why.  Release res either way
 * (run_result_release).  The ranks get the caller's signal mask less the
 * signals the launcher takes as events (SIGCHLD, SIGINT, SIGTERM, SIGHUP),
 * so a caller may keep those blocked around several runs (cli/run_size.h
 * does while it holds a netlab): one that is pending when a run starts
 * stops that run at once, as one during it does. */
int real_run(const real_opts *o, run_result *res);

#endif
