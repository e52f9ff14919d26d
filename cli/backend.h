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

/* A backend's session: the state only that backend needs (the model's
 * network; the world of processes started elsewhere, its rendezvous and
 * the netlab), opened and closed by the row, opaque to every caller. */
typedef struct backend_session backend_session;

/* One JSON member of a backend_desc: a text, or a number. */
typedef struct backend_desc_key {
    const char *key;
    bool number;
    char text[160];
    double num;
} backend_desc_key;

/* What a row says of where a run ran, for run's header and JSON: copied,
 * so that it outlives the session. */
#define BACKEND_DESC_KEYS 8
typedef struct backend_desc {
    char on[64];     /* after the backend's name: " (netlab 1Gbit/s per port)" */
    char where[256]; /* after the ranks: "bound to cores 0,1 (2 cores)" */
    char how[256];   /* after the iterations: " after 2 warm-up, ..." */
    bool skew;       /* the ranks start apart: the start skew's lines show */
    bool reduce;     /* reducing has a price (gamma, s/byte; 0: free) */
    double gamma;
    char note[192];  /* the timeline's words on where it ran; "": none */
    size_t nkeys;    /* its own JSON members, in order */
    backend_desc_key key[BACKEND_DESC_KEYS];
} backend_desc;

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
    int iters, warmup;    /* run's default timed and warm-up iterations */
    /* Opens a session for o once its options are checked against the
     * table: learns what comes before anything starts (the world of
     * processes started elsewhere, which sets o->ranks) and checks the
     * row's own options against each other.  0 with *s set, or the exit
     * status after printing why (*s then NULL or to be closed). */
    int (*open)(struct run_opts *o, backend_session **s);
    /* Starts it once run is ready to run: builds the model's network, joins
     * the world's rendezvous, opens the netlab; may set o's eager limit and
     * group, and env->mute in a process that does not report.  0, or the
     * exit status after printing why. */
    int (*start)(backend_session *s, struct run_opts *o, struct run_env *env);
    /* Fills d: where o's runs ran (after they did). */
    void (*describe)(const backend_session *s, const struct run_opts *o,
                     const struct run_env *env, backend_desc *d);
    /* Ends it (NULL: nothing); 0, or 128+N after saying so when signal N
     * came while its netlab was held. */
    int (*close)(backend_session *s);
    /* Runs one size of o's pattern (in env->session's session when there is
     * one); fills row (and env's description of where it ran).  first: the
     * first size, which may print warnings.  Returns the run's status (0
     * or CL_E*, already reported). */
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
    int (*enter)(backend_session *s, struct run_opts *o, int argc, char **argv);
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
/* The libfabric provider rdma picks on this host when none is asked for
 * (real/rdma.h) into name: 0, or the error with d saying why. */
int backend_provider_auto(char *name, size_t len, cl_diag *d);
/* b's session for o: b->open (run_check calls it); see backend_info. */
int backend_open(const backend_info *b, struct run_opts *o, backend_session **s);
/* Adds a text (or a number) JSON member to d.  Cannot fail (past
 * BACKEND_DESC_KEYS, it is left out). */
void backend_desc_text(backend_desc *d, const char *key, const char *text);
void backend_desc_number(backend_desc *d, const char *key, double num);
/* d's own JSON members, in order, into the open object of w.  Cannot
 * fail. */
struct json_writer;
void backend_desc_json(struct json_writer *w, const backend_desc *d);
/* Closes s (NULL: nothing): b->close's status. */
int backend_close(const backend_info *b, backend_session *s);
/* "sim, shm, tcp or rdma": the built backends' names (measured ones only
 * when measured_only), cut to len.  Returns buf. */
const char *backend_names(char *buf, size_t len, bool measured_only, const char *last_sep);

#endif
