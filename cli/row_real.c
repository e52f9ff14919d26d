/* row_real.c - the measured rows of the backend table (cli/rows.h): shm,
 * tcp and rdma, whose ranks are processes; their session holds the world
 * of processes started elsewhere, its rendezvous and the netlab. */
#include "cli/row_real.h"

#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/units.h"
#include "real/auth.h"
#include "real/launch.h"
#include "real/netlab.h"

_Static_assert(RUN_WORLD_MAX_RANKS == WORLD_MAX_RANKS, "run's --world bound is the world's");

/* A run out of memory: what a measured run can do about it. */
static const char oom_hint[] = "commlab: a measured run moves real bytes: use fewer ranks or a "
                               "smaller size, or model it (--backend sim --no-payload)\n";

int row_real_run(const run_opts *o, boot *boot, const struct netlab *lab, run_env *env,
                 uint64_t bytes, rec_log *log, bool first, run_row *row)
{
    int status = run_check_memory(o, bytes, oom_hint);
    if (status)
        return status;
    static const shm_copy copy[] = {
        [RUN_COPY_AUTO] = SHM_COPY_AUTO, [RUN_COPY_CMA] = SHM_COPY_CMA,
        [RUN_COPY_STAGING] = SHM_COPY_STAGING};
    real_opts ro = {
        .job = run_job_of(o, bytes, log), .backend = o->backend, .bind = o->real.bind,
        .shm.copy = copy[o->real.copy], .tcp = {.listen = o->real.listen, .netlab = lab},
        .rdma.provider = o->real.provider,
        .deadlock_timeout = o->real.deadlock_timeout, .warn = first ? stderr : NULL, .boot = boot,
    };
    ro.job.payload = true;
    run_result res;
    int err = real_run(&ro, &res);
    snprintf(env->binding, sizeof env->binding, "%s", res.binding);
    env->cores = res.cores;
    env->clock = res.clock;
    env->signal = res.signal;
    if (res.told) {
        /* Rank 0's process reports this failure: this one only exits with it. */
        int told = res.status;
        run_result_release(&res);
        return told;
    }
    status = run_size_outcome(o, bytes, err, &res, row, oom_hint);
    run_result_release(&res);
    return status;
}

int row_real_size(const run_opts *o, run_env *env, uint64_t bytes, rec_log *log, bool first,
                  run_row *row)
{
    real_session *rs = (real_session *)env->session;
    return row_real_run(o, rs ? rs->boot : NULL, rs && rs->lab.nl ? rs->lab.nl : o->real.lab, env,
                        bytes, log, first, row);
}

static const char *env_get(const char *name)
{
    return getenv(name);
}

/* A run of a backend whose processes can be started elsewhere (tcp, rdma,
 * mpi) learns its rank and world (real/world.h); the world's size is the
 * rank count. */
static int find_world(real_session *rs, run_opts *o)
{
    cl_diag d = {{0}};
    if (!(o->be->takes & BOPT(BOPT_WORLD)))
        return 0;
    const run_world_args *g = &o->real.wargs;
    world_args wa = {.rank = g->rank, .world = g->world, .master = g->master,
                     .join_timeout = g->join_timeout, .secret = g->secret};
    if (world_detect(&rs->world, &wa, env_get, &d))
        return cli_diag(&d, CLI_EXIT_USAGE);
    if (rs->world.size == 0) {
        if (o->real.wargs.join_timeout > 0)
            return cli_error("--join-timeout applies to runs whose processes were started "
                             "elsewhere (--rank, --world, or a launcher's environment)");
        return 0;
    }
    if (o->ranks_given && o->ranks != rs->world.size)
        return cli_error("-n %d disagrees with the world of %d ranks from %s: leave -n out",
                         o->ranks, rs->world.size, rs->world.source);
    o->ranks = rs->world.size;
    return 0;
}

/* --netlab: a local tcp run only (real/netlab.h); after find_world. */
static int validate_netlab(const real_session *rs, const run_opts *o)
{
    if (!o->real.netlab)
        return 0;
    if (o->real.listen)
        return cli_error("--netlab gives every rank an address of its own: leave --listen "
                         "out");
    if (rs->world.size)
        return cli_error("--netlab forks every rank on this host: not in a world of "
                         "processes started elsewhere (%s)", rs->world.source);
    if (o->ranks > NETLAB_MAX_RANKS)
        return cli_error("--netlab runs at most %d ranks, got -n %d", NETLAB_MAX_RANKS,
                         o->ranks);
    return 0;
}

/* --listen: a numeric address of this host, tried by binding a socket to
 * it (port 0), so that a foreign address is a usage error before any rank
 * starts. */
static int check_listen(const char *text)
{
    struct sockaddr_storage ss = {0};
    struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
    socklen_t len;
    if (inet_pton(AF_INET, text, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        len = sizeof *v4;
    } else if (inet_pton(AF_INET6, text, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        len = sizeof *v6;
    } else {
        return cli_error("--listen must be a numeric IPv4 or IPv6 address, got '%s'", text);
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0; /* no socket to try with: the transport will say why */
    int bad = bind(fd, (struct sockaddr *)&ss, len) != 0 && errno == EADDRNOTAVAIL;
    close(fd);
    if (bad)
        return cli_error("--listen %s is not an address of this host (see `ip address`)",
                         text);
    return 0;
}

int row_real_open(run_opts *o, backend_session **s)
{
    int rc = row_session_new(o, sizeof(real_session), s);
    if (rc)
        return rc;
    real_session *rs = (real_session *)*s;
    if ((o->real.listen && (rc = check_listen(o->real.listen))) || (rc = find_world(rs, o)) ||
        (rc = validate_netlab(rs, o)))
        return rc;
    if (o->ranks > 256 && !rs->world.size)
        return cli_error("--backend %s runs at most 256 ranks (one process each), got -n %d",
                         o->backend, o->ranks);
    return 0;
}

/* What every process of a run must agree on, summed up: a process started
 * with other options is refused at the rendezvous. */
static void run_digest(const run_opts *o, unsigned char out[AUTH_HASH_BYTES])
{
    char buf[256];
    auth_sha256 h;
    auth_sha256_init(&h);
    int n = snprintf(buf, sizeof buf,
                     "%s|%s|%d|%s|%d|%d|%d|%llu|%d|%d|%s|%s|%d|%d|%.9g|%zu|%d|%zu|%s|%s|",
                     o->pattern->name, o->algo ? o->algo : "", o->library, o->backend, o->ranks,
                     o->iters, o->warmup, (unsigned long long)o->eager_limit, o->check,
                     (int)o->real.cache,
                     o->args.fix ? o->args.fix : "", o->args.schedule ? o->args.schedule : "",
                     o->args.microbatches, o->args.pieces,
                     o->args.compute, o->args.chunk, o->args.group, o->nsizes,
                     cl_op_name(o->args.op), cl_dtype_name(o->args.dtype));
    auth_sha256_add(&h, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
    auth_sha256_add(&h, &o->args.pieces, sizeof o->args.pieces);
    auth_sha256_add(&h, o->sizes, o->nsizes * sizeof *o->sizes);
    auth_sha256_finish(&h, out);
}

/* A run of processes started elsewhere joins its world's rendezvous, once
 * for every size (in that world, rank 0's process reports); a local tcp
 * run with --netlab opens it, for every size too. */
int row_real_start(backend_session *s, run_opts *o, run_env *env)
{
    real_session *rs = (real_session *)s;
    cl_diag d = {{0}};
    if (rs->world.size) {
        unsigned char digest[AUTH_HASH_BYTES];
        run_digest(o, digest);
        int err = boot_open(&rs->boot, &rs->world, digest, &d);
        auth_wipe(rs->world.secret, sizeof rs->world.secret); /* the boot holds the job's key */
        if (err)
            return cli_diag(&d, err == CL_EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_FAILED);
        env->mute = rs->world.rank != 0;
    }
    return o->real.netlab ? run_lab_open(&rs->lab, o->ranks, o->real.netlab) : 0;
}

void row_real_describe(const backend_session *s, const run_opts *o, const run_env *env,
                       backend_desc *d)
{
    (void)s;
    char rate[UNITS_BUF];
    *d = (backend_desc){.skew = true};
    if (o->real.netlab) {
        units_rate_str(rate, o->real.netlab);
        cli_textf(d->on, sizeof d->on, " (netlab %s per port)", rate);
    }
    cli_textf(d->where, sizeof d->where, "%s (%d cores)", env->binding, env->cores);
    cli_textf(d->how, sizeof d->how, " after %d warm-up, %s, %s", o->warmup,
              o->real.sync == RUN_SYNC_WINDOW ? "started together (--sync window)"
                                         : "each started by the barrier (--sync barrier)",
              run_cache_words(o->real.cache));
    /* Measured with more ranks than cores, the figure says so: its waits
     * are the scheduler's as much as the transport's. */
    if (o->ranks > env->cores && env->cores > 0)
        cli_textf(d->note, sizeof d->note, "oversubscribed: %d ranks on %d cores, waits "
                  "include the scheduler", o->ranks, env->cores);
    backend_desc_text(d, "binding", env->binding);
    backend_desc_number(d, "cores", env->cores);
    if (o->be->takes & BOPT(BOPT_SHM_COPY))
        backend_desc_text(d, "shm_copy", run_copy_name(o->real.copy));
    if (o->real.netlab)
        backend_desc_number(d, "netlab_port_Bps", o->real.netlab);
    backend_desc_number(d, "warmup", o->warmup);
    backend_desc_text(d, "sync", run_sync_name(o->real.sync));
    if (env->clock)
        backend_desc_text(d, "clock", env->clock);
    backend_desc_text(d, "cache", cache_mode_name(o->real.cache));
}

int row_real_close(backend_session *s)
{
    real_session *rs = (real_session *)s;
    if (!rs)
        return 0;
    int rc = run_lab_close(&rs->lab);
    boot_close(rs->boot);
    world_release(&rs->world);
    free(rs);
    return rc;
}

/* ---- --netlab, held by a command for every run ---- */

/* The signals a held netlab keeps blocked: those real_run takes as events
 * that would otherwise end the process before it deletes the netlab. */
static void lab_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGHUP);
}

int run_lab_try(run_lab *lab, int ports, double rate_Bps, cl_diag *d)
{
    sigset_t set;
    lab_signals(&set);
    sigprocmask(SIG_BLOCK, &set, &lab->old);
    int err = netlab_create(&lab->nl, ports, rate_Bps, d);
    if (err)
        sigprocmask(SIG_SETMASK, &lab->old, NULL);
    return err;
}

double run_lab_burst(double rate_Bps)
{
    return netlab_burst(rate_Bps);
}

int run_lab_open(run_lab *lab, int ports, double rate_Bps)
{
    cl_diag d = {{0}};
    int err = run_lab_try(lab, ports, rate_Bps, &d);
    if (!err)
        return 0;
    return cli_diag(&d, err == CL_ENOSYS || err == CL_EINVAL ? CLI_EXIT_USAGE
                                                             : CLI_EXIT_FAILED);
}

int run_lab_close(run_lab *lab)
{
    if (!lab->nl)
        return 0;
    netlab_destroy(lab->nl);
    lab->nl = NULL;
    sigset_t set;
    lab_signals(&set);
    struct timespec zero = {0, 0};
    int sig = sigtimedwait(&set, NULL, &zero);
    sigprocmask(SIG_SETMASK, &lab->old, NULL);
    if (sig <= 0)
        return 0;
    fprintf(stderr, "commlab: interrupted (SIG%s)\n", sigabbrev_np(sig));
    return 128 + sig;
}
