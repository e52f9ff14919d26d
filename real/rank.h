/*
 * rank.h - one measured rank process: what every real transport shares.
 *
 * A transport's rank state embeds real_rank first, and its comm_ops use the
 * rank_* functions here for everything that is not moving messages: time,
 * cl_alloc blocks, output, failed checks, records, and the status slot the
 * launcher's watchdog reads.  rank_main() is the rank's life: core/run.h's
 * iteration driver timed by the wall clock, then a closing barrier.
 */
#ifndef REAL_RANK_H
#define REAL_RANK_H

#include <stdbool.h>
#include <stdint.h>

#include "core/comm.h"
#include "core/run.h"
#include "real/job.h"

#define RANK_IDLE_MS 50 /* a blocked rank looks around this often anyway, every
                           transport: a wake-up lost to a race costs at most this */

typedef struct rank_block rank_block;

typedef struct real_rank {
    cl_comm comm;        /* the world communicator of this rank */
    const job *job;
    job_slot *slot;      /* this rank's slot in the shared job */
    cl_record *recs;     /* this rank's room for records */
    int rank, size;
    run_rank run;        /* its place in the iteration driver (core/run.h): the
                            running iteration, --check's data checks on all */
    bool tracing;        /* keep records */
    rank_block *blocks;  /* cl_alloc blocks, in call order ... */
    rank_block **cursor; /* ... and the one the next call reuses */
    size_t cache_lines;  /* cache lines of the blocks that --cache prepared before
                            the running iteration (core/cache.h; 0 for warm) */
    bool blocked;        /* JOB_BLOCKED is published */
    uint64_t progress;   /* things completed so far; the slot holds a copy */
    uint64_t published;  /* progress when the wait was last published */
    uint64_t messages; /* pattern messages sent */
    int polls;           /* failed cl_test calls in a row */
    double spin;         /* seconds a wait polls before it yields or blocks */
    bool oversubscribed; /* more ranks than cores: yield before blocking */
    /* The transport's hooks (set after rank_init):
     * poll: one pass of progress; > 0 something was handled, < 0 a fatal
     *   CL_E* (compute, rank_wait and rank_test call it);
     * block: the wait found nothing to do for a while: publish the wait if
     *   stale (rank_publish_stale) and sleep until something may have
     *   happened or a short while passed;
     * describe: a pending request as the watchdog shows it. */
    int (*poll)(struct real_rank *r);
    void (*block)(struct real_rank *r, cl_request **reqs, int n, wf_op call);
    void (*describe)(const cl_request *req, wf_pending *out);
    cl_diag detail;      /* the transport's account of the first failure */
} real_rank;

/* Fills r's common part; the transport sets r->poll. */
void rank_init(real_rank *r, const comm_ops *ops, const job *j, int rank, bool check_all);
/* Frees the cl_alloc blocks. */
void rank_release(real_rank *r);

/* Seconds since the launch, on the clock every rank of this launcher
 * shares (plus COMMLAB_CLOCK_SHIFT, job.h). */
double rank_now(const real_rank *r);

/* Appends a record when tracing (a rank that runs out of room counts the
 * rest as dropped). */
void rank_record(real_rank *r, rec_op op, int peer, int tag, uint64_t bytes, uint64_t msg,
                 double posted, double started, double finished, bool blocking);

/* Something completed.  The watchdog reads progress to tell whether ranks
 * it sees blocked are still moving, and at --timeout whether a run is slow
 * or stuck (a running rank whose count stands made no progress), so the
 * slot's copy is written every time: a plain store (relaxed, no locked
 * add) to the rank's own slot line, which the launcher reads every 10 ms
 * (then one transfer of the line to the rank's core). */
static inline void rank_progressed(real_rank *r)
{
    r->progress++;
    atomic_store_explicit(&r->slot->progress, r->progress, memory_order_relaxed);
}

/* Publishing a blocked wait: begin, add each pending operation, end.  The
 * launcher never sees a half-written wait (seqlock). */
void rank_wait_begin(real_rank *r, wf_op call);
void rank_wait_add(real_rank *r, wf_op op, int peer, int tag, uint64_t bytes);
void rank_wait_end(real_rank *r);
/* The rank left its blocking call. */
void rank_unblock(real_rank *r);
/* Publishes the requests of reqs[0..n) not done yet as the rank's wait. */
void rank_publish(real_rank *r, cl_request **reqs, int n, wf_op call);
/* Publishes the wait unless the one published still holds (nothing
 * progressed since). */
void rank_publish_stale(real_rank *r, cl_request **reqs, int n, wf_op call);

/* comm_ops.wait and .test for every real transport: poll, spin a while,
 * yield when ranks outnumber cores, then r->block.  A rank that keeps
 * polling one request with cl_test, nothing else in between, is as stuck
 * as one blocked in cl_wait: from its second failed test on, the watchdog
 * sees it waiting on that request. */
int rank_wait(real_rank *r, cl_request **reqs, int n, wf_op call);
int rank_test(real_rank *r, cl_request *req, bool *done);
/* The rank posts or computes: a polling streak is over. */
static inline void rank_active(real_rank *r)
{
    r->polls = 0;
    if (r->blocked)
        rank_unblock(r);
}

/* ---- helpers of the transports' protocols ---- */

/* Messages of the pattern use even context ids; odd ones are the barrier's. */
static inline bool rank_user_ctx(uint32_t ctx)
{
    return (ctx & 1u) == 0;
}
/* The id pairing a send's record with its receive's: the k-th message from
 * src to dst (both sides count). */
static inline uint64_t rank_msg_id(int src, int dst, uint64_t k)
{
    return (uint64_t)(uint32_t)src << 44 | (uint64_t)(uint32_t)dst << 24 | (k & 0xffffff);
}
/* The --check checksum of a message. */
uint64_t rank_checksum(const void *buf, uint64_t len);

/* The transport's words for a failure, kept for the rank's final message
 * ("a 1 MiB message from rank 0 (tag 0) does not fit ...").  First wins. */
void rank_detail(real_rank *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* comm_ops entries every real transport uses as they are. */
int rank_op_wait(cl_comm *c, int n, cl_request **reqs, wf_op call);
int rank_op_test(cl_comm *c, cl_request *req, bool *done);
int rank_op_compute(cl_comm *c, double seconds);
double rank_op_now(const cl_comm *c);
void rank_op_wait_until(cl_comm *c, double t);
void *rank_op_alloc(cl_comm *c, size_t bytes);
void rank_op_print(cl_comm *c, const char *line);
void rank_op_fail(cl_comm *c, const char *msg);
void rank_op_misuse(cl_comm *c, const char *msg);
void rank_op_span(cl_comm *c, rec_op op, double start, double end);

/* Runs rj's warm-up and timed iterations (run_rank_iterations; each
 * rank's own times go to the job's iter_time), then a last barrier so no
 * rank leaves while a peer still needs it.  Returns the process exit code:
 * 0, 1 (a data check failed) or 2 (another failure; the slot says why). */
int rank_main(real_rank *r, const run_job *rj);

/* Marks the slot failed with a message (first failure wins). */
void rank_failed(real_rank *r, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
