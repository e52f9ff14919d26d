/*
 * record.h - what every operation leaves behind, and statistics over results.
 *
 * Data flows one way: a backend runs a pattern on every rank and each
 * operation (send, recv, wait, compute, barrier, one timed iteration) appends
 * a cl_record to a rec_log; records become per-iteration times, which
 * stats_compute() turns into median/min/max/mean; those become tables, JSON
 * and traces (core/trace.h).
 *
 * Times in a record are double seconds on the backend's clock (virtual for
 * sim, CLOCK_MONOTONIC for the real transports), with
 * posted <= started <= finished.
 *
 * Ownership.  A rec_log is caller memory; its array v belongs to the log and
 * is freed by rec_log_release().  Records are copied in: the log keeps no
 * pointer into the caller's data.  Nothing here has global state.
 */
#ifndef CL_RECORD_H
#define CL_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a record describes. */
typedef enum rec_op {
    REC_SEND,    /* cl_send (blocking = 1) or cl_isend (blocking = 0) */
    REC_RECV,    /* cl_recv (blocking = 1) or cl_irecv (blocking = 0) */
    REC_WAIT,    /* cl_wait / cl_waitall: the time the rank blocked */
    REC_COMPUTE, /* cl_compute */
    REC_BARRIER, /* cl_barrier */
    REC_ITER,    /* one whole iteration of the pattern on one rank */
    REC_OP_COUNT /* number of ops; not an op */
} rec_op;

typedef struct cl_record {
    double posted;    /* seconds: when the call was made */
    double started;   /* seconds: when data began to move (== posted if unknown) */
    double finished;  /* seconds: when it completed */
    uint64_t bytes;   /* payload bytes */
    uint64_t msg;     /* message id pairing a send with its receive (0 = none) */
    int32_t rank;     /* world rank that did it */
    int32_t peer;     /* world rank on the other side, -1 if none */
    int32_t tag;      /* message tag; 0 when not a message */
    int32_t iter;     /* iteration index (warm-up negative) */
    uint8_t op;       /* rec_op */
    uint8_t blocking; /* 1 for calls that blocked the rank, 0 for isend/irecv posts */
    uint8_t stalled;  /* 1: a blocking call that never completed (a deadlock, a
                         failed run); `finished` is the last moment it is known
                         to have waited (sim: when the run stopped; measured:
                         when it was called), not a completion */
} cl_record;

/* Name of an op as the API spells it: "send", "isend", "recv", "irecv",
 * "wait", "compute", "barrier", "iter"; "?" for an unknown op.  Cannot fail;
 * the string is static. */
const char *rec_op_name(int op, int blocking);

/* ---- the log: a growable array with a memory cap ---- */

typedef struct rec_log {
    cl_record *v;   /* the records kept, in the order added */
    size_t n;       /* records kept */
    size_t cap;     /* records v has room for */
    size_t limit;   /* most records kept; 0 = no limit */
    size_t dropped; /* records added past limit: counted, not kept */
} rec_log;

/* An empty log that keeps at most `limit` records (0: no limit).  Allocates
 * nothing; cannot fail. */
void rec_log_init(rec_log *l, size_t limit);

/* Appends a copy of *r.  When the log already holds `limit` records the
 * record is counted in l->dropped and 0 is returned: a long run keeps its
 * first records and says how many it lost.  CL_ENOMEM when growing fails;
 * then l is unchanged. */
int rec_log_add(rec_log *l, const cl_record *r);

/* Appends a stalled record: the blocking call *call describes (its rank,
 * iter, op, peer, tag and bytes; the rest is ignored), which the run never
 * came back from, posted at since (when the rank made it) and known to
 * have waited until until (the simulator: the moment the run stopped; a
 * measured run's launcher, which cannot read a stopped rank's clock:
 * since).  As rec_log_add. */
int rec_log_stalled(rec_log *l, const cl_record *call, double since, double until);

/* Frees the array and leaves an empty log with the same limit (dropped is
 * reset).  Cannot fail; safe on an initialised or already released log. */
void rec_log_release(rec_log *l);

/* True when the log's invariants hold (n <= cap, n <= limit when limited,
 * v is NULL only when cap is 0).  For asserts and tests. */
bool rec_log_check(const rec_log *l);

/* ---- statistics over samples (per-iteration times, seconds) ---- */

typedef struct cl_stats {
    double median; /* middle sample; mean of the middle two for even n */
    double min;    /* smallest sample */
    double max;    /* largest sample */
    double mean;   /* arithmetic mean */
    size_t n;      /* number of samples */
    double q1, q3; /* 25th and 75th percentiles, interpolated linearly between
                      the sorted samples at rank p (n - 1) (Hyndman and Fan's
                      type 7, R's and NumPy's default); median <= q3, q1 <= median */
} cl_stats;

/* Fills *out from samples[0..n).  samples is only read (a sorted copy is
 * made).  CL_EINVAL when n == 0, samples is NULL or a sample is not
 * finite (NaN or infinity: no statistic would be meaningful);
 * CL_ENOMEM when the copy cannot be allocated.  On failure *out is
 * unchanged. */
int stats_compute(const double *samples, size_t n, cl_stats *out);

#endif
