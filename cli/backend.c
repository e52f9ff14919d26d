/* backend.c - the table of backends and the one place options are
 * checked against it. */
#include "cli/backend.h"

#include <stdlib.h>
#include <string.h>

#include "cli/bench.h"
#include "cli/cli.h"
#include "core/json.h"
#include "cli/row_mpi.h"
#include "cli/near.h"
#include "cli/rows.h"
#include "cli/run_size.h"
#include "core/units.h"
#include "real/job.h"
#include "real/rdma.h"
#ifdef CL_HAVE_MPI
#include "real/mpi/mpib.h"
#endif

static int rdma_check(const backend_given *g)
{
    cl_diag d = {{0}};
    int err = rdma_provider_check(g->value[BOPT_PROVIDER], &d);
    if (err) /* a provider not here is a usage error; no libfabric, or its failure, is not */
        return cli_diag(&d, err == CL_EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_FAILED);
    return 0;
}

/* The model's hooks, and the measured rows' (mpi's run and enter are its
 * own). */
#define SIM_ROW .open = row_sim_open, .start = row_sim_start, .describe = row_sim_describe, \
                .close = row_sim_close, .run_size = row_sim_size, .iters = 1, .warmup = 0
#define REAL_ROW .open = row_real_open, .start = row_real_start, .describe = row_real_describe, \
                 .close = row_real_close, .run_size = row_real_size, .iters = 10, .warmup = 2

static const backend_info table[] = {
    {.name = "sim", .summary = "modeled: each rank a coroutine in virtual time on the "
     "alpha-beta simulator", .built = true, .measured = false, .takes = BOPT(BOPT_MODEL),
     .bench = bench_sim, SIM_ROW},
    {.name = "shm", .summary = "measured: one process per rank, over shared memory",
     .built = true, .measured = true, .takes = BOPT(BOPT_MEASURED) | BOPT(BOPT_SHM_COPY),
     .bench = bench_shm, REAL_ROW},
    {.name = "tcp", .summary = "measured: one process per rank, over TCP sockets", .built = true,
     .measured = true,
     .takes = BOPT(BOPT_MEASURED) | BOPT(BOPT_WORLD) | BOPT(BOPT_LISTEN) | BOPT(BOPT_NETLAB),
     .bench = bench_tcp, REAL_ROW},
    {.name = "rdma", .summary = "measured: one process per rank, through libfabric",
     .built = true, .measured = true,
     .takes = BOPT(BOPT_MEASURED) | BOPT(BOPT_WORLD) | BOPT(BOPT_PROVIDER), .check = rdma_check,
     .bench = bench_rdma, .eager_max = RDMA_EAGER_MAX, REAL_ROW},
#ifdef CL_HAVE_MPI
    {.name = "mpi", .summary = "measured: one MPI process per rank, through the MPI library",
     .built = true, .measured = true, .takes = BOPT(BOPT_MEASURED) | BOPT(BOPT_WORLD),
     .bench = bench_mpi, .open = row_real_open, .start = row_real_start,
     .describe = row_real_describe, .close = row_real_close, .run_size = run_size_mpi,
     .iters = 10, .warmup = 2, .enter = mpi_enter,
     .library = mpib_coll_find, .join = mpi_join, .speaks = mpi_speaks},
#else
    {.name = "mpi", .summary = "measured: one MPI process per rank (built where mpicc is found)",
     .built = false, .measured = true},
#endif
};

#define NTABLE (sizeof table / sizeof table[0])

const backend_info *backend_at(size_t i)
{
    for (size_t k = 0; k < NTABLE; k++)
        if (table[k].built && i-- == 0)
            return &table[k];
    return NULL;
}

void backend_print_all(FILE *f)
{
    fprintf(f, "backends:\n");
    for (size_t k = 0; k < NTABLE; k++) {
        const backend_info *b = &table[k];
        char lib[DIAG_MAX + 8] = "";
#ifdef CL_HAVE_MPI
        char name[128];
        cl_diag d = {{0}};
        if (b->enter)
            snprintf(lib, sizeof lib, " (%s)", mpib_library(name, sizeof name, &d) ? d.msg : name);
#endif
        fprintf(f, "  %-5s %s%s: %s\n", b->name, b->built ? "built" : "not built", lib,
                b->summary);
    }
}

const backend_info *backend_default(void)
{
    return &table[0];
}

/* Whether b is one of those asked for: measured ones only when
 * measured_only, those taking the groups of `takes` (BOPT bits). */
static bool wanted(const backend_info *b, bool measured_only, unsigned takes)
{
    return (!measured_only || b->measured) && (b->takes & takes) == takes;
}

/* The names of the built backends wanted, "a, b<last_sep>c", appended to
 * buf at *used. */
static void join_names(char *buf, size_t len, int *used, bool measured_only, unsigned takes,
                       const char *last_sep)
{
    const backend_info *b;
    size_t n = 0, k = 0;
    for (size_t i = 0; (b = backend_at(i)) != NULL; i++)
        n += wanted(b, measured_only, takes);
    for (size_t i = 0; (b = backend_at(i)) != NULL; i++) {
        if (!wanted(b, measured_only, takes))
            continue;
        cli_appendf(buf, len, used, "%s%s", k == 0 ? "" : k + 1 == n ? last_sep : ", ",
                    b->name);
        k++;
    }
}

const char *backend_names(char *buf, size_t len, bool measured_only, const char *last_sep)
{
    int used = 0;
    buf[0] = 0;
    join_names(buf, len, &used, measured_only, 0, last_sep);
    return buf;
}

int backend_lookup(const char *name, const char *cmd, bool measured_only,
                   const backend_info **out)
{
    char names[128];
    backend_names(names, sizeof names, measured_only, " or ");
    const backend_info *b = NULL;
    for (size_t k = 0; k < NTABLE && !b; k++)
        if (strcmp(table[k].name, name) == 0)
            b = &table[k];
    if (!b) {
        cli_near near;
        cli_near_init(&near, name);
        for (size_t k = 0; k < NTABLE; k++)
            if (table[k].built && (table[k].measured || !measured_only))
                cli_near_add(&near, table[k].name);
        char hint[64] = "";
        if (near.best)
            cli_textf(hint, sizeof hint, "; did you mean '%s'?", near.best);
        return cli_error("unknown backend '%s'%s (%s: %s)", name, hint, cmd,
                         backend_names(names, sizeof names, measured_only, ", "));
    }
    if (!b->built)
        return cli_error("the '%s' backend is not built here (%s); %s takes %s", name,
                         b->summary, cmd, names);
    if (measured_only && !b->measured)
        return cli_error("--backend %s is the model itself: %s takes a measured backend (%s)",
                         name, cmd, names);
    /* A backend whose ranks are a launcher's processes starts its job in
     * run (backend_info.enter), calibrate and compare (join) and benchmarks
     * itself; the other commands run their patterns in this process. */
    if (b->enter && strcmp(cmd, "run") != 0 && strcmp(cmd, "bench") != 0 &&
        strcmp(cmd, "calibrate") != 0 && strcmp(cmd, "compare") != 0)
        return cli_error("%s --backend %s is not built: run, compare and calibrate start an "
                         "MPI job (`commlab run PATTERN --backend %s`)", cmd, name, name);
    *out = b;
    return 0;
}

/* "--backend tcp and rdma": the built backends that take group g. */
static const char *takers(char *buf, size_t len, backend_opt g)
{
    int used = 0;
    cli_appendf(buf, len, &used, "--backend ");
    join_names(buf, len, &used, false, BOPT(g), " and ");
    return buf;
}

int backend_check_options(const backend_info *b, const backend_given *g)
{
    for (int grp = 0; grp < BOPT_COUNT; grp++) {
        const char *opt = g->opt[grp];
        if (!opt || (b->takes & BOPT(grp)))
            continue;
        char who[96];
        if (grp == BOPT_MODEL)
            snprintf(who, sizeof who, "the model");
        else if (!b->measured)
            snprintf(who, sizeof who, "measured runs");
        else
            takers(who, sizeof who, (backend_opt)grp);
        return cli_error("--%s is an option of %s: it does not apply to --backend %s", opt, who,
                         b->name);
    }
    if (b->measured) {
        /* The clock debug variables (real/job.h): a typo is a usage error. */
        double shift, drift;
        bool monotonic;
        cl_diag d = {{0}};
        if (job_clock_debug(&shift, &drift, &monotonic, &d))
            return cli_diag(&d, CLI_EXIT_USAGE);
    }
    return b->check ? b->check(g) : 0;
}

int backend_check_eager(const backend_info *b, uint64_t bytes)
{
    char max[UNITS_BUF];
    if (b->eager_max && bytes > b->eager_max)
        return cli_error("--eager-limit on --backend %s is at most %s (each rank keeps "
                         "buffers that size), got %llu bytes",
                         b->name, units_size_str(max, b->eager_max), (unsigned long long)bytes);
    return 0;
}

bool backend_speaks(const backend_info *b)
{
    return !b->speaks || b->speaks();
}

int backend_check_library(const backend_info *b, const char *collective, cl_pattern_fn **fn)
{
    if (!b->library) {
        char who[64] = "";
        int used = 0;
        for (size_t k = 0; k < NTABLE; k++)
            if (table[k].library)
                cli_appendf(who, sizeof who, &used, "%s--backend %s", used ? " or " : "",
                            table[k].name);
        return cli_error("--library runs a library's own collective, on a backend that has "
                         "one (%s): --backend %s has none",
                         used ? who : "none is built here; mpi, where mpicc is found", b->name);
    }
    *fn = b->library(collective);
    if (!*fn)
        return cli_error("--library: the %s backend's library has no %s", b->name, collective);
    return 0;
}

int backend_open(const backend_info *b, run_opts *o, backend_session **s)
{
    return b->open(o, s);
}

int row_session_new(const run_opts *o, size_t size, backend_session **s)
{
    *s = calloc(1, size);
    if (!*s)
        return cli_error("out of memory");
    (*s)->be = o->be;
    return 0;
}

int backend_close(const backend_info *b, backend_session *s)
{
    return s ? b->close(s) : 0;
}

void backend_desc_text(backend_desc *d, const char *key, const char *text)
{
    if (d->nkeys < BACKEND_DESC_KEYS) {
        backend_desc_key *k = &d->key[d->nkeys++];
        *k = (backend_desc_key){.key = key};
        cli_textf(k->text, sizeof k->text, "%s", text);
    }
}

void backend_desc_number(backend_desc *d, const char *key, double num)
{
    if (d->nkeys < BACKEND_DESC_KEYS)
        d->key[d->nkeys++] = (backend_desc_key){.key = key, .number = true, .num = num};
}

int backend_provider_auto(char *name, size_t len, cl_diag *d)
{
    return rdma_provider_auto(name, len, false, d);
}

void backend_desc_json(json_writer *w, const backend_desc *d)
{
    for (size_t k = 0; k < d->nkeys; k++) {
        const backend_desc_key *dk = &d->key[k];
        if (dk->number)
            json_kv_number(w, dk->key, dk->num);
        else
            json_kv_string(w, dk->key, dk->text);
    }
}
