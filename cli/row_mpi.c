/* row_mpi.c - `run --backend mpi` as an MPI job (see row_mpi.h). */
#ifdef CL_HAVE_MPI
#include "cli/row_mpi.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/mpi_guard.h"
#include "cli/row_real.h"
#include "real/auth.h"
#include "real/boot.h"
#include "real/mpi/mpib.h"

int mpi_launch_argv(const char **out, int cap, const char *exe, int n, bool as_root,
                    bool oversubscribe, int argc, char **argv)
{
    static char np[16];
    int k = 0;
    if (cap < argc + 9)
        return -1;
    snprintf(np, sizeof np, "%d", n);
    out[k++] = "mpirun";
    if (as_root)
        out[k++] = "--allow-run-as-root";
    if (oversubscribe)
        out[k++] = "--oversubscribe";
    out[k++] = "-q"; /* its banners: commlab's rank 0 reports the run */
    out[k++] = "-np";
    out[k++] = np;
    out[k++] = exe;
    for (int i = 0; i < argc; i++)
        out[k++] = argv[i];
    out[k] = NULL;
    return k;
}

int mpi_enter(backend_session *s, run_opts *o, int argc, char **argv)
{
    const real_world *world = &((real_session *)s)->world;
    if (o->eager_given)
        return cli_error("--eager-limit: the MPI library's eager limit is its own (Open MPI: "
                         "OMPI_MCA_btl_vader_eager_limit within a host, "
                         "OMPI_MCA_btl_tcp_eager_limit across hosts)");
    if (world->size == 0)
        return mpi_relaunch(o->ranks, argc, argv);
    if (mpi_guard(world->rank) < 0)
        return cli_error("--backend mpi: cannot fork the rank's process: %s", strerror(errno));
    cl_diag d = {{0}};
    if (mpib_init(world->rank, world->size, &d))
        return cli_diag(&d, CLI_EXIT_FAILED);
    atexit(mpib_finalize);
    uint64_t limit;
    if (mpib_eager_limit(world->rdv == WORLD_RDV_UNIX, &limit) == 0)
        o->eager_limit = limit;
    return -1;
}

/* ---- calibrate and compare: the whole command in every process ---- */

/* Bytes of Open MPI's eager limit that its own headers take: the largest
 * payload it sends eagerly is this much below the limit, and a model's
 * break (calibrate's, and the machine file's eager limit) belongs there.
 * Measured with Open MPI 4.1 on one host (btl_vader_eager_limit 4096):
 * a ping-pong of 4040 B took 0.42 us one way, of 4044 B 2.2 us, so 56
 * bytes of headers; rounded up. */
#define EAGER_HEADERS 64

/* The MPI job this process is part of, for a command other than run:
 * process-wide as MPI itself is (mpib.h), made once by mpi_join. */
static struct {
    boot *boot;        /* the job's rendezvous, for every run of the command */
    real_world world;  /* which process of how many */
} session;

static const char *env_get(const char *name)
{
    return getenv(name);
}

static void session_close(void)
{
    boot_close(session.boot);
    session.boot = NULL;
    world_release(&session.world);
}

int mpi_join(int ranks, uint64_t *eager_limit, int argc, char **argv)
{
    cl_diag d = {{0}};
    world_args wa = {.rank = -1, .world = -1};
    if (world_detect(&session.world, &wa, env_get, &d))
        return cli_diag(&d, CLI_EXIT_USAGE);
    if (session.world.size == 0)
        return mpi_relaunch(ranks, argc, argv);
    if (session.world.size != ranks) {
        int n = session.world.size;
        world_release(&session.world);
        return cli_error("--backend mpi: %s runs on %d ranks, every process of its MPI job "
                         "in every run, and this job has %d: start it with -np %d", argv[0],
                         ranks, n, ranks);
    }
    if (mpi_guard(session.world.rank) < 0)
        return cli_error("--backend mpi: cannot fork the rank's process: %s", strerror(errno));
    if (mpib_init(session.world.rank, session.world.size, &d))
        return cli_diag(&d, CLI_EXIT_FAILED);
    atexit(mpib_finalize);
    /* Every process was started with the same command line. */
    unsigned char digest[AUTH_HASH_BYTES];
    auth_sha256 h;
    auth_sha256_init(&h);
    for (int i = 0; i < argc; i++)
        auth_sha256_add(&h, argv[i], strlen(argv[i]) + 1);
    auth_sha256_finish(&h, digest);
    int err = boot_open(&session.boot, &session.world, digest, &d);
    auth_wipe(session.world.secret, sizeof session.world.secret); /* the boot holds the job's key */
    if (err)
        return cli_diag(&d, CLI_EXIT_FAILED);
    atexit(session_close);
    uint64_t limit;
    if (mpib_eager_limit(session.world.rdv == WORLD_RDV_UNIX, &limit) == 0 &&
        limit > EAGER_HEADERS)
        *eager_limit = limit - EAGER_HEADERS;
    /* Rank 0's process speaks for the command; the others run in step, and
     * what they would print is rank 0's too. */
    if (session.world.rank != 0 &&
        (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr)))
        return CLI_EXIT_FAILED;
    return -1;
}

bool mpi_speaks(void)
{
    return session.world.size == 0 || session.world.rank == 0;
}

/* What rank 0's process learnt of a run, for every process. */
typedef struct shared_outcome {
    int status;
    run_row row;
    char binding[sizeof ((run_env *)0)->binding];
    int cores;
} shared_outcome;

int run_size_mpi(const run_opts *o, run_env *env, uint64_t bytes, rec_log *log, bool first,
                 run_row *row)
{
    const real_session *rs = (const real_session *)env->session;
    if (rs && rs->boot) /* run: its own world, rank 0 alone reports */
        return row_real_run(o, rs->boot, o->real.lab, env, bytes, log, first, row);
    if (!session.boot) {
        fprintf(stderr, "commlab: --backend mpi: this command did not join an MPI job\n");
        return CL_EINVAL;
    }
    if (o->ranks != session.world.size) {
        fprintf(stderr, "commlab: --backend mpi: a run of %d ranks in an MPI job of %d "
                "processes: every process runs every run (%s needs -n %d)\n", o->ranks,
                session.world.size, o->pattern->name, o->ranks);
        return CL_EINVAL;
    }
    shared_outcome out = {0};
    out.status = row_real_run(o, session.boot, o->real.lab, env, bytes, log, first, &out.row);
    snprintf(out.binding, sizeof out.binding, "%s", env->binding);
    out.cores = env->cores;
    /* Every process goes on with rank 0's figures, so each takes the same
     * next step (the iterations of the next run, a segment measured again). */
    if (mpib_bcast(&out, sizeof out)) {
        fprintf(stderr, "commlab: --backend mpi: MPI_Bcast of a run's outcome failed\n");
        return CL_EIO;
    }
    *row = out.row;
    snprintf(env->binding, sizeof env->binding, "%s", out.binding);
    env->cores = out.cores;
    return out.status;
}
#endif
