/*
 * shm_impl.h - what the files of the shm transport share; internal to
 * real/ (hence the shm__ names).  real/shm.c says what the rings, the
 * records, the protocols and the waiting are.
 *
 *   shm.c       the shared area and a rank's transport (open, close),
 *               sleeping on the doorbell, comm_ops
 *   shm_send.c  producing: records into a ring, the outgoing queues,
 *               cl_isend
 *   shm_recv.c  consuming: records out of a ring, eager and rendezvous
 *               receives (single copies or the ring), the progress pass
 *
 * A message's path crosses files only where the code made a call anyway
 * (a push, a control record, the progress pass); what both sides do on
 * every record is inline here.
 */
#ifndef REAL_SHM_IMPL_H
#define REAL_SHM_IMPL_H

#include <linux/futex.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "real/launch.h"
#include "real/xfer.h"

#define LINE 64
/* Records of up to this many lines are short: their consumer zeroes their
 * payload lines (real/shm.c, "Old laps").  The consumer's zeroing grows
 * with a record's lines and the producer's is at most one line a record,
 * so the bound sits where the two cost alike (README, beside `bench
 * shm`'s figures). */
#define SHORT_LINES 8

enum { REC_EAGER = 1, REC_SMALL, REC_FRAG, REC_RTS, REC_CTS, REC_RDATA, REC_PUTDONE, REC_FIN };

typedef struct shm_hdr {
    _Atomic uint64_t seq; /* absolute line index + 1; 0: nothing here yet */
    uint32_t kind;
    uint32_t len;         /* payload bytes of this record, from `arg` on */
    int32_t tag;
    uint32_t ctx;
    uint64_t total;       /* SMALL: the payload from here on.
                             EAGER, RTS: message bytes; RDATA: receive cookie;
                             CTS: first byte asked for */
    uint64_t sum;         /* EAGER, RTS: checksum (--check); RDATA: offset;
                             CTS: end of the bytes asked for */
    uint64_t arg[3];      /* RTS: address, send cookie; CTS: send cookie,
                             receive cookie, receive address (0: stream);
                             PUTDONE: receive cookie, bytes; FIN: send
                             cookie, start time.  Data records: the first
                             24 payload bytes */
} shm_hdr;

_Static_assert(sizeof(shm_hdr) == LINE, "a header is one line");
#define PAYLOAD_OFF offsetof(shm_hdr, arg)
/* A whole eager message of 1 to SMALL_MAX bytes without --check goes as
 * one SMALL record, its payload from `total` on: its size is `len` and it
 * has no checksum, so up to 40 bytes fit the header's line (an EAGER
 * record's 24 would make a 32-byte message two lines, two hand-offs).  Its
 * lines after the first start with a zero stamp in place of a seq, then
 * carry 56 bytes: no old payload can sit where a header's seq goes (see
 * "Old laps"), so no one zeroes them. */
#define SMALL_OFF offsetof(shm_hdr, total)
#define STAMP sizeof(uint64_t)
#define SMALL_MAX ((LINE - SMALL_OFF) + (SHORT_LINES - 1) * (LINE - STAMP))

typedef struct shm_bell {
    _Alignas(LINE) _Atomic uint32_t word; /* bumped to wake the rank */
    _Atomic uint32_t sleeping;            /* the rank is (about to be) asleep */
    int32_t pid;                          /* the rank's process, for process_vm_readv */
} shm_bell;

typedef struct shm_consumed {
    _Alignas(LINE) _Atomic uint64_t lines; /* lines the consumer is done with */
} shm_consumed;

/* The shared area: this header, nranks bells, nranks^2 consumed counters,
 * nranks^2 rings of ring_lines lines. */
typedef struct shm_area {
    _Alignas(LINE) uint32_t ring_lines;
    uint32_t max_payload; /* bytes per data record */
    bool membarrier;      /* the kernel has MEMBARRIER_CMD_GLOBAL_EXPEDITED */
} shm_area;

typedef struct shm_req shm_req;
typedef struct shm_msg shm_msg;

enum { SEND_QUEUED, SEND_WAIT_PEER };

struct shm_req {
    xfer_req x;             /* first; x.next: in an outgoing queue */
    uint64_t off;           /* bytes sent into the ring / received */
    uint64_t peer_cookie;   /* receive: the send; XFER_STREAM: the receive */
    uint64_t ctrl[5];       /* XFER_CTRL: total, sum, arg[0..2] */
    uint8_t ctrl_kind;      /* XFER_CTRL: the record's kind */
};

struct shm_msg {
    xfer_msg x;             /* first */
    uint64_t addr, cookie;  /* rendezvous: the sender's buffer and request */
};

typedef struct shm_out { /* toward one destination */
    shm_req *head, *tail; /* what waits to go into the ring, in order */
    uint64_t pos;         /* lines written */
    uint64_t *raw;        /* a bit per ring line: it last held long payload */
    uint64_t consumed;    /* the consumer's count, as last read */
    uint64_t nmsg;        /* messages sent to it (message ids) */
} shm_out;

typedef struct shm_in { /* from one source */
    uint64_t pos;       /* lines read */
    uint64_t nmsg;      /* messages received from it (message ids) */
    shm_req *req;       /* the receive the current eager message fills ... */
    shm_msg *msg;       /* ... or its unexpected copy */
    uint64_t drop;      /* bytes of a truncated message still to skip */
} shm_in;

typedef struct shm_rank {
    xfer_rank x;    /* first */
    shm_area *area;
    shm_bell *bells;
    shm_consumed *consumed;
    unsigned char *rings;
    shm_out *out;
    shm_in *in;
    uint64_t *raw;  /* every out[].raw, one allocation */
    uint64_t eager_limit;
    size_t ring_bytes;
    shm_copy copy;
    bool light;     /* registered for membarrier: publishing needs no fence */
    int n, me;
} shm_rank;

/* ---- the rings (inline: every record) ---- */

static inline unsigned char *shm__ring(const shm_rank *s, int from, int to)
{
    return s->rings + ((size_t)from * (size_t)s->n + (size_t)to) * s->ring_bytes;
}

/* Lines of a record whose len payload bytes start at byte off of it (a
 * SMALL record's at SMALL_OFF: its stamped lines carry LINE - STAMP). */
static inline size_t shm__record_lines(size_t off, uint64_t len)
{
    if (off == SMALL_OFF && len > LINE - SMALL_OFF)
        return 1 + (size_t)((len - (LINE - SMALL_OFF) + LINE - STAMP - 1) / (LINE - STAMP));
    return (size_t)((off + len + LINE - 1) / LINE);
}

/* The ring byte where piece k of a SMALL record at line pos starts, and
 * (*piece) its length out of the record's len bytes: piece 0 in the
 * header's line, piece k in line pos + k after its stamp. */
static inline size_t shm__small_piece(uint64_t pos, uint64_t lines, uint64_t k, uint64_t len,
                                       size_t *piece)
{
    uint64_t from = k ? (LINE - SMALL_OFF) + (k - 1) * (LINE - STAMP) : 0;
    uint64_t room = k ? LINE - STAMP : LINE - SMALL_OFF;
    *piece = (size_t)(len - from < room ? len - from : room);
    return (size_t)((pos + k) % lines) * LINE + (k ? STAMP : SMALL_OFF);
}

/* ---- waking ---- */

static inline void shm__futex(_Atomic uint32_t *word, int op, uint32_t val,
                              const struct timespec *ts)
{
    syscall(SYS_futex, (uint32_t *)word, op, val, ts, NULL, 0);
}

/* Wakes rank `peer` if it sleeps.  The barrier pairs with the one in
 * shm_block(): either the sleeper sees our record, or we see it asleep.
 * Registered, ours is the compiler's alone (real/shm.c). */
static inline void shm__notify(shm_rank *s, int peer)
{
    shm_bell *b = &s->bells[peer];
    if (s->light)
        atomic_signal_fence(memory_order_seq_cst);
    else
        atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&b->sleeping, memory_order_relaxed)) {
        atomic_fetch_add_explicit(&b->word, 1, memory_order_relaxed);
        shm__futex(&b->word, FUTEX_WAKE, 1, NULL);
    }
}

/* Appends r to dst's outgoing queue; shm__push() writes it. */
static inline void shm__enqueue(shm_rank *s, int dst, shm_req *r)
{
    shm_out *o = &s->out[dst];
    r->x.next = NULL;
    if (o->tail)
        o->tail->x.next = &r->x;
    else
        o->head = r;
    o->tail = r;
}

/* ---- shm_send.c ---- */

/* Puts as much of dst's queue into the ring as fits, in order, completing
 * what is all in; wakes dst if anything was written.  Cannot fail. */
void shm__push(shm_rank *s, int dst);
/* A control record toward dst, behind whatever is queued: its header's
 * total, sum and arg[0..2].  Out of memory fails the rank (xfer_fatal). */
void shm__send_ctrl(shm_rank *s, int dst, uint32_t kind, uint64_t total, uint64_t sum,
                    uint64_t a0, uint64_t a1, uint64_t a2);
/* comm_ops.isend. */
int shm__isend(cl_comm *c, const void *buf, size_t bytes, int dst, int tag, uint32_t ctx,
               cl_request **out);

/* ---- shm_recv.c ---- */

/* xfer's pull hook: receive xr matched the RTS xm from src. */
void shm__pull(xfer_rank *x, xfer_req *xr, xfer_msg *xm, int src);
/* One pass over every ring and every outgoing queue.  Returns how many
 * records were read, or a negative CL_E* after a fatal error. */
int shm__progress(shm_rank *s);
/* real_rank.poll: shm__progress(). */
int shm__poll(real_rank *r);

#endif
