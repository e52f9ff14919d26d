/*
 * rdma.h - the rdma transport: measured runs through libfabric, the
 * portable RDMA API (InfiniBand verbs, AWS EFA, Slingshot on a cluster; the
 * shm and tcp providers on any machine).
 *
 * Seven files, one idea each (endpoint addresses go through the job's
 * address slots, real/job.h, like tcp's):
 *   rdma_lib.c   libfabric itself, opened when the transport is first
 *                asked for (commlab is not linked with it: real/dlib.h).
 *   rdma_info.c  which providers libfabric offers here, what they can do,
 *                and which one a run uses ("auto" or a name); the fi_info
 *                hints every part of commlab asks with.
 *   rdma_mr.c    the registration cache: buffers registered for remote
 *                reads, kept for the buffers a pattern sends again.
 *   rdma.c       messages: the envelope and the protocols, tagged eager
 *                sends, requests to send, control records, the progress
 *                engine, comm_ops.
 *   rdma_recv.c  receiving: the rendezvous's receiving side (RDMA reads,
 *                or a tagged receive after a clear-to-send) and receives
 *                matched by libfabric.
 *   rdma_pool.c  commlab's own matching, from FI_MULTI_RECV receive
 *                buffers, for providers whose tagged matching loses
 *                messages.
 *   rdma_open.c  opening and closing: the launcher's shared area, a
 *                rank's endpoint, the address exchange, the closing
 *                handshake.
 *
 * What the cli needs is the rdma_* part below; rdma__* is internal to real/.
 * Every function that talks to libfabric reports failure as a CL_E* code
 * with a diag naming the call and libfabric's words (fi_strerror); the
 * rdma_provider_* functions load libfabric first, and fail with CL_ENOSYS
 * (d naming it) where it cannot be loaded.
 */
#ifndef REAL_RDMA_H
#define REAL_RDMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "commlab.h"
#include "core/diag.h"

/* libfabric's API version commlab is written against (Debian 12: 1.17). */
#define RDMA_FI_VERSION_MAJOR 1
#define RDMA_FI_VERSION_MINOR 17

/* The largest eager limit a run may have (calibrate's largest): every rank
 * allocates an eager message's worth for what overflows a receive, and
 * where commlab matches without RDMA reads 64 of them as receive buffers
 * (rdma_pool.c); a terabyte limit failed as "out of memory" in a rank. */
#define RDMA_EAGER_MAX ((uint64_t)64 << 20)

/* ---- the providers (rdma_info.c) ---- */

typedef struct rdma_provider_desc {
    char name[32];        /* "shm", "tcp" (a layered "tcp;ofi_rxm" is named by its core) */
    char fabric[64];      /* the fabric it reaches ("127.0.0.1/32", "shm") */
    char domain[64];      /* its domain (an interface, a NIC) */
    bool tagged;          /* reliable datagram endpoints with tagged messages */
    bool rma;             /* ... and RDMA reads */
    bool local_mr;        /* needs local buffers registered (commlab does not) */
    size_t inject_bytes;  /* largest message sent without a completion */
    uint64_t max_msg;     /* largest message or read */
    bool manual_progress; /* data moves only while the application polls */
    bool own_match;       /* commlab matches its messages (its tagged matching is not trusted) */
} rdma_provider_desc;

/* Every provider that offers reliable datagram endpoints here, one entry
 * per (provider, fabric, domain), in libfabric's order of preference.
 * *out is malloc'd (free it); *n may be 0.  CL_ENOMEM, CL_ENOSYS (no
 * libfabric), or CL_EIO when libfabric itself fails (d says why). */
int rdma_providers_list(rdma_provider_desc **out, size_t *n, cl_diag *d);

/* Whether `name` (auto, shm, tcp, verbs, efa, any provider name) can run
 * commlab here: 0, or CL_EINVAL with d naming it and listing the providers
 * that can ("provider 'verbs' is not available here; available: shm, tcp");
 * CL_ENOSYS or CL_EIO as rdma_providers_list. */
int rdma_provider_check(const char *name, cl_diag *d);

/* The provider "auto" stands for on this placement: a NIC provider when
 * the ranks span hosts, shm within one.  Writes the name (at most cap
 * bytes); CL_EINVAL when none is available, CL_ENOSYS or CL_EIO as
 * rdma_providers_list. */
int rdma_provider_auto(char *name, size_t cap, bool multi_host, cl_diag *d);

/* ---- what a run did (for tests and benchmarks) ---- */

typedef struct rdma_stats {
    uint64_t eager_sends;   /* pattern and barrier messages sent eagerly */
    uint64_t injects;       /* ... of which small enough for fi_tinject */
    uint64_t copies;        /* ... of which sent from a copy (above the inject size) */
    uint64_t eager_reads;   /* ... of which read by the receiver from the pattern's buffer
                               (commlab's matching with RDMA reads, above the inject size) */
    uint64_t copy_allocs;   /* copies allocated (the others reused a kept one) */
    uint64_t rma_reads;     /* rendezvous messages pulled by RDMA read */
    uint64_t tagged_rdv;    /* rendezvous messages moved by tagged messages */
    uint64_t mr_regs;       /* buffers registered (fi_mr_reg) */
    uint64_t mr_hits;       /* registrations served by the cache */
    uint64_t own_matched;   /* messages and requests to send commlab matched itself */
    uint64_t reads_counted; /* sends completed by the remote-read counter, not a FIN */
    uint64_t fins_along;    /* FINs that rode along with a request to send */
} rdma_stats;

/* The rdma rank behind c's world and what it did so far, or NULL when c
 * does not run on the rdma transport.  Cannot fail. */
const rdma_stats *rdma_stats_of(const cl_comm *c);
/* The provider c's rank runs on ("shm"), or NULL as above. */
const char *rdma_provider_of(const cl_comm *c);

#endif
