/*
 * compare.h - a pattern measured next to its calibrated model, size by
 * size: the machinery `commlab compare` and `commlab validate` share.
 *
 * A comparison is a session: the machine file (loaded, or calibrated
 * first when this host's is missing or --recalibrate asks), the netlab
 * its runs go over (when --netlab), the simulator's machine mesh, the
 * reference probe's drift, and the modeled side's options.  Within it,
 * compare_measure() runs the pattern of co->run at every size of co->run
 * measured, and modeled, into rows of core figures (cli/calibrate.h's
 * compare_row).  The caller prints them.
 *
 * A measurement and a model taken in different --cache modes time
 * different things (core/cache.h): compare_open refuses the pair unless
 * co->mixed_cache, and then the caller says so on every row.
 */
#ifndef CL_COMPARE_H
#define CL_COMPARE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cli/calibrate.h"
#include "cli/regime.h"
#include "cli/run_size.h"
#include "core/json.h"
#include "core/machine.h"

/* The least move of a reference called drift, %: the probe's own spread
 * between runs in one regime (cli/regime.h). */
#define DRIFT_FLOOR_PCT REGIME_TOL_PCT

typedef struct compare_opts {
    run_opts run;      /* pattern, backend, ranks, sizes, iters, pattern args, cache */
    const char *model; /* --model, or NULL: this host's file */
    const machine *m;  /* the model's machine file, once loaded */
    bool quick;        /* a calibration run first is a --quick one */
    bool recalibrate;  /* --recalibrate */
    bool mixed_cache;  /* --mixed-cache: a model of another --cache mode is used anyway */
    int repeat;        /* --repeat R: measurements of every size, >= 1 */
    double budget;     /* seconds a size's timed iterations aim at when run.iters
                          is 0; 0: calibrate's, 0.2 s */
    int max_iters;     /* the most timed iterations a size takes then (10 the
                          fewest); 0: 1000 */
    const char *save;  /* --save FILE.csv, or NULL */
    double regime_wait; /* --regime-wait: seconds the gate may wait (0: no gate) */
    int lo_iters, hi_iters; /* the iterations the sizes ran: fewest, most */
} compare_opts;

/* The reference probe against the machine file's (core/machine.h). */
typedef struct compare_drift {
    size_t n;                             /* probes: the file's, 0 if it has none */
    machine_ref cal[MACHINE_MAX_REFS];    /* at calibration */
    double before[MACHINE_MAX_REFS];      /* seconds, before the measurements */
    double after[MACHINE_MAX_REFS];       /* seconds, after them */
    double threshold_pct[MACHINE_MAX_REFS]; /* the model's claimed residual there */
    bool moved[MACHINE_MAX_REFS];
    bool any;                             /* some probe moved */
} compare_drift;

/* One comparison's set-up (see the top).  Zero it before compare_open. */
struct sim_net;

typedef struct compare_session {
    machine m;         /* the model */
    char path[1100];   /* where it was read from */
    struct sim_net *net; /* the machine mesh (none over a netlab) */
    run_env env;       /* where runs ran */
    run_lab lab;       /* the netlab every run goes over, when --netlab */
    compare_drift dr;  /* the reference probe */
    regime_gate gate;  /* its 8 B figure's regime, every measured size run in it */
    bool mismatch;     /* the model's --cache is not the measurement's (mixed_cache) */
    FILE *lines;       /* /dev/null, opened by this session for co->run.lines */
} compare_session;

/* Opens co's session into s: where the patterns' own lines go
 * (co->run.lines, when the caller set none: /dev/null, as the runs of a
 * comparison would print them twice a size, model and measurement; valid
 * until compare_close), the netlab (ports: co->run.ranks, at least
 * 2; or the one the caller opened into s->lab), the machine file (calibrating first when missing or asked), the
 * check of its --cache mode against co->run.cache, the simulator's mesh,
 * co->run.eager_limit from the file, co->m, the drift's calibrated side.
 * 0, or the exit status after printing why; compare_close s either way. */
int compare_open(compare_opts *co, compare_session *s);
/* Releases s.  Returns rc, or when rc is 0 the netlab's closing status
 * (a signal that came while it was held). */
int compare_close(compare_session *s, int rc);

/* The reference probe before or after the measurements into s->dr (run
 * in the model's --cache mode, as the reference was); nothing when the
 * file has none.  0, or the run's exit status. */
int compare_probe(const compare_opts *co, compare_session *s, bool after);
/* Which references moved by more than their threshold, before or after.
 * Cannot fail. */
void compare_drift_judge(compare_drift *dr);
/* The one drift line (prefix first), or nothing when none moved. */
void compare_drift_print(FILE *f, const compare_drift *dr, const char *prefix);
/* How many of rows[0..n) were kept from another regime (cli/regime.h). */
size_t compare_rows_outside(const compare_row *rows, size_t n);
/* Row r as JSON keys of the open object: bytes, iters, modeled_s,
 * measured_s {median, min, max}, error_pct, other_regime. */
void compare_row_json(json_writer *w, const compare_row *r);
/* The drift and the references as JSON keys of the open object. */
void compare_drift_json(json_writer *w, const compare_drift *dr);

/* The modeled side of co->run: one exact iteration, no warm-up, priced
 * alone on a machine mesh, shared over a netlab's switch.  Cannot fail. */
run_opts compare_sim_opts(const compare_opts *co);
/* One size of co->run's pattern modeled (on s's mesh, or on one switch
 * over a netlab) into row, with sim's options.  The run's status (0 or a
 * reported CL_E*). */
int compare_model_size(const compare_opts *co, compare_session *s, const run_opts *sim,
                       uint64_t bytes, run_row *row);
/* One measurement of every size of co->run next to the model into rows
 * (n = co->run.nsizes); *done counts the rows filled; first: the first
 * measurement of the session (its first run may warn, and it resets
 * co's iteration range).  Returns the last run's status. */
int compare_measure(compare_opts *co, compare_session *s, bool first, compare_row *rows,
                    size_t *done);
/* The median over rows[0..n) of |error_pct|; NAN when n is 0 or out of
 * memory. */
double compare_median_abs_error(const compare_row *rows, size_t n);
/* "fresh" measured against a model of "warm": the words of a row of a
 * mixed pair.  Cannot fail. */
void compare_cache_words(char *buf, size_t len, const compare_opts *co, const machine *m);

#endif
