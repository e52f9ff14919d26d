/*
 * shm.c - the shared-memory transport.
 *
 * Every ordered pair of ranks (i -> j, self included) has a single-producer
 * single-consumer ring of 64-byte lines in the job's anonymous shared
 * mapping.  A record is one header line followed by its payload; the header
 * carries `seq`, the record's absolute line index + 1, stored last with
 * release semantics, so the consumer's acquire load of it is the whole
 * hand-off: no lock, no shared head index on the fast path.  The consumer
 * publishes how far it has read in its own cache line; the producer
 * re-reads that only when its cached copy says the ring is full.
 *
 * Old laps.  A consumer waiting at line p must not take what an old lap
 * left there for the record it waits for.  An old header is safe (its seq
 * is an older index + 1), and so is a zero; a payload line may hold
 * anything.  So the line after a record must not hold old payload when the
 * record is published (one line of every ring therefore stays free).  Each
 * cache line zeroed on the producer's critical path costs a hand-off: an
 * 8 B message took 392 instead of 299 ns in the VM's slow regime when the
 * line after every record was zeroed, and 64-256 B messages 99-107 instead
 * of 85-103 ns in its fast one.  So no one zeroes on the critical path in
 * the common case:
 *   - the consumer zeroes the seqs of a short record's payload lines (at
 *     most SHORT_LINES lines in all) once it has read them, before it says
 *     it has: they are in its cache, and the next lap finds zeros there;
 *   - the producer remembers which lines of its rings last held a long
 *     record's payload (one bit a line, its own memory) and zeroes the line
 *     after a record only when it is one of them.  Zeroing a long record's
 *     lines on the consumer's side measured slower (4 KiB 332 -> 381-400
 *     ns, 64 KiB 2.8 -> 4.4 us).
 *
 * Protocols, with the model's eager limit:
 *   - eager (bytes <= limit): one SMALL record, or EAGER then FRAG records
 *     carry the data; the send completes once all of it is in the ring.  A
 *     receiver drains its rings whenever it is inside any call, into the
 *     posted receive or an unexpected copy, so an eager send never waits
 *     for a receive.
 *   - rendezvous: an RTS record carries the size and the sender's buffer
 *     address.  When a receive matches, both cores copy once, straight
 *     between the two processes' memory: the receiver answers CTS with its
 *     buffer's address, asking the sender to write the second half into it
 *     (process_vm_writev, then PUTDONE), and reads the first half from the
 *     sender's buffer itself (process_vm_readv).  Once every byte is in,
 *     the receiver sends FIN, which completes the send.  Where the kernel
 *     refuses a single copy (or with --shm-copy staging) the CTS carries no
 *     address and the sender streams RDATA records through the ring into
 *     the receive buffer instead: a pipelined copy through shared memory.
 *
 * Waiting: poll with a bounded spin (the hand-off of a line between cores
 * costs well under a microsecond, a sleeping wake-up tens), then yield
 * when ranks outnumber cores, then sleep on a futex: a rank going to sleep
 * sets `sleeping` in its doorbell and re-checks its rings; whoever publishes
 * to it or frees room it may wait for bumps the doorbell and wakes it.  A
 * sleeper looks again after RANK_IDLE_MS anyway (real/rank.h).
 *
 * That hand-shake needs a full barrier on both sides (each side stores,
 * then loads what the other stores).  The publisher's side is every
 * message, the sleeper's a rank with nothing to do, so the barrier is made
 * asymmetric where the kernel allows it: every rank registers for
 * membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED), a publisher orders its
 * store and its load with a compiler barrier only, and a rank going to
 * sleep calls membarrier(), which runs a full barrier on every CPU running
 * a registered rank at that moment (a rank not running passed through one
 * when it was switched out).  Where membarrier is missing both sides fence.
 */
#include <errno.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "core/comm.h"
#include "core/match.h"
#include "core/units.h"
#include "real/launch.h"
#include "real/pages.h"
#include "real/xfer.h"

#define LINE 64
/* Records of up to this many lines are short: their consumer zeroes their
 * payload lines (see the top of the file; at 512 B, 9 lines, either side
 * measured the same). */
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

/* ---- layout ---- */

static uint32_t ring_lines_for(int n)
{
    uint32_t kib = n <= 8 ? 256 : n <= 32 ? 64 : n <= 128 ? 16 : 8;
    return kib * 1024 / LINE;
}

static size_t align_up(size_t x)
{
    return (x + LINE - 1) & ~(size_t)(LINE - 1);
}

static size_t shm_shared_bytes(const real_opts *o)
{
    size_t n = (size_t)o->job.nranks;
    return align_up(sizeof(shm_area)) + n * sizeof(shm_bell) + n * n * sizeof(shm_consumed) +
           n * n * (size_t)ring_lines_for(o->job.nranks) * LINE;
}

static int shm_shared_init(void *mem, const real_opts *o, cl_diag *d)
{
    (void)d;
    shm_area *a = mem;
    a->ring_lines = ring_lines_for(o->job.nranks);
    a->max_payload = a->ring_lines * LINE / 4;
    long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    a->membarrier = cmds > 0 && (cmds & MEMBARRIER_CMD_GLOBAL_EXPEDITED) &&
                    (cmds & MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED);
    return 0;
}

static unsigned char *ring(const shm_rank *s, int from, int to)
{
    return s->rings + ((size_t)from * (size_t)s->n + (size_t)to) * s->ring_bytes;
}

/* Lines of a record whose len payload bytes start at byte off of it (a
 * SMALL record's at SMALL_OFF: its stamped lines carry LINE - STAMP). */
static size_t record_lines(size_t off, uint64_t len)
{
    if (off == SMALL_OFF && len > LINE - SMALL_OFF)
        return 1 + (size_t)((len - (LINE - SMALL_OFF) + LINE - STAMP - 1) / (LINE - STAMP));
    return (size_t)((off + len + LINE - 1) / LINE);
}

/* The ring byte where piece k of a SMALL record at line pos starts, and
 * (*piece) its length out of the record's len bytes: piece 0 in the
 * header's line, piece k in line pos + k after its stamp. */
static size_t small_piece(uint64_t pos, uint64_t lines, uint64_t k, uint64_t len, size_t *piece)
{
    uint64_t from = k ? (LINE - SMALL_OFF) + (k - 1) * (LINE - STAMP) : 0;
    uint64_t room = k ? LINE - STAMP : LINE - SMALL_OFF;
    *piece = (size_t)(len - from < room ? len - from : room);
    return (size_t)((pos + k) % lines) * LINE + (k ? STAMP : SMALL_OFF);
}

/* Sets (set) or clears bits [from, from + n) of a ring's raw map, taken
 * modulo lines (a multiple of 64: a word never wraps). */
static void raw_mark(uint64_t *map, uint64_t from, uint64_t n, uint64_t lines, bool set)
{
    while (n) {
        uint64_t i = from % lines, bit = i % 64, k = 64 - bit < n ? 64 - bit : n;
        uint64_t m = (k == 64 ? ~(uint64_t)0 : ((uint64_t)1 << k) - 1) << bit;
        map[i / 64] = set ? map[i / 64] | m : map[i / 64] & ~m;
        from += k;
        n -= k;
    }
}

/* Copies between a ring and memory at byte offset `at` of the ring,
 * wrapping at its end. */
static void ring_write(const shm_rank *s, unsigned char *rg, size_t at, const void *src, size_t len)
{
    at %= s->ring_bytes;
    size_t first = s->ring_bytes - at < len ? s->ring_bytes - at : len;
    memcpy(rg + at, src, first);
    if (first < len)
        memcpy(rg, (const char *)src + first, len - first);
}

static void ring_read(const shm_rank *s, const unsigned char *rg, size_t at, void *dst, size_t len)
{
    at %= s->ring_bytes;
    size_t first = s->ring_bytes - at < len ? s->ring_bytes - at : len;
    memcpy(dst, rg + at, first);
    if (first < len)
        memcpy((char *)dst + first, rg, len - first);
}

/* ---- waking ---- */

static void futex(_Atomic uint32_t *word, int op, uint32_t val, const struct timespec *ts)
{
    syscall(SYS_futex, (uint32_t *)word, op, val, ts, NULL, 0);
}

/* Wakes rank `peer` if it sleeps.  The barrier pairs with the one in
 * shm_block(): either the sleeper sees our record, or we see it asleep.
 * Registered, ours is the compiler's alone (see the top of the file). */
static void notify(shm_rank *s, int peer)
{
    shm_bell *b = &s->bells[peer];
    if (s->light)
        atomic_signal_fence(memory_order_seq_cst);
    else
        atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&b->sleeping, memory_order_relaxed)) {
        atomic_fetch_add_explicit(&b->word, 1, memory_order_relaxed);
        futex(&b->word, FUTEX_WAKE, 1, NULL);
    }
}

/* ---- requests and messages ---- */

/* ---- producing ---- */

/* Room for a record of len payload bytes from byte off toward dst, with
 * the line after it free and holding no old payload (see the top of the
 * file), or NULL. */
static shm_hdr *reserve(shm_rank *s, int dst, size_t off, uint64_t len)
{
    shm_out *o = &s->out[dst];
    uint64_t end = o->pos + record_lines(off, len) + 1, lines = s->area->ring_lines;
    if (end - o->consumed > lines) {
        o->consumed = atomic_load_explicit(&s->consumed[s->me * s->n + dst].lines,
                                           memory_order_acquire);
        if (end - o->consumed > lines)
            return NULL;
    }
    unsigned char *rg = ring(s, s->me, dst);
    uint64_t after = (end - 1) % lines;
    if (o->raw[after / 64] >> (after % 64) & 1) {
        atomic_store_explicit(&((shm_hdr *)(rg + after * LINE))->seq, 0, memory_order_relaxed);
        raw_mark(o->raw, after, 1, lines, false);
    }
    return (shm_hdr *)(rg + (o->pos % lines) * LINE);
}

/* Writes the payload of a reserved record from byte off and publishes it. */
static void publish(shm_rank *s, int dst, shm_hdr *h, uint32_t kind, size_t off,
                    const void *data, uint64_t len)
{
    shm_out *o = &s->out[dst];
    unsigned char *rg = ring(s, s->me, dst);
    uint64_t lines = s->area->ring_lines;
    h->kind = kind;
    h->len = (uint32_t)len;
    uint64_t n = record_lines(off, len);
    if (off == SMALL_OFF) {
        const char *from = data;
        size_t piece, at = small_piece(o->pos, lines, 0, len, &piece), done = piece;
        memcpy(rg + at, from, piece);
        for (uint64_t k = 1; k < n; k++, done += piece) {
            at = small_piece(o->pos, lines, k, len, &piece);
            atomic_store_explicit(&((shm_hdr *)(rg + at - STAMP))->seq, 0, memory_order_relaxed);
            if (piece == LINE - STAMP)
                memcpy(rg + at, from + done, LINE - STAMP);
            else
                memcpy(rg + at, from + done, piece);
        }
    } else if (len) {
        ring_write(s, rg, (o->pos % lines) * LINE + off, data, (size_t)len);
    }
    atomic_store_explicit(&h->seq, o->pos + 1, memory_order_release);
    raw_mark(o->raw, o->pos, n > SHORT_LINES ? 1 : n, lines, false);
    if (n > SHORT_LINES)
        raw_mark(o->raw, o->pos + 1, n - 1, lines, true);
    o->pos += n;
}

enum { INJECT_FULL, INJECT_MORE, INJECT_LAST };

/* Writes the next record of r toward dst: INJECT_FULL when the ring has no
 * room, INJECT_MORE when r has more records to write, INJECT_LAST when this
 * was its last one. */
static int inject(shm_rank *s, int dst, shm_req *r)
{
    if (r->x.kind == XFER_CTRL) {
        shm_hdr *h = reserve(s, dst, PAYLOAD_OFF, 0);
        if (!h)
            return INJECT_FULL;
        h->total = r->ctrl[0];
        h->sum = r->ctrl[1];
        memcpy(h->arg, &r->ctrl[2], sizeof h->arg);
        publish(s, dst, h, r->ctrl_kind, PAYLOAD_OFF, NULL, 0);
        return INJECT_LAST;
    }
    if (r->x.kind == XFER_SEND && !r->x.eager && r->x.phase == SEND_QUEUED) {
        shm_hdr *h = reserve(s, dst, PAYLOAD_OFF, 0);
        if (!h)
            return INJECT_FULL;
        h->tag = r->x.tag;
        h->ctx = r->x.ctx;
        h->total = r->x.bytes;
        h->sum = r->x.sum;
        h->arg[0] = (uint64_t)(uintptr_t)r->x.sbuf;
        h->arg[1] = (uint64_t)(uintptr_t)r;
        publish(s, dst, h, REC_RTS, PAYLOAD_OFF, NULL, 0);
        r->x.phase = SEND_WAIT_PEER;
        return INJECT_LAST;
    }
    uint64_t len = r->x.bytes - r->off;
    if (len > s->area->max_payload)
        len = s->area->max_payload;
    bool first = r->x.kind != XFER_STREAM && r->off == 0;
    bool small = first && len == r->x.bytes && len && len <= SMALL_MAX && !s->x.check;
    size_t off = small ? SMALL_OFF : PAYLOAD_OFF;
    shm_hdr *h = reserve(s, dst, off, len);
    if (!h)
        return INJECT_FULL;
    uint32_t kind = REC_FRAG;
    if (r->x.kind == XFER_STREAM) {
        kind = REC_RDATA;
        h->total = r->peer_cookie;
        h->sum = r->off;
    } else if (first) {
        kind = small ? REC_SMALL : REC_EAGER;
        h->tag = r->x.tag;
        h->ctx = r->x.ctx;
        if (!small) {
            h->total = r->x.bytes;
            h->sum = r->x.sum;
        }
        if (s->x.base.tracing)
            r->x.started = rank_now(&s->x.base);
    }
    publish(s, dst, h, kind, off, (const char *)r->x.sbuf + r->off, len);
    r->off += len;
    return r->off == r->x.bytes ? INJECT_LAST : INJECT_MORE;
}

/* Puts as much of dst's queue into the ring as fits, in order. */
static void push(shm_rank *s, int dst)
{
    shm_out *o = &s->out[dst];
    bool wrote = false;
    shm_req *r;
    while ((r = o->head) != NULL) {
        int st = inject(s, dst, r);
        if (st == INJECT_FULL)
            break;
        wrote = true;
        if (st == INJECT_MORE)
            continue;
        o->head = (shm_req *)r->x.next;
        if (!o->head)
            o->tail = NULL;
        r->x.next = NULL;
        if (r->x.kind != XFER_SEND || r->x.eager)
            xfer_complete(&s->x, &r->x, 0);
    }
    if (wrote)
        notify(s, dst);
}

static void enqueue(shm_rank *s, int dst, shm_req *r)
{
    shm_out *o = &s->out[dst];
    r->x.next = NULL;
    if (o->tail)
        o->tail->x.next = &r->x;
    else
        o->head = r;
    o->tail = r;
}

/* A control record toward dst, behind whatever is queued: its header's
 * total, sum and arg[0..2]. */
static void send_ctrl(shm_rank *s, int dst, uint32_t kind, uint64_t total, uint64_t sum,
                      uint64_t a0, uint64_t a1, uint64_t a2)
{
    shm_req *r = (shm_req *)xfer_req_new(&s->x);
    if (!r) {
        xfer_fatal(&s->x, CL_ENOMEM, "out of memory queueing a control record");
        return;
    }
    r->x.kind = XFER_CTRL;
    r->ctrl_kind = (uint8_t)kind;
    r->ctrl[0] = total;
    r->ctrl[1] = sum;
    r->ctrl[2] = a0;
    r->ctrl[3] = a1;
    r->ctrl[4] = a2;
    enqueue(s, dst, r);
    push(s, dst);
}

/* ---- consuming ---- */

/* Bytes of a rendezvous receive have landed (read by us, written by the
 * sender or streamed); with the last one the sender hears FIN. */
static void recv_advance(shm_rank *s, shm_req *r, uint64_t bytes)
{
    r->off += bytes;
    if (r->off < r->x.total)
        return;
    uint64_t bits;
    memcpy(&bits, &r->x.started, sizeof bits);
    send_ctrl(s, r->x.base.status.source, REC_FIN, 0, 0, r->peer_cookie, bits, 0);
    xfer_finish_recv(&s->x, &r->x, r->x.sum);
}

/* One copy between address spaces: process_vm_readv (read) or _writev. */
static bool cma_copy(shm_rank *s, int peer, void *local, uint64_t remote, uint64_t len,
                     bool read)
{
    uint64_t done = 0;
    while (done < len) {
        struct iovec l = {(char *)local + done, (size_t)(len - done)};
        struct iovec r = {(void *)(uintptr_t)(remote + done), (size_t)(len - done)};
        ssize_t got = read ? process_vm_readv(s->bells[peer].pid, &l, 1, &r, 1, 0)
                           : process_vm_writev(s->bells[peer].pid, &l, 1, &r, 1, 0);
        if (got <= 0)
            return false;
        done += (uint64_t)got;
    }
    return true;
}

/* The kernel refused a single copy: an error with --shm-copy cma, else
 * the staging path from now on. */
static bool cma_refused(shm_rank *s, int peer)
{
    if (s->copy == SHM_COPY_CMA) {
        xfer_fatal(&s->x, CL_EIO, "process_vm_readv/writev with rank %d failed: %s (try "
                   "--shm-copy staging)", peer, strerror(errno));
        return false;
    }
    s->copy = SHM_COPY_STAGING;
    return true;
}

/* Rendezvous: receive r matched the RTS m from src.  Both cores copy: we
 * ask the sender (CTS) to write the second half straight into our buffer
 * and read the first half from its buffer ourselves.  Without single
 * copies the CTS asks for everything through the ring instead. */
static void pull(xfer_rank *x, xfer_req *xr, xfer_msg *xm, int src)
{
    shm_rank *s = (shm_rank *)x;
    shm_req *r = (shm_req *)xr;
    shm_msg *m = (shm_msg *)xm;
    r->x.started = s->x.base.tracing ? rank_now(&s->x.base) : 0;
    if (xfer_truncated(x, xr, src, m->x.total)) {
        send_ctrl(s, src, REC_FIN, 0, 0, m->cookie, 0, 0);
        xfer_complete(&s->x, &r->x, CL_ETRUNC);
        xfer_msg_free(x, xm);
        return;
    }
    uint64_t total = m->x.total, addr = m->addr;
    r->x.sum = m->x.sum;
    r->peer_cookie = m->cookie;
    r->off = 0;
    xfer_msg_free(x, xm);
    uint64_t me = (uint64_t)(uintptr_t)r;
    if (total == 0) {
        recv_advance(s, r, 0);
        return;
    }
    if (s->copy == SHM_COPY_STAGING) {
        send_ctrl(s, src, REC_CTS, 0, total, r->peer_cookie, me, 0);
        return;
    }
    uint64_t half = total / 2;
    send_ctrl(s, src, REC_CTS, half, total, r->peer_cookie, me, (uint64_t)(uintptr_t)r->x.buf);
    if (half == 0)
        return;
    if (cma_copy(s, src, r->x.buf, addr, half, true))
        recv_advance(s, r, half);
    else if (cma_refused(s, src))
        send_ctrl(s, src, REC_CTS, 0, half, r->peer_cookie, me, 0);
}

/* The sender's side of a CTS: bytes [from, to) of send r for the receive
 * `cookie` at `addr` of rank dst (0: through the ring). */
static void serve(shm_rank *s, int dst, shm_req *r, uint64_t cookie, uint64_t addr,
                  uint64_t from, uint64_t to)
{
    if (s->x.base.tracing && !r->x.started)
        r->x.started = rank_now(&s->x.base);
    if (from >= to)
        return;
    if (addr && s->copy != SHM_COPY_STAGING) {
        if (cma_copy(s, dst, (char *)(uintptr_t)r->x.sbuf + from, addr + from, to - from, false)) {
            send_ctrl(s, dst, REC_PUTDONE, 0, 0, cookie, to - from, 0);
            return;
        }
        if (!cma_refused(s, dst))
            return;
    }
    shm_req *job = (shm_req *)xfer_req_new(&s->x);
    if (!job) {
        xfer_fatal(&s->x, CL_ENOMEM, "out of memory streaming to rank %d", dst);
        return;
    }
    job->x.kind = XFER_STREAM;
    job->x.sbuf = r->x.sbuf;
    job->off = from;
    job->x.bytes = to;
    job->peer_cookie = cookie;
    enqueue(s, dst, job);
    push(s, dst);
}

/* A new message's envelope from src, of total bytes with checksum sum:
 * matched to a posted receive, or kept. */
static void arrive(shm_rank *s, int src, const shm_hdr *h, bool eager, uint64_t total,
                   uint64_t sum)
{
    shm_in *in = &s->in[src];
    shm_msg *m = (shm_msg *)xfer_msg_new(&s->x);
    if (!m) {
        xfer_fatal(&s->x, CL_ENOMEM, "out of memory for a message from rank %d", src);
        return;
    }
    m->x.eager = eager;
    m->x.total = total;
    m->x.sum = sum;
    m->x.msg_id = rank_msg_id(src, s->me, ++in->nmsg);
    if (!eager) {
        m->addr = h->arg[0];
        m->cookie = h->arg[1];
    }
    xfer_req *r;
    switch (xfer_arrive(&s->x, &m->x, src, h->tag, h->ctx, &r)) {
    case XFER_INTO_RECV:
        in->req = (shm_req *)r;
        break;
    case XFER_INTO_MSG:
        in->msg = m;
        break;
    case XFER_INTO_DROP:
        in->drop = total;
        break;
    }
}

/* Where the next bytes of the current eager message from src go: the
 * posted receive or the unexpected copy, or NULL (dropped, or no buffer). */
static char *eager_dest(shm_rank *s, int src)
{
    shm_in *in = &s->in[src];
    if (in->drop)
        return NULL;
    if (in->req)
        return in->req->x.buf ? (char *)in->req->x.buf + in->req->off : NULL;
    if (in->msg)
        return in->msg->x.data ? (char *)in->msg->x.data + in->msg->x.got : NULL;
    return NULL;
}

/* len more bytes of the current eager message from src are in (or
 * dropped); the last of them completes its receive or its copy. */
static void eager_took(shm_rank *s, int src, uint64_t len)
{
    shm_in *in = &s->in[src];
    if (in->drop) {
        in->drop -= len < in->drop ? len : in->drop;
    } else if (in->req) {
        shm_req *r = in->req;
        r->off += len;
        if (r->off >= r->x.total) {
            in->req = NULL;
            xfer_finish_recv(&s->x, &r->x, r->x.sum);
        }
    } else if (in->msg) {
        shm_msg *m = in->msg;
        m->x.got += len;
        if (m->x.got >= m->x.total) {
            in->msg = NULL;
            if (m->x.waiting)
                xfer_deliver_copy(&s->x, m->x.waiting, &m->x);
        }
    }
}

/* Data of the current eager message from src, at byte `at` of its ring. */
static void eager_data(shm_rank *s, int src, const unsigned char *rg, size_t at, uint64_t len)
{
    char *to = eager_dest(s, src);
    if (to && len)
        ring_read(s, rg, at, to, (size_t)len);
    eager_took(s, src, len);
}

/* A SMALL record's payload, len bytes in n lines from line pos of src's
 * ring (see SMALL_MAX); whole 56-byte pieces copied by constant size. */
static void small_data(shm_rank *s, int src, const unsigned char *rg, uint64_t pos, size_t n,
                       uint64_t len)
{
    char *to = eager_dest(s, src);
    uint64_t lines = s->area->ring_lines;
    if (to) {
        size_t piece, at = small_piece(pos, lines, 0, len, &piece), done = piece;
        memcpy(to, rg + at, piece);
        for (size_t k = 1; k < n; k++, done += piece) {
            at = small_piece(pos, lines, k, len, &piece);
            if (piece == LINE - STAMP)
                memcpy(to + done, rg + at, LINE - STAMP);
            else
                memcpy(to + done, rg + at, piece);
        }
    }
    eager_took(s, src, len);
}

/* Handles the record at the head of src's ring; false when there is none. */
static bool consume(shm_rank *s, int src)
{
    shm_in *in = &s->in[src];
    unsigned char *rg = ring(s, src, s->me);
    uint64_t lines = s->area->ring_lines;
    shm_hdr *h = (shm_hdr *)(rg + (in->pos % lines) * LINE);
    if (atomic_load_explicit(&h->seq, memory_order_acquire) != in->pos + 1)
        return false;
    uint32_t kind = h->kind;
    size_t off = kind == REC_SMALL ? SMALL_OFF : PAYLOAD_OFF;
    size_t at = (size_t)(in->pos % lines) * LINE + off;
    uint64_t len = h->len, n = record_lines(off, len);
    for (uint64_t l = 1; (kind == REC_SMALL || kind == REC_EAGER) && l < n; l++)
        __builtin_prefetch(rg + ((in->pos + l) % lines) * LINE); /* fetched while matching */
    switch (kind) {
    case REC_SMALL:
        arrive(s, src, h, true, len, 0);
        small_data(s, src, rg, in->pos, n, len);
        break;
    case REC_EAGER:
        arrive(s, src, h, true, h->total, h->sum);
        if (h->total == 0) {
            if (in->req) {
                shm_req *r = in->req;
                in->req = NULL;
                xfer_finish_recv(&s->x, &r->x, r->x.sum);
            }
            in->msg = NULL;
        } else {
            eager_data(s, src, rg, at, len);
        }
        break;
    case REC_FRAG:
        eager_data(s, src, rg, at, len);
        break;
    case REC_RTS:
        arrive(s, src, h, false, h->total, h->sum);
        break;
    case REC_CTS:
        serve(s, src, (shm_req *)(uintptr_t)h->arg[0], h->arg[1], h->arg[2], h->total, h->sum);
        break;
    case REC_RDATA: {
        shm_req *r = (shm_req *)(uintptr_t)h->total;
        if (len && r->x.buf)
            ring_read(s, rg, at, (char *)r->x.buf + h->sum, (size_t)len);
        recv_advance(s, r, len);
        break;
    }
    case REC_PUTDONE:
        recv_advance(s, (shm_req *)(uintptr_t)h->arg[0], h->arg[1]);
        break;
    case REC_FIN: {
        shm_req *r = (shm_req *)(uintptr_t)h->arg[0];
        double started;
        memcpy(&started, &h->arg[1], sizeof started);
        if (started > 0)
            r->x.started = started;
        xfer_complete(&s->x, &r->x, 0);
        break;
    }
    default:
        xfer_fatal(&s->x, CL_EPROTO, "a record of unknown kind %u from rank %d", kind, src);
        break;
    }
    if (n <= SHORT_LINES && kind != REC_SMALL) /* no old payload on the next lap */
        for (uint64_t l = 1; l < n; l++)
            atomic_store_explicit(&((shm_hdr *)(rg + ((in->pos + l) % lines) * LINE))->seq, 0,
                                  memory_order_relaxed);
    in->pos += n;
    atomic_store_explicit(&s->consumed[src * s->n + s->me].lines, in->pos,
                          memory_order_release);
    rank_progressed(&s->x.base);
    return true;
}

/* One pass over every ring and every outgoing queue.  Returns how many
 * records were read, or a negative CL_E* after a fatal error. */
static int progress(shm_rank *s)
{
    int handled = 0;
    for (int src = 0; src < s->n; src++) {
        int k = 0;
        while (consume(s, src))
            k++;
        if (k) {
            handled += k;
            notify(s, src); /* it may be waiting for room */
        }
    }
    for (int dst = 0; dst < s->n; dst++)
        if (s->out[dst].head)
            push(s, dst);
    return s->x.failed ? s->x.failed : handled;
}

static int shm_poll(real_rank *r)
{
    return progress((shm_rank *)r);
}

/* ---- comm_ops ---- */

static int shm_isend(cl_comm *c, const void *buf, size_t bytes, int dst, int tag, uint32_t ctx,
                     cl_request **out)
{
    shm_rank *s = c->world->backend;
    if (s->x.failed)
        return s->x.failed;
    rank_active(&s->x.base);
    shm_req *r = (shm_req *)xfer_send_new(&s->x, buf, bytes, dst, tag, ctx, s->eager_limit,
                                          &s->out[dst].nmsg);
    if (!r)
        return CL_ENOMEM;
    *out = &r->x.base;
    enqueue(s, dst, r);
    push(s, dst);
    return 0;
}

/* rank_wait's block hook: sleep on the doorbell.  Whoever publishes to
 * this rank, or frees room it may wait for, bumps the bell (notify()). */
static void shm_block(real_rank *base, cl_request **reqs, int n, wf_op call)
{
    shm_rank *s = (shm_rank *)base;
    shm_bell *b = &s->bells[s->me];
    atomic_store_explicit(&b->sleeping, 1, memory_order_relaxed);
    if (!s->area->membarrier || syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0))
        atomic_thread_fence(memory_order_seq_cst);
    uint32_t v = atomic_load_explicit(&b->word, memory_order_relaxed);
    bool done = true;
    for (int i = 0; i < n; i++)
        done = done && (!reqs[i] || reqs[i]->done);
    if (progress(s) == 0 && !done) {
        rank_publish_stale(base, reqs, n, call);
        struct timespec ts = {0, RANK_IDLE_MS * 1000000L};
        futex(&b->word, FUTEX_WAIT, v, &ts);
    }
    atomic_store_explicit(&b->sleeping, 0, memory_order_relaxed);
}

static const comm_ops shm_ops = XFER_OPS(shm_isend);

/* ---- a rank's transport ---- */

/* The rank's share of the area in its page tables (real/pages.h): the
 * bells, its consumed counters, the rings it writes and those it reads. */
static void populate(shm_rank *s)
{
    size_t n = (size_t)s->n, me = (size_t)s->me;
    pages_populate(s->area, (size_t)((unsigned char *)s->consumed - (unsigned char *)s->area));
    pages_populate(&s->consumed[me * n], n * sizeof *s->consumed);
    pages_populate(ring(s, s->me, 0), n * s->ring_bytes);
    for (int src = 0; src < s->n; src++) {
        pages_populate(&s->consumed[(size_t)src * n + me], sizeof *s->consumed);
        pages_populate(ring(s, src, s->me), s->ring_bytes);
    }
}

static int shm_rank_open(real_rank **out, const job *j, int rank, const real_opts *o, cl_diag *d)
{
    shm_rank *s = calloc(1, sizeof *s);
    size_t n = (size_t)j->nranks;
    /* The mapping starts zeroed: no line holds old payload, no bit is set. */
    size_t words = ((const shm_area *)j->transport)->ring_lines / 64;
    if (!s || !(s->out = calloc(n, sizeof *s->out)) || !(s->in = calloc(n, sizeof *s->in)) ||
        !(s->raw = calloc(n * words, sizeof *s->raw))) {
        if (s) {
            free(s->out);
            free(s->in);
            free(s);
        }
        return diag_set(d, CL_ENOMEM, "rank %d: out of memory", rank);
    }
    xfer_init(&s->x, &shm_ops, j, rank, o->job.check, sizeof(shm_req), sizeof(shm_msg), pull);
    s->x.base.poll = shm_poll;
    s->x.base.block = shm_block;
    unsigned char *p = j->transport;
    s->area = (shm_area *)p;
    p += align_up(sizeof(shm_area));
    s->bells = (shm_bell *)p;
    p += n * sizeof(shm_bell);
    s->consumed = (shm_consumed *)p;
    p += n * n * sizeof(shm_consumed);
    s->rings = p;
    s->n = (int)n;
    s->me = rank;
    s->ring_bytes = (size_t)s->area->ring_lines * LINE;
    for (size_t i = 0; i < n; i++)
        s->out[i].raw = s->raw + i * words;
    s->eager_limit = o->job.eager_limit;
    s->copy = o->copy;
    s->bells[rank].pid = (int32_t)getpid();
    /* Before this rank publishes anything: a peer's membarrier() from now
     * on orders our records (a rank that cannot register fences). */
    s->light = s->area->membarrier &&
               syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) == 0;
    populate(s);
    *out = &s->x.base;
    return 0;
}

bool shm_ring_position(const cl_comm *c, int dst, uint64_t *written, uint64_t *lines)
{
    const real_rank *r = c->world->backend;
    const shm_rank *s = (const shm_rank *)r;
    if (r->poll != shm_poll || dst < 0 || dst >= s->n)
        return false;
    *written = s->out[dst].pos;
    *lines = s->area->ring_lines;
    return true;
}

static void shm_rank_close(real_rank *base)
{
    shm_rank *s = (shm_rank *)base;
    for (int i = 0; i < s->n; i++) {
        shm_req *r = s->out[i].head;
        while (r) {
            shm_req *next = (shm_req *)r->x.next;
            if (r->x.kind == XFER_CTRL || r->x.kind == XFER_STREAM)
                free(r);
            r = next;
        }
    }
    xfer_release(&s->x);
    free(s->raw);
    free(s->out);
    free(s->in);
    free(s);
}

const real_transport shm_transport = {
    .name = "shm",
    .shared_bytes = shm_shared_bytes,
    .shared_init = shm_shared_init,
    .rank_open = shm_rank_open,
    .rank_close = shm_rank_close,
};
