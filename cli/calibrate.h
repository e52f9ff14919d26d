/*
 * calibrate.h - measuring a transport and fitting its machine model, for
 * `commlab calibrate` and for `commlab compare` when no machine file
 * exists yet.
 *
 * The method: first the reference probe (calibrate_probe: 8 B and 1 MiB),
 * the regime the machine is in, kept in the file; taken again, up to
 * CALIB_REF_TRIES times, while the gate's probes right after it say it
 * caught a passing regime (regime_confirm).  Then for each size the
 * pingpong pattern runs measured through real_run() (2 ranks bound to
 * cores, 2 warm-up iterations), in interleaved rounds: every size once a
 * round, CALIB_ROUNDS rounds (CALIB_ROUNDS_QUICK with --quick), so that a
 * slow spell of a shared machine lands on one run of many sizes rather
 * than on every run of a few; a size's one-way time is the median of its
 * rounds' medians of half the round trip (what `commlab run pingpong
 * --backend B` reports for one run).  Iterations per run follow from the
 * size's time so that each size takes about the same wall time (a budget),
 * between a floor and a ceiling.  The times are fitted by core/fit (forced
 * break at the eager limit, more segments where one line leaves large
 * residuals); a segment that fit_segment_usable() refuses has its sizes
 * measured again, up to CALIB_ATTEMPTS measurements, and is never written:
 * calibration fails instead, unless two measurements in a row agree within
 * CALIB_AGREE at each of its sizes (then the bend is the transport's, not
 * a slow spell's, and it is kept, with a warning).  The segments become a machine
 * (core/machine.h) whose segment i ends at its last measured size.
 *
 * Then the gaps: for each size up to CALIB_STREAM_TOP, a window pattern
 * (rank 0 isends W = CALIB_WINDOW messages back to back, rank 1 receives
 * them all with blocking receives and answers with one empty message) runs
 * with a window of 1 and of W, and up to the eager limit a third time with
 * P = CALIB_POSTED_WINDOW messages into receives rank 1 posted first.  The
 * posted window's median less the window of 1's, over P - 1, is the time
 * each further message adds when its receive is posted, LogGP's g + n G
 * (the latency and the answer cancel out): the posted gap.  In the blocking window the
 * first message finds its receive posted and the other W - 2 do not, so
 * (T(W) - T(1) - posted gap) / (W - 2) is the gap of a message that takes
 * the unexpected path; without a posted window, (T(W) - T(1)) / (W - 1).
 * These runs and the exchange's below go in interleaved rounds too, each
 * with half a ping-pong size's budget.  Per ping-pong segment, a line
 * fitted to each kind of gap (core/fit) becomes the segment's gap and
 * gap_bandwidth, and posted_gap and posted_gap_bandwidth (core/machine.h);
 * a segment above CALIB_STREAM_TOP has none, above the eager limit no
 * posted one.
 *
 * Last the exchange (chapter 02's pattern): at every size both ranks post
 * a receive from the other, send to it, and wait for both; the span is the
 * one-way time of a message that moves while another moves the opposite
 * way.  Fitted piecewise like the ping-pong (its own breaks), it becomes
 * the machine's duplex segments.
 *
 * Beside the transport, the host's reduction (cli/calib_reduce.c): for
 * each element type, one process sums two buffers of CALIB_REDUCE_BYTES
 * with core/reduce.c's loop (cl_reduce_local's), CALIB_REDUCE_REPS times
 * after one pass that warms pages and caches; the median time gives the
 * machine's reduce_bandwidth of that type, its gamma.
 */
#ifndef CL_CALIBRATE_H
#define CL_CALIBRATE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cli/backend.h"
#include "cli/regime.h"
#include "cli/run_size.h"
#include "core/fit.h"
#include "core/machine.h"
#include "core/record.h"

/* 4: a pipeline's default microbatches, and few enough that a window of
 * eager messages up to 48 KiB fits one shm ring (256 KiB): a longer window
 * measures the ring's flow control, which few patterns meet. */
#define CALIB_WINDOW 4                /* messages of the streaming window */
/* 8: chunked's and relay-chunked's default pieces.  The first further
 * messages of a stream into posted receives cost less than the later ones
 * (on shm at 8 B: 15 ns the second, about 40 each from the fifth), so the
 * posted window is as long as the streams it models. */
#define CALIB_POSTED_WINDOW 8         /* messages of the posted window */
#define CALIB_STREAM_TOP (4u << 20)   /* bytes: the largest size streamed */
#define CALIB_ROUNDS 5                /* rounds of the ping-pong's sizes */
#define CALIB_ROUNDS_QUICK 3          /* ... with --quick */
#define CALIB_MAX_ROUNDS 5            /* the most of either, and of the probe's */
#define CALIB_ROUND_ITERS 5           /* fewest timed iterations of a size a round */
#define CALIB_ATTEMPTS 3              /* measurements of a segment before giving up */
#define CALIB_AGREE 0.10              /* two measurements this close: not noise */
#define CALIB_NREF 2                  /* sizes of the reference probe: */
#define CALIB_REF_SMALL REGIME_PROBE_BYTES /* bytes: latency, and the gate's probe */
#define CALIB_REF_LARGE (1u << 20)    /* bytes: bandwidth */
#define CALIB_PROBE_ROUNDS 3          /* rounds of the probe */
#define CALIB_REF_TRIES 3             /* reference probes at most, while the gate's probes
                                         after one say it read a passing regime */
#define CALIB_REDUCE_BYTES (8u << 20) /* bytes a reduction measured sums */
#define CALIB_REDUCE_REPS 7           /* its timed repetitions: the median is kept */

typedef struct calib_opts {
    const char *backend;  /* a measured backend's name: "shm", "tcp", "rdma" */
    const backend_info *be; /* its entry in the backend table */
    const char *provider; /* rdma: the provider as given (NULL: auto) */
    uint64_t eager_limit; /* bytes: the transport's, and the forced break */
    bool quick;           /* 1 B..4 MiB by 2x and a small budget: a few seconds */
    bool bind;            /* pin the 2 ranks to cores */
    const char *listen;   /* tcp: the address ranks listen on; NULL: loopback */
    double netlab;        /* tcp: --netlab, bytes/s a port; 0: none */
    const struct netlab *lab;    /* that netlab, held by the caller (run_lab_open), 2 ports
                             at least; every run goes over it */
    bool progress;        /* draw a progress bar on stderr */
    bool strict;          /* a segment no measurement fits: refuse (else keep, warned) */
    cache_mode cache;     /* --cache: every run measures in this mode, and the
                             machine file records it */
    double regime_wait;   /* --regime-wait: seconds the regime gate may wait for
                             the reference probe's regime (cli/regime.h); 0: no gate */
} calib_opts;

typedef struct calib_point {
    uint64_t bytes;
    int iters;   /* timed iterations run, all rounds */
    cl_stats t;  /* one-way seconds: the median of the rounds' medians, the min
                    and max over every iteration */
    double t1, tw; /* seconds: median of the window of 1 and of CALIB_WINDOW
                      messages; NAN: not streamed (above CALIB_STREAM_TOP) */
    double tp;     /* seconds: median of the window of CALIB_POSTED_WINDOW into
                      receives posted first; NAN: not streamed or above the eager
                      limit */
    double gap;    /* seconds each further message of a stream adds, its receive
                      not posted; NAN: not streamed */
    double posted_gap; /* the same, its receive posted first; NAN: no tp */
    cl_stats x;    /* seconds: the exchange's span over its iterations */
} calib_point;

typedef struct calib_result {
    calib_point *points; /* n points in increasing size, malloc'd */
    size_t n;
    regime_gate gate;    /* what the regime gate did */
    double passing[CALIB_REF_TRIES]; /* seconds: the 8 B of each reference probe taken
                                        again because it read a passing regime */
    int npassing;
    fit_result fit;      /* segments over points' medians */
    fit_result duplex;   /* segments over the exchanges' medians */
    machine m;           /* the model, ready to save */
} calib_result;

/* Measures and fits.  Returns CLI_EXIT_OK, or the exit status after
 * printing the error (a failed size, CLI_EXIT_FAILED; a signal, 128+N);
 * release r either way. */
int calibrate_measure(const calib_opts *o, calib_result *r);
void calibrate_release(calib_result *r);

/* The reference probe: a ping-pong of CALIB_REF_SMALL and of
 * CALIB_REF_LARGE bytes on 2 ranks, CALIB_PROBE_ROUNDS rounds of both (300
 * and 30 iterations after 2 warm-up), each size's one-way time the median
 * of its rounds' medians, into ref.  base gives the backend and its
 * options (bind, listen, provider, eager limit); its pattern, ranks,
 * iterations and arguments are not used.  A few tenths of a second.
 * CLI_EXIT_OK, or the exit status of a failed run (already reported). */
int calibrate_probe(const run_opts *base, run_env *env, machine_ref ref[CALIB_NREF]);

/* configs/machines/<host>-<backend>.yaml under commlab's data folder (the
 * one configs/tiers.yaml is found in), host with anything but letters,
 * digits, '.', '_' and '-' turned into '-'.  For rdma the provider it runs
 * on is part of the name, <host>-rdma-<provider>.yaml: a model is the
 * provider's (tcp and verbs differ tenfold).  provider is the resolved
 * one (calibrate_provider); NULL for other backends.  Over a netlab
 * (netlab_Bps > 0) the port's rate is, <host>-tcp-netlab-1gbit.yaml: a
 * model of that switch, not of loopback.  0, or CLI_EXIT_USAGE after
 * printing why. */
int calibrate_default_path(char *buf, size_t len, const char *backend, const char *provider,
                           double netlab_Bps);

/* The measured backend called name (NULL: not given) for command cmd,
 * with the options of g checked against it (cli/backend.h).  0 with *out
 * set, or CLI_EXIT_USAGE after printing why. */
int calibrate_find_backend(const char *cmd, const char *name, const backend_given *g,
                           const backend_info **out);

/* --netlab with the other options of calibrate or compare: not with
 * --listen (a netlab gives every rank its own address).  0 (also without
 * a netlab), or CLI_EXIT_USAGE after printing why. */
int calibrate_check_netlab(double netlab_Bps, const char *listen);

/* The provider a run of be with --provider asked (NULL or "auto": what
 * auto picks on one host) runs on, into buf; "" for a backend without
 * providers.  0, or CLI_EXIT_USAGE after printing why. */
int calibrate_provider(const backend_info *be, const char *asked, char *buf, size_t len);

/* The host name as the machine file records it. */
void calibrate_hostname(char *buf, size_t len);

/* ---- the points-and-model CSV that calibrate and compare print ----
 *
 * Exactly (`commlab plot FILE.csv` reads it):
 *
 *   # commlab-plot: compare
 *   # title: <pattern>, <backend>, <R> ranks, host <hostname>
 *   # note: <note>                (only when there is one)
 *   pattern,backend,ranks,bytes,modeled_s,measured_median_s,measured_min_s,measured_max_s,error_pct,measured_q1_s,measured_q3_s
 *   pingpong,shm,2,8,2.1e-07,2.3e-07,2.2e-07,2.9e-07,-8.7,2.25e-07,2.4e-07
 *   pingpong,shm,2,11,2.1e-07,,,,,,
 *
 * every value with %.6g; error_pct = 100 (modeled - median) / median.  The
 * measured sizes come first, then the model alone at sizes between them
 * (the measured columns empty), so a figure draws the model as a curve. */
typedef struct compare_row {
    uint64_t bytes;
    double modeled;    /* seconds */
    cl_stats measured; /* seconds */
    bool outside;      /* kept although measured in another regime (cli/regime.h) */
} compare_row;

double compare_error_pct(const compare_row *r);
/* rows[0..n) measured, then curve[0..ncurve) (only bytes and modeled are
 * read) as rows of the model alone; eager_limit (0: none) and note (NULL:
 * none) go on comment lines above them. */
void compare_print_csv(FILE *f, const char *pattern, const char *backend, int ranks,
                       uint64_t eager_limit, const char *note, const compare_row *rows,
                       size_t n, const compare_row *curve, size_t ncurve);

/* The sizes at which the model's curve is drawn: from the smallest of
 * sizes[0..n) to the largest, COMPARE_CURVE_STEPS a doubling, those of
 * sizes left out.  Writes at most COMPARE_CURVE_MAX into out and returns
 * how many.  Cannot fail. */
#define COMPARE_CURVE_STEPS 4
#define COMPARE_CURVE_MAX 256
size_t compare_curve_sizes(const uint64_t *sizes, size_t n, uint64_t out[COMPARE_CURVE_MAX]);

/* How fast this host reduces each cl_dtype (bytes/s of src, a sum of two
 * buffers of CALIB_REDUCE_BYTES, the median of CALIB_REDUCE_REPS passes)
 * into out.  0, or CL_ENOMEM with out unchanged. */
int calibrate_reduce(double out[MACHINE_NDTYPES]);

#endif
