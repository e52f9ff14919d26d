/*
 * shm.c - the shared-memory transport: how it works, the shared area and
 * a rank's transport (real/shm_impl.h says which file does the rest).
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
 * cache line zeroed on the producer's critical path costs one more
 * hand-off of a line between the cores, on every message (README, beside
 * `bench shm`'s figures, has what was measured).  So no one zeroes on the
 * critical path in the common case:
 *   - the consumer zeroes the seqs of a short record's payload lines (at
 *     most SHORT_LINES lines in all) once it has read them, before it says
 *     it has: they are in its cache, and the next lap finds zeros there;
 *   - the producer remembers which lines of its rings last held a long
 *     record's payload (one bit a line, its own memory) and zeroes the line
 *     after a record only when it is one of them.  Zeroing a long record's
 *     lines on the consumer's side instead would be a store per line
 *     before it says it has read them, where this is at most one line a
 *     record (it measured slower: README, beside `bench shm`'s figures).
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
#include <linux/membarrier.h>
#include <stdlib.h>
#include <string.h>

#include "core/comm.h"
#include "real/pages.h"
#include "real/shm_impl.h"

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

/* ---- comm_ops ---- */

/* rank_wait's block hook: sleep on the doorbell.  Whoever publishes to
 * this rank, or frees room it may wait for, bumps the bell (shm__notify()). */
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
    if (shm__progress(s) == 0 && !done) {
        rank_publish_stale(base, reqs, n, call);
        struct timespec ts = {0, RANK_IDLE_MS * 1000000L};
        shm__futex(&b->word, FUTEX_WAIT, v, &ts);
    }
    atomic_store_explicit(&b->sleeping, 0, memory_order_relaxed);
}

static const comm_ops shm_ops = XFER_OPS(shm__isend, NULL);

/* ---- a rank's transport ---- */

/* The rank's share of the area in its page tables (real/pages.h): the
 * bells, its consumed counters, the rings it writes and those it reads. */
static void populate(shm_rank *s)
{
    size_t n = (size_t)s->n, me = (size_t)s->me;
    pages_populate(s->area, (size_t)((unsigned char *)s->consumed - (unsigned char *)s->area));
    pages_populate(&s->consumed[me * n], n * sizeof *s->consumed);
    pages_populate(shm__ring(s, s->me, 0), n * s->ring_bytes);
    for (int src = 0; src < s->n; src++) {
        pages_populate(&s->consumed[(size_t)src * n + me], sizeof *s->consumed);
        pages_populate(shm__ring(s, src, s->me), s->ring_bytes);
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
    xfer_init(&s->x, &shm_ops, j, rank, o->job.check, sizeof(shm_req), sizeof(shm_msg), shm__pull);
    s->x.base.poll = shm__poll;
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
    s->copy = o->shm.copy;
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
    if (r->poll != shm__poll || dst < 0 || dst >= s->n)
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
