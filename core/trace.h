/*
 * trace.h - records as a Chrome / Perfetto trace (Trace Event Format JSON).
 *
 * Open the file in https://ui.perfetto.dev or chrome://tracing.  Layout:
 *
 *   - one process (pid 0) named "commlab <pattern> (<backend>)";
 *   - each rank is a group of thread tracks with
 *         tid = rank * stride + lane
 *     where stride is TRACE_LANE_STRIDE, or more when some rank needs more
 *     lanes than that (then the largest lane count, so tids stay unique).
 *     Lane 0, named "rank N", is the rank's program: its blocking calls
 *     (send, recv, wait, compute, barrier) nested in its iteration spans,
 *     plus an instant "isend"/"irecv" where a non-blocking call was posted.
 *     Lanes 1.., named "rank N (async k)", hold the non-blocking requests:
 *     one span per request from post to completion, assigned greedily so
 *     that spans on one lane never overlap.  thread_sort_index is the tid,
 *     so tracks sort by rank then lane.
 *   - with meta->kinds > 0 a record's rank is a track of a kind instead:
 *     record rank t is run rank t / kinds, kind t % kinds, and its lanes
 *     are named "rank R NAME" (kind_names[kind]; "rank R" when NULL), so a
 *     run's ranks each get a group of tracks per kind of traffic (the
 *     caller maps its records: `commlab step` puts compute, tensor,
 *     pipeline and data parallelism apart).
 *   - a send or receive whose data started moving after it was posted gets
 *     a nested "transfer" span (started..finished): the part before it is
 *     waiting for the peer (rendezvous);
 *   - a flow arrow per message whose send and receive are both present
 *     (same msg != 0): "s" at the send's start on the sender's track, "f"
 *     with "bp":"e" at the receive's finish on the receiver's track, "id" =
 *     msg.
 *
 * Timestamps are microseconds relative to meta->origin, rounded to whole
 * nanoseconds (the resolution Perfetto keeps), so events nanoseconds apart
 * stay apart and a span's ts + dur is exactly its end.  The output depends
 * only on the records and meta: the same input gives the same bytes.
 *
 * Records are only read; nothing here keeps state between calls.
 */
#ifndef CL_TRACE_H
#define CL_TRACE_H

#include <stddef.h>
#include <stdio.h>

#include "core/diag.h"
#include "core/record.h"

#define TRACE_LANE_STRIDE 64 /* tids per rank unless a rank needs more lanes */

typedef struct trace_meta {
    const char *pattern; /* pattern name, "pingpong" */
    const char *backend; /* backend name, "sim", "shm" */
    int ranks;           /* ranks in the run; every record's rank is below it */
    double origin;       /* seconds: the time shown as 0 */
    int kinds;           /* 0, or tracks per rank: then ranks counts tracks */
    const char *const *kind_names; /* kinds names (NULL entries: none) */
} trace_meta;

/* Writes the trace of recs[0..n) to f.  Records may come in any order.
 * CL_EINVAL when meta is incomplete (NULL names, ranks < 1) or a record has
 * a rank outside [0, ranks) or a time that is not finite, or an unknown op:
 * then nothing is written.  CL_ENOMEM when the working arrays cannot be
 * allocated: nothing is written.  CL_EIO when f reports an error after
 * writing: f then holds a partial trace. */
int trace_write(FILE *f, const cl_record *recs, size_t n, const trace_meta *meta);

/* trace_write() to a new file at path (replaced if it exists).  On failure
 * d says what failed, quoting path; a partly written file is removed. */
int trace_write_file(const char *path, const cl_record *recs, size_t n,
                     const trace_meta *meta, cl_diag *d);

#endif
