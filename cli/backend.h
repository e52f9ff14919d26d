/*
 * backend.h - the backends commlab has, in one table: each one's name,
 * whether it is measured or modeled, the options it takes, how it runs one
 * size of a pattern and how it is benchmarked.
 *
 * Every command that takes --backend (run, compare, calibrate, exercise,
 * bench) finds the backend here and validates the options it was given
 * against the table in one place (backend_check_options); no other file of
 * cli/ branches on a backend's name.  A backend that is planned but not
 * built is in the table so that asking for it says so, and it is never
 * listed.
 */
#ifndef CL_BACKEND_H
#define CL_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "commlab.h"
#include "core/record.h"
#include "core/run.h"

struct run_opts;
struct run_env;
struct backend_given;

/* Options that only some backends take, in groups. */
typedef enum backend_opt {
    BOPT_MODEL,    /* --tier --topology --config --model --rendezvous-handshake
                      --no-payload --stack-size */
    BOPT_MEASURED, /* --bind --deadlock-timeout --sync */
    BOPT_WORLD,    /* --master --rank --world --join-timeout: processes started elsewhere */
    BOPT_SHM_COPY, /* --shm-copy */
    BOPT_LISTEN,   /* --listen */
    BOPT_PROVIDER, /* --provider */
    BOPT_NETLAB,   /* --netlab */
    BOPT_COUNT
} backend_opt;

#define BOPT(x) (1u << (x))

typedef struct backend_info {
    const char *name;     /* "shm" */
    const char *summary;  /* one line: what a rank is and how it talks */
    bool built;           /* false: planned; named in errors, never listed */
    bool measured;        /* wall-clock times of real transfers (else modeled) */
    unsigned takes;       /* BOPT() bits of the option groups it accepts */
    /* Runs one size of o's pattern; fills row (and env's description of
     * where it ran).  first: the first size, which may print warnings.
     * Returns the run's status (0 or CL_E*, already reported). */
    int (*run_size)(const struct run_opts *o, struct run_env *env, uint64_t bytes,
                    rec_log *log, bool first, run_row *row);
    /* Optional: checks the values of its own options (rdma: the provider's
     * name; g->value of a group not given is NULL); prints why and returns
     * CLI_EXIT_USAGE, or 0. */
    int (*check)(const struct backend_given *g);
    /* `commlab bench NAME`: prints its figures; a CLI_EXIT_* code. */
    int (*bench)(bool quick);
    /* Optional, for a backend whose ranks are the processes of a launcher
     * (mpi): called by `run` once the options are checked, with run's
     * arguments.  Returns -1 to go on in this process (it is a rank, made
     * ready), or the exit status to end with: that of the command run
     * again under the launcher, or a usage error it printed. */
    int (*enter)(struct run_opts *o, int argc, char **argv);
    /* Optional, for a backend that has a library of collectives (mpi):
     * the rank program of the library's own call for a collective of
     * core/pattern.h ("allreduce"), run by `run --library`; NULL for a
     * collective it has no call for. */
    cl_pattern_fn *(*library)(const char *collective);
    /* Optional, with enter: for a command that runs patterns itself
     * (calibrate, compare), called once its options are checked: the whole
     * command runs in every process of a launcher's job of `ranks`, each
     * run by all in step.  May set *eager_limit to the transport's.
     * Returns -1 to go on in this process, or the exit status to end with
     * (the command run again under the launcher, or an error printed). */
    int (*join)(int ranks, uint64_t *eager_limit, int argc, char **argv);
    /* Optional, with join: whether this process writes the command's files
     * (one of a job's processes does). */
    bool (*speaks)(void);
    uint64_t eager_max; /* bytes: the largest --eager-limit it takes; 0: any */
} backend_info;

/* What was given of each option group: the first option's long name
 * ("tier") and its value (NULL for a flag); NULL when none. */
typedef struct backend_given {
    const char *opt[BOPT_COUNT];
    const char *value[BOPT_COUNT];
} backend_given;

/* Notes option opt (a long name) with value as given for group grp,
 * unless an option of grp already is.  Cannot fail. */
static inline void backend_give(backend_given *g, backend_opt grp, const char *opt,
                                const char *value)
{
    if (!g->opt[grp]) {
        g->opt[grp] = opt;
        g->value[grp] = value;
    }
}

/* The backend a command runs on when none is named: the model.  Cannot
 * fail. */
const backend_info *backend_default(void);
/* The i-th built backend, NULL past the end.  Cannot fail. */
const backend_info *backend_at(size_t i);
/* The backend called name for command cmd ("run"); measured_only refuses
 * the model.  Prints why (unknown, not built, not measured: with the names
 * that would do) and returns CLI_EXIT_USAGE; or 0 with *out set. */
int backend_lookup(const char *name, const char *cmd, bool measured_only,
                   const backend_info **out);
/* The options of g that b does not take: prints the first such and
 * returns CLI_EXIT_USAGE; or 0 after b's own check of the values. */
int backend_check_options(const backend_info *b, const backend_given *g);
/* --eager-limit bytes on b: prints why and returns CLI_EXIT_USAGE when b
 * cannot keep that much per rank; else 0. */
int backend_check_eager(const backend_info *b, uint64_t bytes);
/* One line per backend of the table, built or not, for `commlab
 * --version`: "  mpi    built, Open MPI v4.1.4" or "  mpi    not built
 * (...)".  Cannot fail. */
void backend_print_all(FILE *f);
/* Whether this process writes the command's files: false only in a
 * process of a job that b->join joined other than the one that speaks for
 * it.  Cannot fail. */
bool backend_speaks(const backend_info *b);
/* --library on b: prints why and returns CLI_EXIT_USAGE when b has no
 * library of collectives or none for collective; else 0 with its rank
 * program in *fn. */
int backend_check_library(const backend_info *b, const char *collective, cl_pattern_fn **fn);
/* "sim, shm, tcp or rdma": the built backends' names (measured ones only
 * when measured_only), cut to len.  Returns buf. */
const char *backend_names(char *buf, size_t len, bool measured_only, const char *last_sep);

#endif
