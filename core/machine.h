/*
 * machine.h - a calibrated machine model: the piecewise alpha-beta cost of
 * one message on one host and transport, as `commlab calibrate` measures
 * it and the simulator replays it (`--model FILE`).
 *
 * A machine file (configs/machines/<host>-<backend>.yaml):
 *
 *   host: node7                     # where it was measured
 *   backend: shm                    # the transport measured
 *   provider: tcp                   # rdma only: the libfabric provider
 *   netlab: 1Gbit/s                 # tcp only: measured over a netlab of this
 *                                   #   rate per port (real/netlab.h)
 *   eager_limit: 64KiB              # the eager/rendezvous switch it ran with
 *   cache: fresh                    # optional: the --cache mode it was measured
 *                                   #   in (core/cache.h); a file without it is
 *                                   #   from before --cache, measured warm
 *   date: 2024-05-02T10:11:12Z      # optional
 *   method: ping-pong ...           # optional, free text
 *   segments:                       # increasing `upto`, at least one
 *     - {upto: 64KiB, alpha: 312.5ns, bandwidth: 7.8GB/s, r2: 0.998, max_residual_pct: 3.1,
 *        gap: 160ns, gap_bandwidth: 22GB/s}
 *     - {upto: 64MiB, alpha: 4.1us, bandwidth: 13.2GB/s}
 *
 * A message of n bytes costs  T(n) = alpha + n / bandwidth  of the first
 * segment with n <= upto, or of the last segment when n is above every
 * upto.  `bandwidth: inf` is a segment with no per-byte cost.  r2 and
 * max_residual_pct are the calibration's fit quality, kept for reading;
 * they do not change the model.  T(n) is the one-way time of a blocking
 * ping-pong: above the eager limit it already contains the rendezvous
 * handshake, so the simulator charges none on top (sim/engine.h).
 *
 * gap and gap_bandwidth (optional, LogGP's g and 1/G) say how closely one
 * rank's messages of that segment follow each other on one link when it
 * sends many back to back: the start of the next is at least
 * gap(n) = gap + n / gap_bandwidth after the start of the previous, and an
 * eager send completes gap(n) after it starts (or when its message has
 * arrived, T(n), if that is sooner).  A segment without them
 * spaces messages by n / bandwidth, as a plain alpha-beta link does (files
 * written before gaps existed load that way).  gap_bandwidth without gap
 * is an error; gap alone means no per-byte part (gap_bandwidth: inf).
 *
 * posted_gap and posted_gap_bandwidth (optional, with a gap) space the
 * same way the eager messages whose receive was posted by the end of the
 * instant they were sent in: such a message lands in its receive's buffer
 * at once, while one that finds no receive takes the transport's
 * unexpected path (a copy into a held buffer, another into the receive
 * later), which is what gap measures (calibrate's window of blocking
 * receives).  A segment without them spaces both kinds by its gap, and
 * rendezvous messages always take the gap:
 *
 *     - {upto: 64KiB, alpha: 204ns, bandwidth: 23GB/s, gap: 73ns,
 *        gap_bandwidth: 24GB/s, posted_gap: 60ns, posted_gap_bandwidth: 31GB/s}
 *
 * duplex (optional) is a second list of segments with the keys of the
 * first but no gap: the one-way time of a message that moves while one of
 * its ranks moves another message the opposite way (its sender receiving,
 * or its receiver sending), as an exchange between two ranks measures it:
 *
 *   duplex:
 *     - {upto: 64KiB, alpha: 402ns, bandwidth: 7.1GB/s}
 *     - {upto: 64MiB, alpha: 3.2us, bandwidth: 11GB/s}
 *
 * Both directions of an exchange run at once on two cores; their copies
 * share the caches and the memory bus, and each rank's CPU both sends and
 * receives.  A file without it prices such a message like any other.
 *
 * reference (optional) is the regime the calibration was taken in: the
 * one-way time of a short ping-pong at a few sizes (`commlab calibrate`
 * probes 8 B and 1 MiB), which `commlab compare` probes again to tell
 * whether the machine still runs as it did:
 *
 *   reference:
 *     - {bytes: 8, time: 121.3ns}
 *     - {bytes: 1MiB, time: 70.21us}
 *
 * reduce_bandwidth (optional) is how fast one rank of this host reduces
 * (cl_reduce_local, a sum of two buffers), per element type, as
 * `commlab calibrate` measures it; a simulation with the file charges each
 * reduction bytes / that rate (the gamma of the alpha-beta-gamma model),
 * and a file without it, or without a type, reduces for free:
 *
 *   reduce_bandwidth: {f64: 11.2GB/s, f32: 10.9GB/s, bf16: 3.1GB/s,
 *                      f16: 2.2GB/s, i32: 10.8GB/s, i64: 11.1GB/s}
 *
 * Every load error names file:line:column, the key and the bad value.  A
 * machine is a plain value (fixed arrays, nothing allocated): copy it,
 * no release needed.
 */
#ifndef CL_MACHINE_H
#define CL_MACHINE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "core/cache.h"
#include "core/diag.h"

#define MACHINE_MAX_SEGMENTS 16
#define MACHINE_TEXT_MAX 256
#define MACHINE_MAX_REFS 4
#define MACHINE_NDTYPES 6 /* cl_dtype values (core/reduce.h's REDUCE_NDTYPES) */

typedef struct machine_segment {
    uint64_t upto;           /* bytes: the largest message it covers */
    double alpha;            /* seconds per message, >= 0 */
    double bandwidth;        /* bytes per second, > 0; INFINITY: no per-byte cost */
    double r2;               /* the fit's R^2; NAN when the file has none */
    double max_residual_pct; /* the fit's largest relative residual, %; NAN: none */
    double gap;              /* seconds between back-to-back sends; NAN: none */
    double gap_bandwidth;    /* bytes per second of back-to-back sends; INFINITY:
                                no per-byte part (meaningless when gap is NAN) */
    double posted_gap;       /* seconds, the same for eager messages whose receive
                                was posted in time; NAN: as gap (needs a gap) */
    double posted_gap_bandwidth; /* bytes per second of those; INFINITY: no
                                    per-byte part */
} machine_segment;

typedef struct machine_ref {
    uint64_t bytes; /* the probe's message size */
    double time;    /* seconds: its one-way time when calibrated, > 0 */
} machine_ref;

typedef struct machine {
    char path[MACHINE_TEXT_MAX];   /* where it was loaded from ("" if built) */
    char host[MACHINE_TEXT_MAX];   /* hostname it was measured on */
    char backend[32];              /* "shm", "tcp", "rdma" */
    char provider[32];             /* rdma: the libfabric provider ("tcp"), else "" */
    double netlab;                 /* tcp: bytes/s each way of every port of the netlab
                                      (namespaces behind a switch) it was measured
                                      over; 0: none */
    char date[64];                 /* ISO 8601, or "" */
    char method[MACHINE_TEXT_MAX]; /* how it was measured, or "" */
    uint64_t eager_limit;          /* bytes */
    cache_mode cache;              /* --cache it was measured in (warm when not recorded) */
    bool cache_recorded;           /* the file says so (false: an older file, read as warm) */
    machine_segment seg[MACHINE_MAX_SEGMENTS]; /* increasing upto */
    size_t nseg;                   /* 1..MACHINE_MAX_SEGMENTS */
    machine_segment duplex[MACHINE_MAX_SEGMENTS]; /* increasing upto, no gaps */
    size_t nduplex;                /* 0 (none) ..MACHINE_MAX_SEGMENTS */
    machine_ref ref[MACHINE_MAX_REFS]; /* the reference probe at calibration */
    size_t nref;                   /* 0 (none: an older file) ..MACHINE_MAX_REFS */
    double reduce_bandwidth[MACHINE_NDTYPES]; /* bytes/s one rank reduces, per cl_dtype
                                      (f64, f32, bf16, f16, i32, i64); 0: not measured */
} machine;

/* Loads a machine file.  CL_EIO, CL_EPARSE or CL_ECONFIG with d naming
 * file:line:column; *m is unchanged on error. */
int machine_load(machine *m, const char *path, cl_diag *d);
/* The same from YAML text; name stands for the file in messages. */
int machine_load_string(machine *m, const char *name, const char *text, cl_diag *d);

/* Writes m as a machine file that machine_load reads back (times and
 * bandwidths to 6 significant digits).  Returns 0, or CL_EIO when f
 * reports a write error. */
int machine_write(const machine *m, FILE *f);
/* Writes m to path through a temporary file renamed into place, creating
 * the file's folder (one level) if missing.  CL_EIO with d naming the path
 * and errno; nothing is left behind on error. */
int machine_save(const machine *m, const char *path, cl_diag *d);

/* The segment a message of bytes pays (cannot fail on a loaded machine). */
const machine_segment *machine_segment_of(const machine *m, uint64_t bytes);
/* T(bytes) = alpha + bytes / bandwidth of that segment, seconds. */
double machine_time(const machine *m, uint64_t bytes);
/* The least time between the starts of two back-to-back messages of bytes:
 * gap + bytes / gap_bandwidth of bytes' segment into *out and true, or
 * false (*out unchanged) when that segment has no gap.  Cannot fail. */
bool machine_gap(const machine *m, uint64_t bytes, double *out);
/* The same with bytes' segment's posted gap, or its gap when it has none
 * (false when it has neither).  Cannot fail. */
bool machine_posted_gap(const machine *m, uint64_t bytes, double *out);
/* Whether any segment of m has a posted gap.  Cannot fail. */
bool machine_has_posted_gap(const machine *m);
/* The one-way time of a message of bytes moving while its ranks move
 * another the opposite way: alpha + bytes / bandwidth of bytes' duplex
 * segment into *out and true, or false (*out unchanged) when m has no
 * duplex segments.  Cannot fail. */
bool machine_duplex_time(const machine *m, uint64_t bytes, double *out);

/* Checks the invariants a loaded machine keeps (1..MAX segments, upto
 * increasing, alpha >= 0, bandwidth > 0, gap NAN or >= 0 with
 * gap_bandwidth > 0; the same of the 0..MAX duplex segments, without
 * gaps; 0..MAX references of times > 0).  For asserts and tests. */
bool machine_check(const machine *m);

#endif
