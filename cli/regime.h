/*
 * regime.h - measuring in one regime of a machine that changes under the
 * measurement.
 *
 * A shared virtual machine is not one machine over minutes: the 2-core VM
 * of chapter 06 moves between a fast regime (8 B one way in 190-260 ns on
 * shared memory) and a slow one (420-810 ns), often within a minute and
 * for the whole machine at once.  A model calibrated in one regime cannot
 * predict a measurement taken in the other, and a calibration that
 * crosses from one to the other fits a line through two machines.
 *
 * A gate holds the regime wanted: the 8 B one-way time of the reference
 * probe (cli/calibrate.h) and how far from it a probe may read.  Before a
 * run, regime_enter probes (a ping-pong of 8 B, REGIME_PROBE_ITERS timed
 * iterations: a run of its own, some 10 ms) unless the last probe, under
 * REGIME_FRESH seconds old, read the regime; while a probe reads another
 * regime it waits REGIME_PAUSE seconds and probes again, until the gate's
 * budget of waiting is spent.  After the run, regime_probe probes again:
 * a run between two probes that read the regime was measured in it.  The
 * caller measures a run that was not again, up to REGIME_TRIES times,
 * then keeps it and says so (compare's and validate's rows, calibrate's
 * summary).  A gate with no reference (ref 0) never probes: every run is
 * taken as it comes.
 */
#ifndef CL_REGIME_H
#define CL_REGIME_H

#include <stdbool.h>
#include <stdio.h>

#include "cli/run_size.h"
#include "core/json.h"

/* A probe this far from the reference, %, reads another regime: the
 * probe's own spread between runs in one regime.  On the 2-core VM ten
 * compares after one calibration probed 8 B at 105-110 ns against 120 ns
 * calibrated (up to 12.5 % apart), while the other regime is 3.5 x
 * slower. */
#define REGIME_TOL_PCT 20.0
#define REGIME_PROBE_BYTES 8
#define REGIME_PROBE_ITERS 200
#define REGIME_FRESH 1.0          /* seconds a probe that read the regime stands for */
#define REGIME_PAUSE 0.25         /* seconds between two probes that read another */
#define REGIME_TRIES 3            /* measurements of a run, in all */
#define REGIME_WAIT_DEFAULT 60.0 /* seconds of waiting a command may spend: a regime of
                                    the 2-core VM lasts about a minute */
#define REGIME_MIXED_PCT 10.0    /* runs kept from another regime, % of all, above which
                                    a calibration says it mixes two machines */
#define REGIME_CONFIRM 5         /* probes that check a new reference is the machine's
                                    prevailing regime (regime_confirm) */

typedef struct regime_gate {
    run_opts probe; /* the probe's run (regime_probe_opts) */
    double ref;     /* seconds: the regime's 8 B one-way time; 0: no gate */
    double tol_pct; /* a probe further than this from ref, %, reads another regime */
    double budget;  /* seconds of waiting left */
    double waited;  /* seconds waited so far */
    int probes;     /* probes run */
    int outside;    /* probes that read another regime */
    int runs;       /* runs measured through the gate, each once or more */
    int remeasured; /* runs measured again because a probe after them read another */
    int kept_outside; /* runs kept although a probe around them read another */
    double last;    /* seconds: the last probe's 8 B one-way median */
    double last_at; /* CLOCK_MONOTONIC seconds it was taken */
    bool in;        /* the last probe read the regime */
} regime_gate;

/* The gate for the regime whose 8 B one-way time is ref seconds, tol_pct
 * wide, with budget seconds of waiting, its probes run as base's
 * (regime_probe_opts; base's --cache the reference's own).  No gate (ref
 * 0: runs are taken as they come) for ref or budget 0, or under a
 * backend that joins a job (mpi), whose processes must all take the same
 * branches. */
regime_gate regime_gate_of(const run_opts *base, double ref, double tol_pct, double budget);

/* Whether a probe of t seconds reads g's regime.  Cannot fail. */
bool regime_within(const regime_gate *g, double t);

/* The probe's run: base's backend and its options (bind, listen,
 * provider, eager limit, cache, netlab), a ping-pong of 2 ranks, 2
 * warm-up iterations, no output of its own. */
run_opts regime_probe_opts(const run_opts *base);

/* One probe into g->last and g->in.  0, or the run's status (run_size's:
 * a CL_E*, already reported). */
int regime_probe(regime_gate *g, run_env *env);

/* Whether g's reference is the regime the machine is in now rather than a
 * passing one: REGIME_CONFIRM probes right after it, *prevails when most of
 * them read it.  A reference taken in a passing spell makes the gate spend
 * its whole budget waiting for that spell to come back, measuring only in
 * the moments it does (on the 2-core VM a calibration's first probe read
 * 8 B at 398 ns where every probe after it read 112 ns: its sizes up to 8 B
 * were measured at 398 ns, the rest at 112).  The probes count as the
 * gate's.  With no reference, *prevails and no probe.  0, or a probe's
 * status. */
int regime_confirm(regime_gate *g, run_env *env, bool *prevails);

/* Returns once a probe reads g's regime (at once when the last one did,
 * under REGIME_FRESH seconds ago) or g's budget is spent (g->in false).
 * 0, or a probe's status. */
int regime_enter(regime_gate *g, run_env *env);

/* A run (fn(arg): 0 or its status) measured in g's regime: entered
 * (regime_enter), run, and probed after; measured again while a probe
 * around it read another regime, REGIME_TRIES times in all and while
 * g's budget lasts, then kept with *outside set.  With no reference, fn
 * once.  0, or fn's or a probe's status. */
typedef int regime_run_fn(void *arg);
int regime_measure(regime_gate *g, run_env *env, regime_run_fn *fn, void *arg, bool *outside);

/* --regime-wait TIME: 0 (no gate: runs are taken as they come) or how
 * long a command may wait for the regime, up to an hour.  0, or
 * CLI_EXIT_USAGE after saying why. */
int regime_parse_wait(const char *text, double *out);
/* The default of --regime-wait into *out: COMMLAB_REGIME_WAIT when set
 * (the test suites set 0: a machine loaded by design is not to be waited
 * for), else REGIME_WAIT_DEFAULT.  0, or CLI_EXIT_USAGE after saying why. */
int regime_default_wait(double *out);

/* Whether more than REGIME_MIXED_PCT % of g's runs were kept from
 * another regime: what was measured mixes two machines.  Cannot fail. */
bool regime_mixed(const regime_gate *g);

/* The one line that says what g did ("regime: ..."), or nothing for a
 * gate that never probed. */
void regime_print(FILE *f, const regime_gate *g, const char *prefix);
/* The gate as the JSON key "regime" of the open object (nothing for a
 * gate with no reference). */
void regime_json(json_writer *w, const regime_gate *g);

#endif
