/*
 * plot.h - plot CSVs and their rendering with gnuplot.
 *
 * A plot CSV is a result saved so it can be drawn, and redrawn later with
 * `commlab plot FILE.csv`.  It opens with `# key: value` lines, the first
 * of which names its kind, then a header line, then one data row per line:
 *
 *     # commlab-plot: compare
 *     # title: pingpong, shm, 2 ranks, host myhost
 *     pattern,backend,ranks,bytes,modeled_s,measured_median_s,...
 *     pingpong,shm,2,8,2.1e-07,2.3e-07,2.2e-07,2.9e-07,-8.7,2.2e-07,2.5e-07
 *
 * The kinds and their columns are in plot.c (plots/README.md documents
 * them).  plot_csv_read() checks a file completely in C, naming the line
 * and the value of any error, so gnuplot only ever sees files it can draw.
 *
 * Rendering runs gnuplot (fork/exec, no shell) once per figure and output
 * format, with the template plots/FIGURE.gp and its inputs given as
 * `gnuplot -e "name='value'; ..."`; values are quoted for gnuplot.
 *
 * Writers turn tiers, sweeps and a run's records into plot CSVs.
 *
 * The module is three files (cli/plot_impl.h says which does what) that
 * depend on core/ and libc only (no other cli/ file), so unit tests
 * compile them in.  Nothing here has global state; nothing is printed
 * except by the writers to the FILE they are given and by gnuplot itself.
 */
#ifndef CL_PLOT_H
#define CL_PLOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/diag.h"
#include "core/record.h"

struct tier_set;

typedef enum plot_kind {
    PLOT_COMPARE,  /* modeled next to measured, per size (commlab compare --csv) */
    PLOT_TIERS,    /* one message's time on each tier (commlab price --plot) */
    PLOT_SWEEP,    /* T(n) per tier over sizes (commlab sweep --plot) */
    PLOT_TIMELINE, /* one iteration's records per rank (commlab run --timeline) */
    PLOT_COLLECTIVES, /* every algorithm of a collective over sizes (commlab collectives) */
    PLOT_VALIDATE, /* every tutorial pattern's error per size (commlab validate --plot) */
    PLOT_STEP,     /* training steps in parts, a layout a bar (commlab step --plot) */
    PLOT_KIND_COUNT
} plot_kind;

#define PLOT_TITLE_MAX 240   /* bytes kept of a title, with its NUL */
#define PLOT_SERIES_MAX 1024 /* bytes of the series list, with its NUL */

/* What reading a plot CSV learnt about it. */
typedef struct plot_csv {
    plot_kind kind;
    char title[PLOT_TITLE_MAX]; /* "# title:", or the file's name; no control chars */
    char side[16];              /* timeline: "# side:" (sim, shm, tcp); "" if none */
    char status[32];            /* timeline: "# status:" (ok, deadlock, ...); "ok" if none */
    double origin;              /* timeline: "# origin_s:", the run's clock at the rows'
                                   time 0 (seconds); 0 if none or not a number */
    double eager;               /* compare: "# eager_limit_bytes:", where the protocol
                                   changes; 0 if none or not a number */
    char series[PLOT_SERIES_MAX]; /* distinct series keys in order of appearance,
                                     space-separated: tiers (tiers, sweep),
                                     pattern,backend,ranks (compare), ops (timeline) */
    size_t nseries;             /* keys in series */
    size_t rows;                /* data rows (>= 1) */
} plot_csv;

/* The kind called name ("compare"), or -1.  Cannot fail. */
int plot_kind_find(const char *name);
/* The name of a kind, "compare"; "?" for an unknown one.  Cannot fail. */
const char *plot_kind_name(int kind);
/* The header line a kind's CSV must have, without the newline. */
const char *plot_kind_header(int kind);

/* Reads and checks a plot CSV from f; name is what messages call it
 * ("a.csv:4: column 'bytes' must be ..." ).  Fills *out and returns 0, or
 * CL_EPARSE with d naming the line, column and bad value (CL_EIO when f
 * fails, CL_ENOMEM).  *out is meaningful only on success. */
int plot_csv_read(FILE *f, const char *name, plot_csv *out, cl_diag *d);

/* plot_csv_read() of the file at path; CL_ENOENT/CL_EIO when it cannot be
 * opened, with d quoting path. */
int plot_csv_load(const char *path, plot_csv *out, cl_diag *d);

/* ---- rendering ---- */

enum { PLOT_PNG = 1, PLOT_SVG = 2, PLOT_DUMB = 4 };

/* Parses "png", "svg", "dumb", "all" (png, svg and dumb) or a comma list
 * of them into PLOT_* bits.  CL_EPARSE with d quoting the bad word. */
int plot_terms_parse(const char *text, unsigned *terms, cl_diag *d);

/* mkdir -p dir: makes dir and its missing parents.  0, or CL_EINVAL with d
 * naming the folder that could not be made (those made before stay). */
int plot_dirs_make(const char *dir, cl_diag *d);

/* One drawing: one CSV, or two timelines stacked (the first above). */
typedef struct plot_job {
    const char *path[2];     /* the CSV files; path[1] NULL unless stacked */
    const plot_csv *csv[2];  /* what plot_csv_load() said of them */
    const char *plotdir;     /* the folder holding the templates (*.gp) */
    const char *outdir;      /* where figures go; made (with parents) if missing */
    unsigned terms;          /* PLOT_* bits */
    const char *gnuplot;     /* the program to run; NULL: "gnuplot" from PATH */
    unsigned columns;        /* dumb: the terminal's width in characters; 0: 110 */
} plot_job;

/* Draws the job: for each of the kind's figures and each term in png, svg,
 * one gnuplot run writing outdir/NAME.png or .svg, whose path is printed
 * to `report` as one line; dumb draws to stdout.  NAME is the CSV's name
 * without its folder and ".csv" ("a-vs-b" when stacked), with "-FIGURE"
 * added for kinds with several figures (compare: -latency, -bandwidth,
 * -error).  Errors: CL_ENOENT when gnuplot or a template is missing;
 * CL_EINVAL when outdir cannot be made, a path has control characters or
 * a stacked job is not two timelines; CL_EIO when gnuplot fails (its own
 * messages went to stderr): the figure it was writing is then removed, the
 * ones written before are kept and were reported. */
int plot_render(const plot_job *job, FILE *report, cl_diag *d);

/* ---- writers of plot CSVs ----
 * Each writes the `# commlab-plot` and `# title` lines (title with control
 * characters replaced by spaces), the header and the rows.  They return
 * CL_EIO when f reports an error (f then holds a partial file). */

/* kind tiers: one row per tier, the time of one message of `bytes`. */
int plot_write_tiers(FILE *f, const struct tier_set *ts, uint64_t bytes, const char *title);
/* kind sweep: one row per (size, tier). */
int plot_write_sweep(FILE *f, const struct tier_set *ts, const uint64_t *sizes, size_t n,
                     const char *title);

/* One algorithm at one size, simulated beside its alpha-beta formula. */
typedef struct plot_coll_row {
    uint64_t bytes;
    const char *algo;  /* "ring" */
    double simulated;  /* seconds */
    double formula;    /* seconds */
    bool best;         /* the fastest simulated algorithm at this size */
} plot_coll_row;

/* kind collectives: one row per (size, algorithm). */
int plot_write_collectives(FILE *f, const plot_coll_row *rows, size_t n, const char *title);

/* One pattern at one size, measured next to its model (validate). */
typedef struct plot_validate_row {
    const char *pattern; /* the row's name in validate's table: "pipeline-1f1b" */
    uint64_t bytes;
    double modeled;      /* seconds */
    double measured;     /* seconds: the median */
} plot_validate_row;

/* kind validate: one row per (pattern, size), with the error in %. */
int plot_write_validate(FILE *f, const plot_validate_row *rows, size_t n, const char *title);

/* One layout's step: the rank that ended last, its time in parts. */
typedef struct plot_step_row {
    int tp, dp, pp;
    double step;                /* seconds: the step */
    double compute, tp_s, pp_s, dp_s; /* seconds: its compute and waits */
} plot_step_row;

/* kind step: one row per layout, in the order given. */
int plot_write_step(FILE *f, const plot_step_row *rows, size_t n, const char *title);

/* What a timeline says about its run. */
typedef struct plot_timeline_meta {
    const char *title;  /* "pipeline, sim (nvlink), 4 ranks, ..." */
    const char *side;   /* backend: sim, shm, tcp */
    const char *status; /* "ok", or what ended the run ("deadlock", ...) */
} plot_timeline_meta;

/* kind timeline: one row per record of the last iteration in recs[0..n)
 * (the largest `iter`: the last timed one of a run that completed, the one
 * that stalled otherwise), times in seconds since the earliest `posted` of
 * that iteration; `stalled` is 1 for a call that never completed.  Writes `# iteration: N`.  CL_EINVAL when n is 0 or a
 * record's time is not finite (nothing written); CL_EIO as above. */
int plot_write_timeline(FILE *f, const cl_record *recs, size_t n,
                        const plot_timeline_meta *meta);

#endif
