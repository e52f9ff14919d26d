/* flow_query.c - what a max-min solver (sim/flow.h) says of itself: its
 * flows' rates and ends, its counts, and sim_flow_check's invariants. */
#include "sim/flow.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#include "commlab.h"
#include "sim/flow_impl.h"

/* ---- queries ---- */

double sim_flow_end(const sim_flow *f)
{
    return f->end;
}

double sim_flow_rate(const sim_flow *f)
{
    return f->rate;
}

double sim_flow_remaining(const sim_flow *f, double now)
{
    double w = f->work - f->rate * (now - f->t);
    return w > DONE * f->work0 ? w : 0;
}

void *sim_flow_owner(const sim_flow *f)
{
    return f->owner;
}

size_t sim_flow_active(const sim_flow_sys *s)
{
    return s->active;
}


size_t sim_flow_resources(const sim_flow_sys *s)
{
    return s->res_used;
}

const sim_flow_stats *sim_flow_stats_get(const sim_flow_sys *s)
{
    return &s->stats;
}

/* ---- checks ---- */

static int bad(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("sim_flow_check: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return CL_EINVAL;
}

/* Sum and largest rate of the flows on r. */
static void load(const res *r, double *sum, double *max)
{
    *sum = 0;
    *max = 0;
    for (hop *h = r->head; h; h = h->next) {
        double rate = flow__of(h)->rate;
        *sum += rate;
        *max = fmax(*max, rate);
    }
}

int sim_flow_check(const sim_flow_sys *s)
{
    if (s->batching || s->nseeds)
        return bad("called inside a batch (%u seeds queued)", s->nseeds);
    uint32_t used = 0;
    size_t flows = 0, hops = 0;
    for (uint32_t idx = 0; idx < s->res_hw; idx++) {
        const res *r = &s->res[idx];
        if (!r->used)
            continue;
        used++;
        if (flow__tab_find(s, r->id) != idx)
            return bad("resource %lld at %u: the table says %u", (long long)r->id, idx,
                       flow__tab_find(s, r->id));
        if (!r->nflows)
            return bad("resource %lld in use with no flow", (long long)r->id);
        uint32_t n = 0;
        hops += r->nflows;
        for (hop *h = r->head; h; h = h->next, n++) {
            sim_flow *f = flow__of(h);
            if (h->res != idx || h->i >= f->nres || (h->next && h->next->prev != h) ||
                (!h->prev && r->head != h))
                return bad("resource %lld: broken list at hop %u", (long long)r->id, n);
            if (h->i == 0)
                flows++;
        }
        if (n != r->nflows)
            return bad("resource %lld: %u flows listed, nflows %u", (long long)r->id, n,
                       r->nflows);
        double sum, max;
        load(r, &sum, &max);
        if (sum > r->cap * (1 + CHECK_TOL))
            return bad("resource %lld over capacity: %.17g > %.17g", (long long)r->id, sum,
                       r->cap);
    }
    if (used != s->res_used || used != s->tab_len)
        return bad("%u resources in the pool, %u counted, %zu in the table", used, s->res_used,
                   s->tab_len);
    if (flows != s->active)
        return bad("%zu flows listed, %zu active", flows, s->active);
    if (hops != s->hops || hops > s->cadj_cap)
        return bad("%zu hops listed, %zu counted, room for %zu in a solve", hops, s->hops,
                   s->cadj_cap);
    for (uint32_t idx = 0; idx < s->res_hw; idx++) {
        const res *r = &s->res[idx];
        if (!r->used)
            continue;
        for (hop *h = r->head; h; h = h->next) {
            sim_flow *f = flow__of(h);
            if (h->i != 0)
                continue;
            if (!(f->rate > 0) || f->work < 0)
                return bad("flow on %lld: rate %.17g, work %.17g", (long long)r->id, f->rate,
                           f->work);
            bool neck = false;
            for (int k = 0; k < f->nres && !neck; k++) {
                double sum, max;
                load(&s->res[f->hop[k].res], &sum, &max);
                neck = sum >= s->res[f->hop[k].res].cap * (1 - CHECK_TOL) &&
                       f->rate >= max * (1 - CHECK_TOL);
            }
            if (!neck)
                return bad("flow on %lld at rate %.17g has no bottleneck", (long long)r->id,
                           f->rate);
        }
    }
    return 0;
}
