/*
 * rdma_impl.h - what the files of the rdma transport share; internal to
 * real/ (hence the rdma__ names).  real/rdma.h says which file does what.
 *
 * The launcher's shared area (made before the fork) holds what every rank
 * must agree on: the provider chosen for the run, whether rendezvous pulls
 * by RDMA read, whose matching the run uses (rdma.c says both), the names the shm provider gives its shared-memory regions
 * (so the launcher can remove what a killed rank leaves in /dev/shm), and
 * the local bootstrap's slots.
 */
#ifndef REAL_RDMA_IMPL_H
#define REAL_RDMA_IMPL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include "core/diag.h"
#include "real/launch.h"
#include "real/rdma.h"

#define RDMA_FI_VERSION FI_VERSION(RDMA_FI_VERSION_MAJOR, RDMA_FI_VERSION_MINOR)
#define BOOT_SECONDS 60.0   /* every rank has published its address by then */
#define RDMA_PROV_MAX 32    /* bytes of a provider name */
#define RDMA_MAX_RANKS 65536 /* a rank number fits the 16 bits tags give it */

/* ---- the launcher's shared area ---- */

typedef struct rdma_area {
    char provider[RDMA_PROV_MAX]; /* the provider every rank opens ("shm") */
    char region_prefix[48];       /* shm endpoints are named PREFIX-RANK */
    bool use_rma;                 /* rendezvous by RDMA read (else tagged) */
    bool own_match;               /* commlab matches messages, from pool buffers */
    uint32_t nranks;
} rdma_area;

/* ---- rdma_info.c ---- */

/* The fi_info hints every part of commlab asks with: reliable datagram
 * endpoints with tagged messages in send order, RDMA reads too when rma,
 * registrations by virtual address or offset with provider keys, no local
 * registration, the provider called prov (NULL: any); with own_match
 * untagged messages into FI_MULTI_RECV buffers too, else 8 bytes of
 * remote CQ data.  NULL when out of memory; fi_freeinfo() it. */
struct fi_info *rdma__hints(const char *prov, bool rma, bool own_match);
/* Whether commlab matches messages itself on provider prov (rdma.c: its
 * tagged matching is known to lose messages in this libfabric).  Cannot
 * fail. */
bool rdma__own_match(const char *prov);
/* The entry of list a run on this host uses: the loopback domain where
 * the provider offers one (local runs), else the first. */
struct fi_info *rdma__pick(struct fi_info *list);
/* The provider's name as commlab spells it: the core of a layered one
 * ("tcp" for "tcp;ofi_rxm"). */
void rdma__prov_name(const struct fi_info *fi, char *out, size_t cap);
/* "fi_getinfo: No data available (-61)". */
int rdma__fail(cl_diag *d, int err, const char *call, int ret, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* ---- rdma_mr.c: the registration cache ---- */

typedef struct rdma_mr {
    struct rdma_mr *next;  /* in the cache, most recently used first */
    uintptr_t base;        /* the registered range */
    size_t len;
    struct fid_mr *mr;
    uint64_t key;          /* what a peer reads with */
    int users;             /* rendezvous sends using it now: not evicted */
} rdma_mr;

typedef struct rdma_mr_cache {
    struct fid_domain *domain;
    rdma_mr *head;
    int count;             /* entries */
    uint64_t next_key;     /* keys commlab picks where the provider does not */
    bool prov_key;         /* the provider picks keys (FI_MR_PROV_KEY) */
    bool virt_addr;        /* peers read at virtual addresses (FI_MR_VIRT_ADDR) */
} rdma_mr_cache;

/* An empty cache for domain, with the mr_mode the domain was opened
 * with.  Cannot fail. */
void rdma__mr_init(rdma_mr_cache *c, struct fid_domain *domain, uint64_t mr_mode);
/* A registration of exactly [buf, buf + len) for remote reads, found in
 * the cache (*hit) or made; its users count grows (rdma__mr_put gives it
 * back).  0 or CL_EIO with d saying why; nothing changes then. */
int rdma__mr_get(rdma_mr_cache *c, const void *buf, size_t len, rdma_mr **out, bool *hit,
                 cl_diag *d);
void rdma__mr_put(rdma_mr_cache *c, rdma_mr *m);
/* The address a peer reads buf at. */
uint64_t rdma__mr_addr(const rdma_mr_cache *c, const rdma_mr *m, const void *buf);
/* Closes every registration.  Cannot fail. */
void rdma__mr_release(rdma_mr_cache *c);

#endif
