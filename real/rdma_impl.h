/*
 * rdma_impl.h - what the files of the rdma transport share; internal to
 * real/ (hence the rdma__ names).  real/rdma.h says which file does what;
 * rdma.c says what the envelope, the kinds and the protocols are.
 *
 * The launcher's shared area (made before the fork) holds what every rank
 * must agree on: the provider chosen for the run, whether rendezvous pulls
 * by RDMA read, whose matching the run uses (rdma.c says both), the
 * names the shm provider gives its shared-memory regions (so the launcher
 * can remove what a killed rank leaves in /dev/shm), and the local
 * bootstrap's slots.
 */
#ifndef REAL_RDMA_IMPL_H
#define REAL_RDMA_IMPL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/diag.h"
#include "real/launch.h"
#include "real/rdma.h"
#include "real/rdma_lib.h"
#include "real/xfer.h"

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
    bool count_reads;             /* senders count the reads of their buffers (a remote-read
                                     counter), so a FIN may wait: rdma.c */
    char source[64];              /* across hosts: the numeric address that reaches
                                     rank 0, which endpoints bind to; "": local */
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

/* ---- messages (rdma.c, rdma_recv.c, rdma_pool.c, rdma_open.c) ---- */

#define INJECT_MAX 4096                 /* bytes commlab assembles for one inject */
#define READ_CHUNK ((uint64_t)64 << 20) /* one fi_read moves at most this */

/* The envelope's fields. */
#define SMALL_RECV 64 /* receives up to this land in the request, copied out */

#define TAG_KIND_SHIFT 62
#define TAG_SRC_SHIFT 46
#define TAG_CTX_SHIFT 31
#define TAG_TAG_MASK ((1ULL << TAG_CTX_SHIFT) - 1)
#define TAG_CTX_MASK (((1ULL << 15) - 1) << TAG_CTX_SHIFT)
#define TAG_SRC_MASK (((1ULL << 16) - 1) << TAG_SRC_SHIFT)
#define TAG_RTS_BIT (1ULL << TAG_KIND_SHIFT)
#define TAG_LOW62 ((1ULL << TAG_KIND_SHIFT) - 1)

enum { KIND_MSG, KIND_RTS, KIND_CTRL, KIND_DATA };              /* the envelope's kind */
enum { H_FIN = 1, H_NACK, H_CTS, H_BYE };                      /* a control record's kind */
enum { OP_RECV = 1, OP_READ, OP_DATA_RECV, OP_DATA_SEND, OP_BOUNCE, OP_CTRL, OP_POOL,
       OP_MSG_READ }; /* contexts */

/* A request to send: where the receiver reads the message. */
typedef struct rdma_rts {
    uint64_t total; /* message bytes */
    uint64_t sum;   /* checksum (--check) */
    uint64_t addr;  /* where to read (rdma__mr_addr) */
    uint64_t key;   /* the registration's key */
    uint64_t id;    /* the send's id: FIN, NACK and CTS name it */
    uint64_t fin;   /* a FIN riding along: the receiver's send of this id was read (0: none) */
    uint64_t lazy;  /* 1: the sender counts reads, its FIN may wait (rdma.c) */
} rdma_rts;

/* A control record: the answer to a request to send, or BYE. */
typedef struct rdma_ctl {
    uint16_t magic; /* RDMA_MAGIC */
    uint16_t kind;  /* H_* */
    int32_t src;    /* the sender's rank */
    uint64_t id;    /* FIN, NACK, CTS: the send's id */
    uint64_t key;   /* CTS: the receive's id */
    uint64_t addr;  /* FIN: when the read began (double bits) */
} rdma_ctl;

/* commlab's matching: what precedes every body in a pool buffer, but for
 * an eager message that fits one inject without it: its context and tag
 * are then its remote CQ data (ENV_SHORT), its source the completion's
 * (FI_SOURCE), its number one more than the last from that source. */
#define ENV_SHORT_TAG_BITS 31
typedef struct rdma_env {
    uint64_t tag;  /* kind, source, context bits, tag */
    uint64_t data; /* full context << 32 | message number */
} rdma_env;

/* What an operation's completion comes back as: every libfabric call gets
 * one of these as its context (FI_CONTEXT2 room first). */
typedef struct rdma_op {
    struct fi_context2 fc;
    int what; /* OP_* */
} rdma_op;

typedef struct rdma_req {
    xfer_req x;             /* first */
    rdma_op op;             /* the one operation in flight for it */
    struct rdma_req *lnext; /* rendezvous sends waiting for FIN, NACK or CTS */
    uint64_t id;            /* rendezvous: our send or receive id */
    uint64_t sum;           /* libfabric's matching, --check: an eager message's sum lands here */
    unsigned char small[SMALL_RECV]; /* ... a receive of at most SMALL_RECV bytes lands here */
    rdma_mr *mr;            /* rendezvous send: its registration */
    uint64_t send_id;       /* rendezvous receive: the sender's id */
    uint64_t raddr, rkey;   /* ... where to read */
    uint64_t off, chunk;    /* ... bytes read, bytes of the read in flight */
    fi_addr_t from;         /* ... the sender's address */
    bool lazy;              /* send: the receiver's FIN may wait, reads are counted;
                               receive: the FIN it owes may wait */
} rdma_req;

typedef struct rdma_msg { /* commlab's matching: a message nobody wanted yet */
    xfer_msg x;           /* first */
    rdma_rts rts;         /* a request to send: where its data is */
    rdma_op op;           /* an eager one read into x.data: the read in flight */
    uint64_t chunk;       /* ... bytes of the read in flight (x.got: read so far) */
    int src;              /* ... the sender */
} rdma_msg;

typedef struct rdma_bounce { /* an eager message's copy, until sent */
    rdma_op op;              /* first */
    struct rdma_bounce *prev, *next; /* in flight; next only, once kept */
    size_t len;              /* bytes to send */
    size_t cap;              /* bytes data has room for */
    _Alignas(16) unsigned char data[]; /* envelope (commlab's matching), body */
} rdma_bounce;

typedef struct rdma_ctrl { /* libfabric's matching: a posted control receive */
    rdma_op op;            /* first */
    rdma_ctl hdr;
} rdma_ctrl;

typedef struct rdma_pool { /* commlab's matching: a posted receive buffer */
    rdma_op op;            /* first */
    unsigned char *mem;
    size_t len;            /* bytes */
} rdma_pool;

/* FINs owed whose senders count reads (rdma.c): sent with the next
 * request to send to that rank, or once the rank is idle. */
#define FINS_DUE 32
typedef struct rdma_fin_due {
    int dst;     /* the rank owed the FIN */
    uint64_t id; /* its send's id */
} rdma_fin_due;

typedef struct rdma_rank {
    xfer_rank x;               /* first */
    rdma_area *area;
    struct fi_info *info;      /* the entry opened (its own copy) */
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_cq *cq;
    struct fid_ep *ep;
    bool cq_waits;             /* the queue has a wait object: fi_cq_sread blocks */
    bool own_match;            /* commlab matches (pool buffers), not libfabric */
    fi_addr_t *addr;           /* n: every rank's address */
    uint64_t *nmsg;            /* n: messages sent to each rank */
    uint64_t *nrecv;           /* n, commlab's matching: messages arrived from each rank */
    rdma_mr_cache mrs;
    rdma_ctrl *ctrl;           /* CTRL_RECVS (libfabric's matching) */
    rdma_pool *pool;           /* POOL_BUFS (commlab's matching) */
    size_t pool_msg_max;       /* bytes of the largest message a pool buffer takes */
    rdma_req *rdv_sends;       /* rendezvous sends waiting for the receiver */
    struct fid_cntr *reads;    /* count_reads: completed reads of this rank's buffers */
    uint64_t reads_known;      /* ... those of sends already completed */
    rdma_fin_due fins[FINS_DUE]; /* ... FINs owed that may wait */
    int nfins;                 /* ... entries of fins in use */
    int idle_polls;            /* looks at the queue in a row that found nothing */
    rdma_bounce *bounces;      /* eager copies the provider still holds */
    int bounces_out;
    rdma_bounce *bounce_free;  /* copies kept for the next eager messages */
    int bounce_kept;
    size_t bounce_cap;         /* bytes of a kept copy: the largest eager message (0: none kept) */
    int byes;                  /* BYEs received */
    uint64_t eager_limit;      /* bytes */
    size_t inject;             /* bytes fi_tinject takes */
    uint64_t max_msg;          /* bytes one message or read may have */
    uint64_t next_id;
    bool use_rma;
    uint64_t read_flags;       /* fi_readmsg's flags (see rdma_open.c's open_endpoint) */
    bool closing;
    int n, me;
    char prov[RDMA_PROV_MAX];
    rdma_stats stats;
    unsigned char *spill;      /* eager_limit bytes: where what overflows a receive goes */
} rdma_rank;

/* A context's 15 bits in a tag: its even/odd bit and 14 of a hash. */
static inline uint64_t rdma__ctx_bits(uint32_t ctx)
{
    uint32_t h = (ctx >> 1) * 0x9e3779b1u;
    return ((uint64_t)(h >> 18) << 1 | (ctx & 1u)) & 0x7fff;
}

/* The envelope's first word (rdma.c says its layout). */
static inline uint64_t rdma__tag_of(int kind, int src, uint32_t ctx, int tag)
{
    return (uint64_t)kind << TAG_KIND_SHIFT | (uint64_t)(uint16_t)src << TAG_SRC_SHIFT |
           rdma__ctx_bits(ctx) << TAG_CTX_SHIFT | ((uint64_t)(uint32_t)tag & TAG_TAG_MASK);
}

static inline int rdma__kind_of(uint64_t tag)
{
    return (int)(tag >> TAG_KIND_SHIFT);
}

static inline int rdma__src_of(uint64_t tag)
{
    return (int)((tag & TAG_SRC_MASK) >> TAG_SRC_SHIFT);
}

/* ---- rdma.c: sending, control records, the progress engine ---- */

/* The comm_ops every rdma rank runs with. */
extern const comm_ops rdma__ops;

/* A post refused for now (-FI_EAGAIN): progress, then try again.  False
 * once the rank failed or the provider refused for RETRY_SECONDS (*until
 * starts at 0). */
bool rdma__retry(rdma_rank *t, double *until, const char *what);
/* One look at the completion queue, blocking up to RANK_IDLE_MS when block
 * and the queue can.  Returns how many operations completed, or the rank's
 * fatal CL_E*. */
int rdma__progress(rdma_rank *t, bool block);
/* Sends the control record kind (H_*) to rank dst; track: its completion
 * is awaited (closing counts t->bounces_out).  0, or the rank failed. */
int rdma__ctl_send(rdma_rank *t, int dst, int kind, uint64_t id, uint64_t key, uint64_t addr,
                   bool track);
/* Posts control receive c (libfabric's matching).  0 or libfabric's
 * negative error (-FI_EAGAIN: try again); nothing is posted then. */
int rdma__ctrl_post(rdma_rank *t, rdma_ctrl *c);
/* A control record of len bytes arrived (FIN, NACK, CTS or BYE). */
void rdma__ctl_arrived(rdma_rank *t, const rdma_ctl *h, size_t len);
/* Rank dst's send `id` was read: FIN now, or, lazy (its sender counts
 * reads), later: with the next request to send to dst or once this rank
 * is idle.  began: when the read began (tracing).  0, or the rank
 * failed. */
int rdma__fin(rdma_rank *t, int dst, uint64_t id, double began, bool lazy);
/* Sends every FIN owed now.  Cannot fail (a failure fails the rank). */
void rdma__fins_flush(rdma_rank *t);
/* A FIN from src for our send id arrived in a request to send. */
void rdma__fin_arrived(rdma_rank *t, int src, uint64_t id);

/* ---- rdma_recv.c: receiving ---- */

/* comm_ops' irecv: with libfabric's matching a posted fi_trecvv, with
 * commlab's xfer's.  0, or CL_ENOMEM or the rank's failure with nothing
 * posted. */
int rdma__irecv(cl_comm *c, void *buf, size_t bytes, int src, int tag, uint32_t ctx,
                cl_request **out);
/* Receive r (libfabric's matching) completed as e says: a message, or its
 * request to send (then the rendezvous begins). */
void rdma__recv_arrived(rdma_rank *t, rdma_req *r, const struct fi_cq_tagged_entry *e);
/* Receive r (its envelope taken) matched the request to send h from src:
 * pull the data (or refuse it, NACK, when r is too small). */
void rdma__rendezvous(rdma_rank *t, rdma_req *r, const rdma_rts *h, int src);
/* Rendezvous receive r's read of r->chunk bytes completed: the next one,
 * or FIN and the receive completes. */
void rdma__read_done(rdma_rank *t, rdma_req *r);
/* Commlab's matching: the request to send of an eager message from src
 * found no receive, m->x.data has room for it: read it there now (the
 * send waits for it, never for a receive). */
void rdma__msg_read(rdma_rank *t, rdma_msg *m, int src);
/* m's read of m->chunk bytes completed: the next one, or FIN; a receive
 * waiting for m takes it. */
void rdma__msg_read_done(rdma_rank *t, rdma_msg *m);

/* ---- rdma_pool.c: commlab's matching ---- */

/* t->pool: the receive buffers, sized for t->eager_limit, and
 * t->pool_msg_max.  0 or CL_ENOMEM (rdma__pool_destroy frees what was
 * made). */
int rdma__pool_create(rdma_rank *t);
/* Posts every pool buffer (after fi_enable).  0, or CL_EIO with d saying
 * which post failed. */
int rdma__pool_post_all(rdma_rank *t, cl_diag *d);
/* Pool buffer p's completion e, from the rank at address from: the
 * message in it is matched and copied out; the buffer is posted again
 * once the provider gave it back. */
void rdma__pool_done(rdma_rank *t, rdma_pool *p, const struct fi_cq_tagged_entry *e,
                     fi_addr_t from);
/* xfer's pull hook: a receive commlab matched to a request to send. */
void rdma__pool_pull(xfer_rank *x, xfer_req *r, xfer_msg *m, int src);
/* Frees the pool buffers (after the endpoint is closed).  Cannot fail. */
void rdma__pool_destroy(rdma_rank *t);

#endif
