/* row_sim.c - the model's row of the backend table (cli/rows.h): its
 * session holds the simulator's network, built once for every size. */
#include "cli/rows.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/machine.h"
#include "core/tier.h"
#include "core/units.h"
#include "sim/engine.h"
#include "sim/net.h"

typedef struct sim_session {
    backend_session base;
    sim_net *net;
} sim_session;

/* A run out of memory: what the model can do about it. */
static const char *oom_hint(const run_opts *o)
{
    return o->payload ? "commlab: the model's times need no bytes moved: add --no-payload to "
                        "run this size modeled\n"
                      : NULL;
}

int row_sim_size_on(const run_opts *o, sim_net *net, uint64_t bytes, rec_log *log, run_row *row)
{
    int status = run_check_memory(o, bytes, oom_hint(o));
    if (status)
        return status;
    sim_opts so = {
        .job = run_job_of(o, bytes, log), .net = net,
        .sharing = o->sharing == RUN_SHARE_NONE ? SIM_SHARE_NONE : SIM_SHARE_MAXMIN,
        .handshake = o->handshake, .stack_bytes = (size_t)o->stack,
    };
    run_result res;
    int err = sim_run(&so, &res, NULL);
    status = run_size_outcome(o, bytes, err, &res, row, oom_hint(o));
    run_result_release(&res);
    return status;
}

int row_sim_size(const run_opts *o, run_env *env, uint64_t bytes, rec_log *log, bool first,
                 run_row *row)
{
    (void)first;
    return row_sim_size_on(o, ((sim_session *)env->session)->net, bytes, log, row);
}

/* --model: alphabeta, or a machine file that prices every pair itself. */
static int check_model(run_opts *o)
{
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
    if (o->model_file && o->sharing_given && o->sharing == RUN_SHARE_MAXMIN)
        return cli_error("--sharing maxmin needs a --tier or a --topology: the calibration of "
                         "--model %s already holds what its transport shares", o->model);
    if (o->model_file)
        o->sharing = RUN_SHARE_NONE;
    return 0;
}

int row_sim_open(run_opts *o, backend_session **s)
{
    int rc = row_session_new(o, sizeof(sim_session), s);
    return rc ? rc : check_model(o);
}

/* build_net without --reduce-bandwidth. */
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

/* The network of a modeled run: a machine file's mesh (whose eager limit
 * becomes o's unless --eager-limit was given), a --topology file, or a
 * --tier mesh of o->ranks, with --reduce-bandwidth's gamma; its group
 * becomes o's unless --group was given. */
int row_sim_start(backend_session *s, run_opts *o, run_env *env)
{
    sim_session *ss = (sim_session *)s;
    (void)env;
    int rc = build_net_of(o, &ss->net);
    if (rc)
        return rc;
    if (o->reduce_bw > 0)
        sim_net_set_gamma(ss->net, 1 / o->reduce_bw);
    if (!o->args.group)
        o->args.group = sim_net_group(ss->net);
    return 0;
}

void row_sim_describe(const backend_session *s, const run_opts *o, const run_env *env,
                      backend_desc *d)
{
    const sim_session *ss = (const sim_session *)s;
    (void)env;
    const char *net = sim_net_describe(ss->net);
    *d = (backend_desc){.reduce = true, .gamma = sim_net_gamma(ss->net, o->args.dtype)};
    cli_textf(d->where, sizeof d->where, "%s, sharing %s", net, run_sharing_name(o->sharing, true));
    cli_textf(d->note, sizeof d->note, "%s", net);
    backend_desc_text(d, "model", o->model);
    backend_desc_text(d, "network", net);
    backend_desc_text(d, "sharing", run_sharing_name(o->sharing, false));
}

int row_sim_close(backend_session *s)
{
    sim_session *ss = (sim_session *)s;
    if (ss) {
        sim_net_destroy(ss->net);
        free(ss);
    }
    return 0;
}
