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
#include "sim/coro.h"
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

int row_sim_net_tier(sim_net **out, const cl_tier *t, int ranks, cl_diag *d)
{
    return sim_net_create_tier(out, t, ranks, d);
}

int row_sim_net_machine(sim_net **out, const machine *m, int ranks, cl_diag *d)
{
    return sim_net_create_machine(out, m, ranks, d);
}

int row_sim_net_yaml(sim_net **out, const char *name, const char *yaml, cl_diag *d)
{
    return sim_net_load_string(out, name, yaml, NULL, d);
}

const char *row_sim_net_describe(const sim_net *net)
{
    return sim_net_describe(net);
}

void row_sim_net_destroy(sim_net *net)
{
    sim_net_destroy(net);
}

size_t row_sim_stack_bytes(const run_opts *o)
{
    size_t asked = (size_t)o->sim.stack;
    return asked == 0 ? SIM_CORO_STACK_DEFAULT : asked < SIM_CORO_STACK_MIN ? SIM_CORO_STACK_MIN
                                                                            : asked;
}

int row_sim_size_on(const run_opts *o, sim_net *net, uint64_t bytes, rec_log *log, run_row *row)
{
    int status = run_check_memory(o, bytes, oom_hint(o));
    if (status)
        return status;
    sim_opts so = {
        .job = run_job_of(o, bytes, log), .net = net,
        .sharing = o->sim.sharing == RUN_SHARE_NONE ? SIM_SHARE_NONE : SIM_SHARE_MAXMIN,
        .handshake = o->sim.handshake, .stack_bytes = (size_t)o->sim.stack,
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
    const char *model = o->sim.model;
    size_t ml = strlen(model);
    o->sim.model_file = strchr(model, '/') || (ml > 5 && strcmp(model + ml - 5, ".yaml") == 0) ||
                        (ml > 4 && strcmp(model + ml - 4, ".yml") == 0);
    if (o->sim.model_file && (o->sim.tier || o->sim.topology || o->sim.config || o->sim.handshake))
        return cli_error("--model %s prices every pair of ranks itself: %s does not apply",
                         o->sim.model, o->sim.tier ? "--tier" : o->sim.topology ? "--topology"
                                           : o->sim.config ? "--config" : "--rendezvous-handshake "
                                                         "(the handshake is in its alpha)");
    if (strcmp(o->sim.model, "alphabeta") != 0 && !o->sim.model_file)
        return cli_error(strcmp(o->sim.model, "flow") == 0
                             ? "--model flow: link sharing is --sharing maxmin (the default) "
                               "with --model alphabeta"
                             : "unknown model '%s' (alphabeta, or a machine file)",
                         o->sim.model);
    if (o->sim.model_file && o->sim.sharing_given && o->sim.sharing == RUN_SHARE_MAXMIN)
        return cli_error("--sharing maxmin needs a --tier or a --topology: the calibration of "
                         "--model %s already holds what its transport shares", o->sim.model);
    if (o->sim.model_file)
        o->sim.sharing = RUN_SHARE_NONE;
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
    if (o->sim.model_file) {
        machine m;
        cl_diag d = {{0}};
        if (machine_load(&m, o->sim.model, &d) || sim_net_create_machine(net, &m, o->ranks, &d))
            return cli_diag(&d, CLI_EXIT_USAGE);
        if (!o->eager_given)
            o->eager_limit = m.eager_limit;
        return 0;
    }
    /* With --tier, selecting the one tier also reports an unknown name
     * along with the known ones. */
    tier_set ts;
    const run_sim_opts *so = &o->sim;
    int rc = cli_load_tiers(&ts, so->config, so->topology ? NULL : so->tier ? so->tier : "nvlink");
    if (rc)
        return rc;
    cl_diag d = {{0}};
    int err;
    if (o->sim.topology) {
        char found[PATH_MAX];
        const char *path;
        if ((rc = cli_given_path(found, sizeof found, o->sim.topology, "topology", &path))) {
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
        return cli_error("the topology '%s' has %d devices, -n asks for %d ranks", o->sim.topology,
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
    if (o->sim.reduce_bw > 0)
        sim_net_set_gamma(ss->net, 1 / o->sim.reduce_bw);
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
    cli_textf(d->where, sizeof d->where, "%s, sharing %s", net,
              run_sharing_name(o->sim.sharing, true));
    cli_textf(d->note, sizeof d->note, "%s", net);
    backend_desc_text(d, "model", o->sim.model);
    backend_desc_text(d, "network", net);
    backend_desc_text(d, "sharing", run_sharing_name(o->sim.sharing, false));
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
