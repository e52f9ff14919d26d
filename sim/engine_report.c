/* engine_report.c - what a run that cannot go on says: the wait-for
 * report of a deadlock (core/waitfor.h), a rank stopped by a fault, exit()
 * or the time limit (sim/fault.h), and the processes ranks forked. */
#include "sim/engine_impl.h"

#include <stdio.h>
#include <stdlib.h>

#include "core/units.h"
#include "core/waitfor.h"
#include "sim/blocks.h"
#include "sim/fault.h"

/* ---- deadlock ---- */

/* Prints the wait-for report of every rank (core/waitfor): at a deadlock
 * every unfinished rank is blocked; at the time limit some may still run.
 * A rank blocked outside its pattern (in the barrier between iterations)
 * counts as run_outside_state says: returned, when its pattern of the
 * iteration the others are blocked in has.  *blocked: the ranks that count
 * as blocked; *deadlock: the analysis found one (the report is printed
 * only then when only_deadlock).  0, or CL_ENOMEM when there is no memory
 * left to analyze. */
static int report_ranks(sim_engine *e, bool only_deadlock, int *blocked, bool *deadlock)
{
    wf_rank *wr = calloc((size_t)e->n, sizeof *wr);
    size_t total = 0;
    for (int i = 0; i < e->n; i++)
        if (e->ranks[i].state == RANK_BLOCKED)
            total += (size_t)e->ranks[i].wait_unknown;
    wf_pending *pend = calloc(total ? total : 1, sizeof *pend);
    if (!wr || !pend) {
        free(wr);
        free(pend);
        return CL_ENOMEM;
    }
    size_t k = 0;
    int iter = 0;
    bool known = false;
    for (int i = 0; i < e->n && !known; i++)
        if (e->ranks[i].state == RANK_BLOCKED && e->ranks[i].run.in_pattern) {
            iter = e->ranks[i].run.iter;
            known = true;
        }
    *blocked = 0;
    for (int i = 0; i < e->n; i++) {
        sim_rank *r = &e->ranks[i];
        wr[i].state = r->state == RANK_DONE      ? WF_DONE
                      : r->state != RANK_BLOCKED ? WF_RUNNING
                      : r->run.in_pattern        ? WF_BLOCKED
                                                 : run_outside_state(r->run.returned, iter, known);
        if (wr[i].state != WF_BLOCKED)
            continue;
        wr[i].call = (wf_op)r->wait_call;
        wr[i].pending = &pend[k];
        for (int j = 0; j < r->wait_n; j++) {
            sim_req *q = (sim_req *)r->wait_reqs[j];
            if (!q || q->done_at != INFINITY)
                continue;
            pend[k].op = q->base.is_send ? WF_SEND : WF_RECV;
            pend[k].peer = q->peer;
            pend[k].tag = q->tag;
            pend[k].bytes = q->bytes;
            k++;
            wr[i].npending++;
        }
        /* Every operation of its wait due to complete: it is in motion. */
        if (wr[i].npending == 0)
            wr[i].state = WF_RUNNING;
        *blocked += wr[i].state == WF_BLOCKED;
    }
    wf_report_opts ro = {.eager_limit = e->job->eager_limit, .time = e->now};
    *deadlock = waitfor_explain(e->job->report ? e->job->report : stderr, wr, (size_t)e->n,
                                &ro, only_deadlock);
    free(wr);
    free(pend);
    return 0;
}

void engine__report_deadlock(sim_engine *e)
{
    char t[UNITS_BUF];
    int blocked;
    bool deadlock;
    if (report_ranks(e, false, &blocked, &deadlock))
        engine__fail(e, CL_EDEADLOCK, "deadlock (no memory left to analyze it)");
    else
        engine__fail(e, CL_EDEADLOCK, "deadlock at t = %s: %d of %d ranks blocked",
                     units_time_str(t, e->now), blocked, e->n);
}

/* A fault at addr past the end of a rank's cl_alloc block (r's own, the
 * likely one, first): the words naming it into why.  Else why is kept. */
static void block_named(sim_engine *e, const sim_rank *r, const void *addr, const char *where,
                        char *why, size_t len)
{
    sim_blocks_fault f;
    int owner = -1;
    if (sim_blocks_find(&r->blocks, addr, &f))
        owner = (int)(r - e->ranks);
    for (int i = 0; i < e->n && owner < 0; i++)
        if (sim_blocks_find(&e->ranks[i].blocks, addr, &f))
            owner = i;
    if (owner >= 0)
        sim_blocks_words(&f, (int)(r - e->ranks), owner, where, why, len);
}

/* sim_coro_resume failed for r (in state `was` before): it overflowed its
 * stack, crashed, called exit() or ran past the time limit, or the limit
 * stopped the run at its turn, before it ran (sim/fault.h tells which).  A
 * rank stopped where it stood never runs again; the others unwind. */
void engine__rank_stopped(sim_engine *e, sim_rank *r, uint8_t was, int err)
{
    char where[64], why[sizeof e->res->diag.msg], t[UNITS_BUF];
    if (r->comm.call.name)
        snprintf(where, sizeof where, "in %s", r->comm.call.name);
    else
        snprintf(where, sizeof where, "in its own code");
    const void *addr = sim_fault_addr(&e->fault);
    bool blame = sim_fault_why(&e->fault, err, (int)(r - e->ranks),
                               sim_stacks_stack_bytes(e->stacks), where, why, sizeof why);
    if (addr)
        block_named(e, r, addr, where, why, sizeof why);
    if (!blame)
        r->state = was; /* it never ran: still waiting as it was */
    /* The limit stopping the scheduler between ranks finds it running
     * events: the ranks make progress, and no rank is blamed.  The wait-for
     * report is printed only when some ranks are deadlocked among
     * themselves meanwhile (a message in flight is no edge of it). */
    int blocked = 0;
    bool deadlock = false;
    if (err == CL_ETIMEOUT && !e->aborting)
        report_ranks(e, !blame, &blocked, &deadlock);
    units_time_str(t, e->now);
    if (blame)
        engine__fail(e, err, "%s", why);
    else if (deadlock)
        engine__fail(e, err, "%s: ranks are deadlocked among themselves (the report above), "
                     "while others went on (stopped at t = %s of modeled time, after %llu "
                     "events)", why, t, (unsigned long long)e->stats.events);
    else
        engine__fail(e, err, "%s, its ranks still making progress (stopped at t = %s of "
                     "modeled time, after %llu events): a long run, not a stuck one; raise "
                     "--timeout, or 0 for no limit", why, t, (unsigned long long)e->stats.events);
}

/* What the ranks forked and left running, killed as the run ended
 * (sim/fault.h), is said: the run itself stands, as on the measured
 * backends, whose ranks' groups are killed at the end too. */
void engine__report_forked(sim_engine *e)
{
    const sim_fault *f = &e->fault;
    FILE *out = e->job->report ? e->job->report : stderr;
    for (size_t i = 0; i < f->left && i < SIM_FAULT_SHOWN; i++) {
        int rank = 0;
        while (rank < e->n && &e->ranks[rank].co != f->shown[i].co)
            rank++;
        fprintf(out, "commlab: rank %d forked process %d, %s when the run ended: killed (what "
                "a rank forks ends with the run)\n", rank, (int)f->shown[i].pid,
                f->shown_running[i] ? "still running"
                                    : "which ended but left processes running in its group");
    }
    if (f->left > SIM_FAULT_SHOWN)
        fprintf(out, "commlab: and %zu more processes the ranks forked were left running: "
                "killed\n", f->left - SIM_FAULT_SHOWN);
}
