/* run_check.c - what `commlab run` checks once its options are parsed,
 * and the network of a modeled run (run_check.h). */
#include "cli/run_check.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/file.h"
#include "core/tier.h"
#include "real/netlab.h"
#include "real/world.h"

static const char *env_get(const char *name)
{
    return getenv(name);
}

/* A run of a backend whose processes can be started elsewhere (tcp, rdma)
 * learns its rank and world (real/world.h); the world's size is the rank
 * count. */
static int find_world(run_opts *o)
{
    cl_diag d = {{0}};
    if (!(o->be->takes & BOPT(BOPT_WORLD)))
        return 0;
    if (world_detect(&o->world, &o->wargs, env_get, &d))
        return cli_diag(&d, CLI_EXIT_USAGE);
    if (o->world.size == 0) {
        if (o->wargs.join_timeout > 0)
            return cli_error("--join-timeout applies to runs whose processes were started "
                             "elsewhere (--rank, --world, or a launcher's environment)");
        return 0;
    }
    if (o->ranks_given && o->ranks != o->world.size)
        return cli_error("-n %d disagrees with the world of %d ranks from %s: leave -n out",
                         o->ranks, o->world.size, o->world.source);
    o->ranks = o->world.size;
    return 0;
}

/* --netlab: a local tcp run only (real/netlab.h); after find_world. */
static int validate_netlab(const run_opts *o)
{
    if (!o->netlab)
        return 0;
    if (o->listen)
        return cli_error("--netlab gives every rank an address of its own: leave --listen "
                         "out");
    if (o->world.size)
        return cli_error("--netlab forks every rank on this host: not in a world of "
                         "processes started elsewhere (%s)", o->world.source);
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

/* --library: the backend library's call for o's collective, as the
 * pattern of a row of its own (after validate's backend lookup). */
static int find_library(run_opts *o)
{
    const collective_info *coll = o->pattern->collective;
    cl_pattern_fn *fn;
    if (!coll)
        return cli_error("--library runs a library's own call for a collective (`commlab "
                         "patterns` lists them): '%s' is not one", o->pattern->name);
    int rc = backend_check_library(o->be, coll->name, &fn);
    if (rc)
        return rc;
    snprintf(o->library_name, sizeof o->library_name, "%s-library", coll->name);
    o->library_pattern = (pattern_info){
        .name = o->library_name, .fn = fn, .chapter = o->pattern->chapter,
        .summary = "the backend library's own call", .min_ranks = o->pattern->min_ranks,
        .time_divisor = 1, .collective = coll, .algo = "library"};
    return 0;
}

const pattern_info *run_algo_at(const run_opts *o, size_t a)
{
    size_t n = 0;
    if (run_all_algos(o))
        while (collective_algo_at(o->coll, n))
            n++;
    else if (!o->library || !o->coll || o->algo)
        n = 1;
    if (a < n)
        return run_all_algos(o) ? collective_algo_at(o->coll, a) : o->pattern;
    return o->library && a == n ? &o->library_pattern : NULL;
}

int run_check(run_opts *o)
{
    int rc = backend_lookup(o->backend, "run", false, &o->be);
    if (rc || (rc = backend_check_options(o->be, &o->given)))
        return rc;
    bool measured = o->be->measured;
    if (o->listen && (rc = check_listen(o->listen)))
        return rc;
    if ((rc = backend_check_eager(o->be, o->eager_limit)) || (rc = find_world(o)))
        return rc;
    if ((rc = validate_netlab(o)))
        return rc;
    if (o->iters == 0)
        o->iters = measured ? 10 : 1;
    if (o->warmup < 0)
        o->warmup = measured ? 2 : 0;
    if (measured && o->ranks > 256 && !o->world.size)
        return cli_error("--backend %s runs at most 256 ranks (one process each), got -n %d",
                         o->backend, o->ranks);
    size_t ml = strlen(o->model);
    o->model_file = strchr(o->model, '/') || (ml > 5 && strcmp(o->model + ml - 5, ".yaml") == 0) ||
                    (ml > 4 && strcmp(o->model + ml - 4, ".yml") == 0);
    if (o->model_file && (o->tier || o->topology || o->config || o->handshake))
        return cli_error("--model %s prices every pair of ranks itself: %s does not apply",
                         o->model, o->tier ? "--tier" : o->topology ? "--topology"
                                           : o->config ? "--config" : "--rendezvous-handshake "
                                                         "(the handshake is in its alpha)");
    if (strcmp(o->model, "alphabeta") != 0 && !o->model_file)
        return cli_error(strcmp(o->model, "flow") == 0
                             ? "--model flow: link sharing is --sharing maxmin (the default) "
                               "with --model alphabeta"
                             : "unknown model '%s' (alphabeta, or a machine file)",
                         o->model);
    if (o->model_file && o->sharing_given && o->sharing == SIM_SHARE_MAXMIN)
        return cli_error("--sharing maxmin needs a --tier or a --topology: the calibration of "
                         "--model %s already holds what its transport shares", o->model);
    if (o->model_file)
        o->sharing = SIM_SHARE_NONE;
    if (o->ranks < o->pattern->min_ranks)
        return cli_error("%s needs at least %d ranks, got -n %d", o->pattern->name,
                         o->pattern->min_ranks, o->ranks);
    if (o->library && (rc = find_library(o)))
        return rc;
    if (o->args.fix) {
        const char *f = o->pattern->fixes;
        size_t len = strlen(o->args.fix);
        const char *hit = f ? strstr(f, o->args.fix) : NULL;
        if (!f)
            return cli_error("--fix applies to the deadlock pattern, not '%s'", o->pattern->name);
        if (!hit || (hit[len] != ',' && hit[len] != 0) || (hit != f && hit[-1] != ','))
            return cli_error("unknown --fix '%s' for %s (%s)", o->args.fix, o->pattern->name, f);
    }
    if ((rc = run_check_pattern_args(o)))
        return rc;
    if (o->tier && o->topology)
        return cli_error("run: give either --tier or --topology, not both");
    if (o->debug && !o->payload)
        return cli_error("--debug checks buffers and a --no-payload run has none: give one "
                         "or the other");
    if (o->trace && o->nsizes > 1)
        return cli_error("--trace records one run: give one size with --bytes");
    if (o->timeline && o->nsizes > 1)
        return cli_error("--timeline records one run: give one size with --bytes");
    if ((o->trace || o->timeline) && run_algo_at(o, 1))
        return cli_error("--%s records one run: give %s", o->trace ? "trace" : "timeline",
                         o->library ? "--library alone, or one --algo without it"
                                    : "one --algo, not all");
    /* A path that would be refused is refused before the run, not after. */
    cl_diag d = {{0}};
    if ((o->trace && file_out_check(o->trace, "trace", &d)) ||
        (o->timeline && file_out_check(o->timeline, "timeline", &d)))
        return cli_diag(&d, CLI_EXIT_USAGE);
    for (size_t i = 0; i < o->nsizes; i++)
        if (o->sizes[i] > SIZE_MAX / 4)
            return cli_error("size %llu is too large", (unsigned long long)o->sizes[i]);
    return 0;
}

/* run_build_net without --reduce-bandwidth. */
static int build_net_of(run_opts *o, sim_net **net)
{
    if (o->model_file) {
        machine m;
        cl_diag d = {{0}};
        if (machine_load(&m, o->model, &d) || sim_net_create_machine(net, &m, o->ranks, &d))
            return cli_diag(&d, CLI_EXIT_USAGE);
        if (!o->eager_given)
            o->eager_limit = m.eager_limit;
        return 0;
    }
    /* With --tier, selecting the one tier also reports an unknown name
     * along with the known ones. */
    tier_set ts;
    int rc = cli_load_tiers(&ts, o->config, o->topology ? NULL : o->tier ? o->tier : "nvlink");
    if (rc)
        return rc;
    cl_diag d = {{0}};
    int err;
    if (o->topology) {
        char found[PATH_MAX];
        const char *path;
        if ((rc = cli_given_path(found, sizeof found, o->topology, "topology", &path))) {
            tier_set_release(&ts);
            return rc;
        }
        err = sim_net_load(net, path, &ts, &d);
    } else {
        err = sim_net_create_tier(net, &ts.tiers[0], o->ranks, &d);
    }
    tier_set_release(&ts);
    if (err)
        return cli_diag(&d, CLI_EXIT_USAGE);
    if (sim_net_ranks(*net) < o->ranks) {
        int have = sim_net_ranks(*net);
        sim_net_destroy(*net);
        *net = NULL;
        return cli_error("the topology '%s' has %d devices, -n asks for %d ranks", o->topology,
                         have, o->ranks);
    }
    return 0;
}

int run_build_net(run_opts *o, sim_net **net)
{
    int rc = build_net_of(o, net);
    if (!rc && o->reduce_bw > 0)
        sim_net_set_gamma(*net, 1 / o->reduce_bw);
    return rc;
}
