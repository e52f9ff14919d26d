/* rank.c - the part of a measured rank that does not move messages. */
#include "real/rank.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include "core/cache.h"
#include "core/debug.h"
#include "core/units.h"
#include "real/pages.h"

struct rank_block {
    rank_block *next;
    size_t bytes;
    void *data; /* 64-byte aligned */
};

void rank_init(real_rank *r, const comm_ops *ops, const job *j, int rank, bool check_all)
{
    memset(r, 0, sizeof *r);
    comm_world_init(&r->comm, ops, r, rank, j->nranks, true);
    r->job = j;
    r->slot = &j->slots[rank];
    r->recs = j->rec_cap ? j->recs + (size_t)rank * j->rec_cap : NULL;
    r->rank = rank;
    r->size = j->nranks;
    r->tracing = j->rec_cap > 0;
    r->run.check_all = check_all;
    r->cursor = &r->blocks;
    /* The hand-off of a cache line between cores costs well under a
     * microsecond, a sleeping wake-up tens: spin first, but only briefly
     * when ranks take turns on a core (the peer cannot run meanwhile). */
    r->oversubscribed = j->nranks > j->cores;
    r->spin = r->oversubscribed ? 5e-6 : 200e-6;
    /* This rank's parts of the job, in its page tables before it times
     * anything (real/pages.h). */
    pages_populate(r->slot, sizeof *r->slot);
    pages_populate(&j->iter_time[(size_t)rank * (size_t)j->iters],
                   (size_t)j->iters * sizeof *j->iter_time);
    if (rank == 0)
        pages_populate(j->iter_skew, (size_t)j->iters * sizeof *j->iter_skew);
    if (r->recs)
        pages_populate(r->recs, j->rec_cap * sizeof *r->recs);
    pages_warm_heap();
    pages_warm_stack();
}

void rank_release(real_rank *r)
{
    while (r->blocks) {
        rank_block *b = r->blocks;
        r->blocks = b->next;
        free(b->data);
        free(b);
    }
    r->cursor = &r->blocks;
}

double rank_now(const real_rank *r)
{
    const job *j = r->job;
    double t = j->tick.per_tick > 0 ? tick_seconds(&j->tick, tick_read()) : job_now() - j->t_base;
    return t * (1 + j->clock_drift) + j->clock_shift;
}

void rank_record(real_rank *r, rec_op op, int peer, int tag, uint64_t bytes, uint64_t msg,
                 double posted, double started, double finished, bool blocking)
{
    if (!r->tracing)
        return;
    uint64_t i = atomic_load_explicit(&r->slot->nrec, memory_order_relaxed);
    if (i < r->job->rec_cap)
        r->recs[i] = (cl_record){
            .posted = posted, .started = started, .finished = finished, .bytes = bytes,
            .msg = msg, .rank = r->rank, .peer = peer, .tag = tag, .iter = r->run.iter,
            .op = (uint8_t)op, .blocking = blocking,
        };
    atomic_store_explicit(&r->slot->nrec, i + 1, memory_order_relaxed);
}

/* ---- the watchdog's view ---- */

void rank_wait_begin(real_rank *r, wf_op call)
{
    job_slot_wait_begin(r->slot, call, r->run.iter, !r->run.in_pattern, r->run.returned);
}

void rank_wait_add(real_rank *r, wf_op op, int peer, int tag, uint64_t bytes)
{
    job_slot_wait_add(r->slot, &(wf_pending){.op = op, .peer = peer, .tag = tag,
                                             .bytes = bytes});
}

void rank_wait_end(real_rank *r)
{
    job_slot *s = r->slot;
    job_slot_wait_end(s);
    atomic_store_explicit(&s->state, JOB_BLOCKED, memory_order_release);
    r->blocked = true;
    r->published = r->progress;
}

void rank_unblock(real_rank *r)
{
    if (!r->blocked)
        return;
    atomic_store_explicit(&r->slot->state, JOB_RUNNING, memory_order_release);
    r->blocked = false;
}

void rank_publish(real_rank *r, cl_request **reqs, int n, wf_op call)
{
    rank_wait_begin(r, call);
    for (int i = 0; i < n; i++) {
        if (!reqs[i] || reqs[i]->done)
            continue;
        wf_pending p;
        r->describe(reqs[i], &p);
        rank_wait_add(r, p.op, p.peer, p.tag, p.bytes);
    }
    rank_wait_end(r);
}

void rank_publish_stale(real_rank *r, cl_request **reqs, int n, wf_op call)
{
    if (!r->blocked || r->progress != r->published)
        rank_publish(r, reqs, n, call);
}

/* ---- waiting ---- */

#define YIELDS 50 /* sched_yield calls before blocking, when oversubscribed */

static bool all_done(cl_request **reqs, int n)
{
    for (int i = 0; i < n; i++)
        if (reqs[i] && !reqs[i]->done)
            return false;
    return true;
}

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

int rank_wait(real_rank *r, cl_request **reqs, int n, wf_op call)
{
    double t0 = r->tracing ? rank_now(r) : 0, spin_until = 0;
    int yields = 0, err = 0;
    rank_active(r); /* a polling streak ends; this wait publishes its own */
    for (unsigned polls = 0; !all_done(reqs, n); polls++) {
        int got = r->poll(r);
        if (got < 0) {
            err = got;
            break;
        }
        if (got > 0) {
            spin_until = 0; /* things move: spin again before sleeping */
            yields = 0;
            continue;
        }
        if ((polls & 63) != 63) {
            cpu_relax();
            continue;
        }
        /* every 64 idle polls: spin on, yield or block? */
        double now = job_now();
        if (spin_until == 0)
            spin_until = now + r->spin;
        if (now < spin_until)
            continue;
        if (r->oversubscribed && yields < YIELDS) {
            yields++;
            sched_yield();
            continue;
        }
        r->block(r, reqs, n, call);
    }
    rank_unblock(r);
    if (!err && r->tracing && (call == WF_WAIT || call == WF_WAITALL))
        rank_record(r, REC_WAIT, -1, -1, 0, 0, t0, t0, rank_now(r), true);
    return err;
}

int rank_test(real_rank *r, cl_request *req, bool *done)
{
    int got = r->poll(r);
    if (got < 0)
        return got;
    *done = req->done;
    if (*done || got > 0) {
        rank_active(r);
    } else if (++r->polls >= 2 && !r->blocked) {
        cl_request *set[1] = {req};
        rank_publish(r, set, 1, WF_WAIT);
    }
    return 0;
}

uint64_t rank_checksum(const void *buf, uint64_t len)
{
    const unsigned char *p = buf;
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ len;
    uint64_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0x100000001b3ULL;
        h ^= h >> 29;
    }
    for (; i < len; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

void rank_detail(real_rank *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    diag_vfirst(&r->detail, 0, fmt, ap);
    va_end(ap);
}

void rank_failed(real_rank *r, int err, const char *fmt, ...)
{
    job_slot *s = r->slot;
    if (atomic_load_explicit(&s->state, memory_order_relaxed) == JOB_FAILED)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->why.msg, sizeof s->why.msg, fmt, ap);
    va_end(ap);
    s->status = err;
    atomic_store_explicit(&s->state, JOB_FAILED, memory_order_release);
}

/* ---- comm_ops shared by the real transports ---- */

static real_rank *rank_of(const cl_comm *c)
{
    return c->world->backend;
}

/* Busy work for `seconds`, polling the transport so peers' eager messages
 * keep draining, as a GPU kernel would not stop the NIC. */
int rank_op_wait(cl_comm *c, int n, cl_request **reqs, wf_op call)
{
    return rank_wait(rank_of(c), reqs, n, call);
}

int rank_op_test(cl_comm *c, cl_request *req, bool *done)
{
    return rank_test(rank_of(c), req, done);
}

int rank_op_compute(cl_comm *c, double seconds)
{
    real_rank *r = rank_of(c);
    double start = rank_now(r), now = start;
    rank_active(r);
    while (now - start < seconds) {
        int err = r->poll(r);
        if (err < 0)
            return err;
        rank_progressed(r); /* computing is the pattern's work going on */
        now = rank_now(r);
    }
    rank_record(r, REC_COMPUTE, -1, -1, 0, 0, start, start, now, true);
    return 0;
}

double rank_op_now(const cl_comm *c)
{
    return rank_now(rank_of(c));
}

/* Waiting for the window's start (core/sync.h).  A sleeping wake-up is
 * late by tens of microseconds, more on a busy machine, so a rank sleeps
 * only until WAKE_EARLY before t and spins the rest.  The last stretch
 * reads the clock and nothing else, so the rank leaves within one reading
 * of t (a pause between readings would make it later, and the ranks'
 * starts further apart).  Where ranks outnumber cores the spin yields: a
 * rank spinning on a core another rank needs to reach the start would
 * only make it later.  A start already past on arrival returns at once
 * (the rank starts late, and the start skew says so). */
#define WAKE_EARLY 200e-6 /* seconds */

void rank_op_wait_until(cl_comm *c, double t)
{
    real_rank *r = rank_of(c);
    const job *j = r->job;
    double now = rank_now(r);
    if (t - now > 2 * WAKE_EARLY) {
        /* How long, on the kernel's clock: the counter's rate is the
         * kernel's only to within its calibration (real/tick.h). */
        double at = job_now() + (t - WAKE_EARLY - now) / (1 + j->clock_drift);
        struct timespec ts = {.tv_sec = (time_t)at};
        ts.tv_nsec = (long)((at - (double)ts.tv_sec) * 1e9);
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
        now = rank_now(r);
    }
    if (r->oversubscribed) {
        for (; now < t; now = rank_now(r))
            sched_yield();
    } else if (j->tick.per_tick > 0 && now < t) {
        /* The counter against the start's own reading: nothing is
         * converted between two readings. */
        uint64_t at = tick_at(&j->tick, (t - j->clock_shift) / (1 + j->clock_drift));
        while (tick_read() < at)
            ;
    } else {
        while (now < t)
            now = rank_now(r);
    }
}

/* Where a block of bytes starts: on a cache line, and on a page from a
 * page up.  The kernel pins a buffer it copies between processes
 * (process_vm_readv: shm's and rdma's large messages) page by page, and a
 * 64 KiB buffer at a line's offset spans 17 pages, not 16 (fi_pingpong
 * page-aligns its buffers too; README: rdma has the measurement). */
static size_t block_align(size_t bytes)
{
    long page = sysconf(_SC_PAGESIZE);
    return page > 64 && bytes >= (size_t)page ? (size_t)page : 64;
}

/* Blocks are kept across iterations: a pattern asks for the same sizes in
 * the same order every iteration, so the timed ones reuse warm memory. */
void *rank_op_alloc(cl_comm *c, size_t bytes)
{
    real_rank *r = rank_of(c);
    rank_block *b = *r->cursor;
    size_t align = block_align(bytes);
    if (!b || b->bytes < bytes || (uintptr_t)b->data % align) {
        size_t round = (bytes + align - 1) & ~(align - 1);
        rank_block *nb = malloc(sizeof *nb);
        void *data = round >= bytes ? aligned_alloc(align, round ? round : align) : NULL;
        if (!nb || !data) {
            free(nb);
            free(data);
            char t[UNITS_BUF];
            /* The failure itself, not what the pattern's next call makes
             * of a NULL buffer (CL_EINVAL). */
            rank_failed(r, CL_ENOMEM, "rank %d: out of memory allocating %s", r->rank,
                        units_size_str(t, bytes));
            return NULL;
        }
        nb->bytes = round;
        nb->data = data;
        nb->next = b ? b->next : NULL;
        if (b) {
            free(b->data);
            free(b);
        }
        *r->cursor = b = nb;
        memset(b->data, 0, bytes);
    } else if (r->comm.checking) {
        memset(b->data, 0, bytes);
    }
    r->cursor = &b->next;
    return b->data;
}

void rank_op_print(cl_comm *c, const char *line)
{
    real_rank *r = rank_of(c);
    char buf[600];
    int n = snprintf(buf, sizeof buf, "rank %d: %s\n", r->rank, line);
    if (n > (int)sizeof buf - 1) {
        n = (int)sizeof buf - 1;
        buf[n - 1] = '\n';
    }
    /* One write per line: lines of several ranks never mix, and nothing
     * waits in a stdio buffer when the rank _exits. */
    for (const char *p = buf; n > 0;) {
        ssize_t w = write(r->job->print_fd, p, (size_t)n);
        if (w <= 0)
            break;
        p += w;
        n -= (int)w;
    }
}

void rank_op_fail(cl_comm *c, const char *msg)
{
    real_rank *r = rank_of(c);
    rank_failed(r, CL_ECHECK, "rank %d: data check failed: %s", r->rank, msg);
}

void rank_op_misuse(cl_comm *c, const char *msg)
{
    real_rank *r = rank_of(c);
    rank_failed(r, CL_ECHECK, "rank %d: misuse: %s", r->rank, msg);
}

void rank_op_span(cl_comm *c, rec_op op, double start, double end)
{
    rank_record(rank_of(c), op, -1, -1, 0, 0, start, start, end, true);
}

/* ---- a rank's life ---- */

static int fail_code(real_rank *r, int err, const char *during)
{
    if (r->detail.msg[0])
        rank_failed(r, err, "rank %d: %s: %s (%s)", r->rank, during, r->detail.msg,
                    cl_errname(err));
    else
        rank_failed(r, err, "rank %d: %s: %s (%s)", r->rank, during, cl_strerror(err),
                    cl_errname(err));
    return r->slot->status == CL_ECHECK ? 1 : 2;
}

/* The driver's hooks: before an iteration's barrier every block is
 * prepared as --cache says (outside the timed region: the pattern never
 * sees it) and cl_alloc hands out the same blocks again from the first;
 * a failure reported (cl_fail, a misuse) stands even when the pattern
 * went on and returned 0. */
static void iteration_begin(run_rank *run)
{
    real_rank *r = run->backend;
    r->cache_lines = 0;
    for (rank_block *b = r->blocks; b; b = b->next)
        r->cache_lines += cache_prepare(run->job->cache, b->data, b->bytes);
    r->cursor = &r->blocks;
}

static int iteration_end(run_rank *run, int rc)
{
    real_rank *r = run->backend;
    if (!rc && atomic_load(&r->slot->state) == JOB_FAILED)
        rc = r->slot->status;
    return rc;
}

int rank_main(real_rank *r, const run_job *rj)
{
    const job *j = r->job;
    r->run.comm = &r->comm;
    r->run.job = rj;
    r->run.iter_time = &j->iter_time[(size_t)r->rank * (size_t)j->iters];
    r->run.iter_skew = r->rank == 0 ? j->iter_skew : NULL;
    r->run.clock_shared = j->only < 0; /* one launcher forked every rank */
    r->run.begin = iteration_begin;
    r->run.end = iteration_end;
    r->run.backend = r;
    r->run.records_elsewhere = true; /* the launcher gathers them (launch.c) */
    atomic_store_explicit(&r->slot->state, JOB_RUNNING, memory_order_release);
    const char *during = NULL;
    int err = run_rank_iterations(&r->run, &during);
    if (err)
        return fail_code(r, err, during);
    r->tracing = false; /* the closing barrier is not part of any iteration */
    err = cl_barrier(&r->comm);
    if (err) {
        run_lines_release(&r->run.held);
        return fail_code(r, err, "the closing barrier failed");
    }
    /* Every rank's times are in (each wrote its own before the barrier):
     * its lines of the median iteration go out now (core/run.h). */
    double *t = malloc((size_t)j->iters * sizeof *t);
    if (t) {
        run_iter_times(j->iter_time, j->nranks, j->iters, t);
        run_rank_print_held(&r->run, run_median_iter(t, j->iters));
        free(t);
    } else {
        run_rank_print_held(&r->run, 0);
    }
    r->slot->messages = r->messages;
    atomic_store_explicit(&r->slot->state, JOB_DONE, memory_order_release);
    return 0;
}
