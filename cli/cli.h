/*
 * cli.h - what the command files share: exit codes, output formats,
 * option-parsing helpers and where configs live.
 *
 * The CLI is the one place that prints user-facing errors and calls exit
 * codes; every command is `int cmd_NAME(int argc, char **argv)` returning
 * one of the CLI_EXIT_* codes.
 */
#ifndef CL_CLI_H
#define CL_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "core/diag.h"

#define COMMLAB_VERSION "0.1.0"

/* Exit status promised to callers (DESIGN.md). */
enum {
    CLI_EXIT_OK = 0,       /* success */
    CLI_EXIT_CHECK = 1,    /* a pattern's own check of its data failed */
    CLI_EXIT_USAGE = 2,    /* bad usage or a bad config */
    CLI_EXIT_DEADLOCK = 3, /* deadlock; the wait-for report was printed */
    CLI_EXIT_FAILED = 4,   /* a rank crashed or a transport failed */
};

typedef enum cli_format { CLI_TEXT, CLI_CSV, CLI_JSON } cli_format;

typedef struct cli_command {
    const char *name;                  /* "price" */
    int (*run)(int argc, char **argv); /* argv[0] is the command name */
    const char *summary;               /* one line for `commlab --help` */
    const char *usage;                 /* full text for `commlab help NAME` */
} cli_command;

const cli_command *cli_find(const char *name);

/* Prints "commlab: msg" to stderr; returns CLI_EXIT_USAGE for convenience. */
int cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints the diag of a failed call; returns code. */
int cli_diag(const cl_diag *d, int code);

/* The default case of a getopt_long loop whose optstring starts with ':':
 * c is '?' (unknown option) or ':' (missing value).  Prints the option,
 * the nearest of the command's long options opts (cli/near.h) when one is
 * close, and the hint `commlab help CMD`; returns CLI_EXIT_USAGE. */
int cli_bad_option(const char *cmd, const struct option *opts, char **argv, int c);
/* Positional arguments left after options are an error for most commands. */
int cli_no_extra(const char *cmd, int argc, char **argv);
/* An integer option's value in min..max into *out; else prints why and
 * returns CLI_EXIT_USAGE (*out unchanged). */
int cli_parse_int(const char *opt, const char *text, int min, int max, int *out);
/* The same for a finite number in [min, max]. */
int cli_parse_double(const char *opt, const char *text, double min, double max, double *out);
/* --bind core|none into *bind; else prints why and returns CLI_EXIT_USAGE. */
int cli_parse_bind(const char *text, bool *bind);
/* snprintf for messages and paths: a text that does not fit is cut. */
void cli_textf(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Seconds on CLOCK_MONOTONIC: how long a command's own steps take. */
double cli_now(void);
/* Appends to buf of len bytes holding *used; *used never passes len - 1. */
void cli_appendf(char *buf, size_t len, int *used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The memory the kernel says can be had without swapping (MemAvailable of
 * /proc/meminfo), in bytes.  0, or CL_ENOENT where it does not say
 * (*bytes unchanged). */
int cli_mem_available(uint64_t *bytes);

/* Finds a file shipped with commlab (rel such as "configs/tiers.yaml"):
 * $COMMLAB_HOME/rel, then next to the binary's source tree, then under
 * PREFIX/share/commlab.  Writes the path and returns 0, or CL_ENOENT with
 * d naming the places looked at. */
int cli_data_path(char *buf, size_t len, const char *rel, cl_diag *d);
/* This user's own folder for commlab's files of a kind (XDG base
 * directories): $xdg_var/commlab when it is absolute, else
 * $HOME/home_rel/commlab ("XDG_DATA_HOME", ".local/share").  False when
 * there is neither. */
bool cli_user_dir(char *dir, size_t len, const char *xdg_var, const char *home_rel);
/* Makes dir and its parents, each 0700 when new.  0, or -1 with errno. */
int cli_make_dirs(char *dir);

/* A file the user named (--topology configs/topologies/x.yaml, a `what`):
 * *out = given when it is absolute or readable from here, else the copy
 * in the data folders (cli_data_path: an installed copy's share folder)
 * in buf.  0, or CLI_EXIT_USAGE after printing where it looked. */
int cli_given_path(char *buf, size_t len, const char *given, const char *what,
                   const char **out);

/* Takes the variable name out of the environment: a copy of its value
 * (NULL when unset, or out of memory), the original bytes wiped, so that
 * neither a child nor /proc/PID/environ shows it.  Free the copy with
 * cli_env_free. */
char *cli_env_take(const char *name);
/* Wipes and frees what cli_env_take returned; NULL is fine. */
void cli_env_free(char *value);
/* Wipes n bytes of buf (a secret), in a way the compiler keeps. */
void cli_wipe(void *buf, size_t n);

/* Loads the tiers file (config, or configs/tiers.yaml when NULL) and keeps
 * the comma-separated tiers of list (all when NULL).  0, or the printed
 * error's exit code (CLI_EXIT_USAGE) with nothing left to release. */
struct tier_set;
int cli_load_tiers(struct tier_set *ts, const char *config, const char *list);

/* ---- plots (cmd_plot.c) ---- */

/* Parses a --term list (NULL: png,svg) into PLOT_* bits; prints the error
 * and returns CLI_EXIT_USAGE on a bad word. */
int cli_plot_terms(const char *text, unsigned *terms);
/* price --plot and sweep --plot: write plots/out/price.csv (sweep.csv) and
 * draw it; the paths written go to report, one a line.  0, or an exit code
 * with the error printed. */
int cli_plot_tiers(const struct tier_set *ts, uint64_t bytes, unsigned terms, FILE *report);
int cli_plot_sweep(const struct tier_set *ts, const uint64_t *sizes, size_t n, unsigned terms,
                   FILE *report);
/* collectives --plot: write plots/out/collectives-NAME.csv (titled what)
 * and draw it; as cli_plot_sweep. */
struct plot_coll_row;
int cli_plot_collectives(const char *name, const char *what, const struct plot_coll_row *rows,
                         size_t n, unsigned terms, FILE *report);
/* validate --plot: write plots/out/validate-BACKEND.csv (titled what) and
 * draw it; as cli_plot_sweep. */
struct plot_validate_row;
int cli_plot_validate(const char *backend, const char *what,
                      const struct plot_validate_row *rows, size_t n, unsigned terms,
                      FILE *report);
/* step --plot: write plots/out/step-NAME.csv (titled what) and draw it;
 * as cli_plot_sweep. */
struct plot_step_row;
int cli_plot_step(const char *name, const char *what, const struct plot_step_row *rows,
                  size_t n, unsigned terms, FILE *report);
/* run --timeline FILE: the last iteration's records as a timeline CSV,
 * titled with the pattern, backend (where: the modeled network, or NULL),
 * ranks, size and host; status is the run's outcome (0, CL_EDEADLOCK...).
 * 0, or CLI_EXIT_USAGE with the error printed and no file left. */
struct rec_log;
int cli_timeline_write(const char *path, const struct rec_log *log, const char *pattern,
                       const char *backend, const char *where, int ranks, uint64_t bytes,
                       int status);

/* The commands. */
int cmd_price(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_patterns(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_exercise(int argc, char **argv);
int cmd_fabric(int argc, char **argv);
int cmd_collectives(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_step(int argc, char **argv);
/* `fabric` (cli/row_rdma_fabric.c) and `fabric --mpi`
 * (cli/row_mpi_fabric.c): a CLI_EXIT_* code. */
int fabric_rdma(bool as_json);
int fabric_mpi(bool as_json);

extern const char cmd_price_usage[];
extern const char cmd_sweep_usage[];
extern const char cmd_run_usage[];
extern const char cmd_patterns_usage[];
extern const char cmd_bench_usage[];
extern const char cmd_plot_usage[];
extern const char cmd_calibrate_usage[];
extern const char cmd_compare_usage[];
extern const char cmd_exercise_usage[];
extern const char cmd_collectives_usage[];
extern const char cmd_fabric_usage[];
extern const char cmd_validate_usage[];
extern const char cmd_step_usage[];

#endif
