/* step_run.h - `commlab step`'s pieces shared by its files: one step run
 * on a row of the backend table with its figures summed (cli/cmd_step.c),
 * and the sweep over layouts (cli/step_sweep.c). */
#ifndef CL_STEP_RUN_H
#define CL_STEP_RUN_H

#include "cli/backend.h"
#include "cli/cli.h"
#include "cli/plot.h"
#include "cli/run_size.h"
#include "core/json.h"
#include "core/step.h"

/* What the ranks did, over all ranks. */
typedef struct step_sum {
    double time;           /* the step: the slowest rank's, seconds */
    double compute;        /* the most any rank computed, seconds */
    double pipe_end;       /* the last rank's last backward, seconds */
    unsigned long long most[3], least[3]; /* bytes sent per rank: tp, pp, dp */
    double wait[3];        /* the most a rank waited on each kind, seconds */
    int peak;              /* the most microbatches a rank held activations for */
    int last;              /* the rank that ended last, */
    double parts[4];       /* and its compute, tp, pp and dp waits (their sum is its step) */
} step_sum;

/* The step sd on o->be's row with room for its figures (shared with the
 * ranks a measured run forks): its row, the row's description and the
 * figures summed.  0, or the exit status after saying why. */
int step_run(step_desc *sd, run_opts *o, run_row *row, backend_desc *net, step_sum *s);
/* The step file's model and layout, two lines. */
void step_print_layout(const step_desc *sd);
/* Begins the JSON object of a step's output in w (command, file, backend,
 * ranks); the caller adds its members and finishes it. */
void step_json_open(json_writer *w, const step_desc *sd, const char *backend);
/* One CSV row of step t's figures s (the header first when asked). */
void step_print_csv(const cl_step *t, const step_sum *s, bool header);
/* `step --sweep`: every layout of sd's ranks modeled on o (sim), ranked
 * by their step time; text or JSON as o->fmt, and with plot (PLOT_* bits)
 * their figure.  A CLI_EXIT_* code. */
int step_sweep(const step_desc *sd, run_opts *o, unsigned plot);
/* A step's bar in the figure: its layout, and the parts of the rank that
 * ended last. */
plot_step_row step_plot_row(const cl_step *t, const step_sum *s);
/* The figure of n steps' rows titled what, as plots/out/step-NAME.csv
 * where NAME is the step file's.  A CLI_EXIT_* code. */
int step_plot(const step_desc *sd, const plot_step_row *rows, size_t n, const char *what,
              const run_opts *o, unsigned plot);

#endif
