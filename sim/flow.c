/*
 * flow.c - max-min fair bandwidth sharing, solved per connected component.
 *
 * Layout.  A resource lives in a pool (an array grown by doubling, indices
 * stable, a free list threaded through the unused ones) and is found by id
 * in an open-addressing hash table (linear probing, backward-shift delete,
 * so no tombstones pile up when links come and go).  A flow is one
 * allocation holding its route as an array of hops; each hop sits in its
 * resource's doubly linked list, so a resource knows its flows without any
 * allocation and a flow leaves every list in O(route).  Flows come from
 * pools (sim/slab.h), one per route length.
 *
 * Solving.  Changed resources are "dirty" and queued as seeds; a solve
 * walks from a seed over resources and flows (epoch marks, no clearing),
 * collects the component, advances its flows' work to now and refills it.
 * The scratch arrays are grown by sim_flow_start to the number of
 * resources and flows in use, so solving (and finishing) cannot fail.  A
 * resource left without flows is released at once, or, if it is a queued
 * seed, when the seeds are processed.
 *
 * The types are in flow_impl.h; the queries and sim_flow_check are in
 * flow_query.c.
 */
#include "sim/flow.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "commlab.h"
#include "sim/flow_impl.h"

/* A share within SNAP (relative) of the filling level joins it.  Shares
 * that are equal in exact arithmetic differ by the rounding of the
 * subtractions before them, which grows with the flows fixed: measured
 * 1.1e-12 in an all-to-all of 1,024 ranks, and in general a resource with
 * k flows fixed elsewhere carries ~k^2 ulps. */
#define SNAP 1e-9
/* How many flows ahead a solve's fill fetches the one it will read, and
 * how many resources' lists its walk chases at once.  Eight lines in
 * flight at a time; only 8 was measured (README, the contended
 * reference), neither is tuned. */
#define AHEAD 8
#define WALKERS 8

/* ---- hash table ---- */


/* Room for `more` new ids at <= 1/2 load.  CL_ENOMEM: unchanged. */
static int tab_reserve(sim_flow_sys *s, size_t more)
{
    if (2 * (s->tab_len + more) <= s->tab_cap)
        return 0;
    size_t cap = s->tab_cap ? s->tab_cap : 64;
    while (2 * (s->tab_len + more) > cap)
        cap *= 2;
    slot *tab = malloc(cap * sizeof(*tab));
    if (!tab)
        return CL_ENOMEM;
    for (size_t i = 0; i < cap; i++)
        tab[i].idx = NONE;
    for (size_t i = 0; i < s->tab_cap; i++) {
        if (s->tab[i].idx == NONE)
            continue;
        size_t j = flow__home(s->tab[i].id, cap - 1);
        while (tab[j].idx != NONE)
            j = (j + 1) & (cap - 1);
        tab[j] = s->tab[i];
    }
    free(s->tab);
    s->tab = tab;
    s->tab_cap = cap;
    return 0;
}

static void tab_insert(sim_flow_sys *s, int64_t id, uint32_t idx)
{
    size_t mask = s->tab_cap - 1, i = flow__home(id, mask);
    while (s->tab[i].idx != NONE)
        i = (i + 1) & mask;
    s->tab[i].id = id;
    s->tab[i].idx = idx;
    s->tab_len++;
}

static void tab_delete(sim_flow_sys *s, int64_t id)
{
    size_t mask = s->tab_cap - 1, i = flow__home(id, mask);
    while (s->tab[i].id != id || s->tab[i].idx == NONE)
        i = (i + 1) & mask;
    /* Backward shift: pull later entries of the run into the hole unless
     * their home lies cyclically in (hole, entry]. */
    for (size_t j = i;;) {
        j = (j + 1) & mask;
        if (s->tab[j].idx == NONE)
            break;
        size_t k = flow__home(s->tab[j].id, mask);
        if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
            continue;
        s->tab[i] = s->tab[j];
        i = j;
    }
    s->tab[i].idx = NONE;
    s->tab_len--;
}

/* ---- pools ---- */

/* Room for `more` new resources and one more flow of nres hops in every
 * array a solve uses.  CL_ENOMEM: nothing visible changed. */
static int reserve(sim_flow_sys *s, uint32_t more, int nres)
{
    if (tab_reserve(s, more))
        return CL_ENOMEM;
    if (s->res_used + more > s->res_cap) {
        uint32_t cap = s->res_cap ? s->res_cap : 64;
        while (s->res_used + more > cap)
            cap *= 2;
        res *r = realloc(s->res, cap * sizeof(*r));
        if (!r)
            return CL_ENOMEM;
        s->res = r;
        uint32_t *a[4] = {s->seeds, s->cres, s->heap, s->cpos};
        for (int k = 0; k < 4; k++) {
            uint32_t *p = realloc(a[k], cap * sizeof(*p));
            if (!p) {
                s->seeds = a[0], s->cres = a[1], s->heap = a[2], s->cpos = a[3];
                return CL_ENOMEM;
            }
            a[k] = p;
        }
        s->seeds = a[0], s->cres = a[1], s->heap = a[2], s->cpos = a[3];
        size_t *c = realloc(s->cstart, ((size_t)cap + 1) * sizeof(*c));
        if (!c)
            return CL_ENOMEM;
        s->cstart = c;
        s->res_cap = cap;
    }
    if (s->hops + (size_t)nres > s->cadj_cap) {
        size_t cap = s->cadj_cap ? 2 * s->cadj_cap : 512;
        while (s->hops + (size_t)nres > cap)
            cap *= 2;
        sim_flow **p = realloc(s->cadj, cap * sizeof(*p));
        if (!p)
            return CL_ENOMEM;
        s->cadj = p;
        s->cadj_cap = cap;
    }
    if (s->active + 1 > s->cflow_cap) {
        size_t cap = s->cflow_cap ? 2 * s->cflow_cap : 256;
        sim_flow **p = realloc(s->cflow, cap * sizeof(*p));
        if (!p)
            return CL_ENOMEM;
        s->cflow = p;
        s->cflow_cap = cap;
    }
    return 0;
}

/* A pool slot for id (reserve() made room); cannot fail. */
static uint32_t res_new(sim_flow_sys *s, int64_t id, double cap)
{
    uint32_t idx;
    if (s->res_free != NONE) {
        idx = s->res_free;
        s->res_free = s->res[idx].pos;
    } else {
        idx = s->res_hw++;
    }
    s->res[idx] = (res){.id = id, .cap = cap, .used = true};
    tab_insert(s, id, idx);
    s->res_used++;
    return idx;
}

static void res_release(sim_flow_sys *s, uint32_t idx)
{
    res *r = &s->res[idx];
    assert(r->nflows == 0 && !r->head);
    tab_delete(s, r->id);
    r->used = false;
    r->dirty = false;
    r->pos = s->res_free;
    s->res_free = idx;
    s->res_used--;
}

static size_t flow_size(int nres)
{
    return sizeof(sim_flow) + (size_t)nres * sizeof(hop);
}

/* ---- lifecycle ---- */

int sim_flow_create(sim_flow_sys **out, sim_flow_moved_fn *moved, void *ctx)
{
    sim_flow_sys *s = calloc(1, sizeof(*s));
    if (!s)
        return CL_ENOMEM;
    s->moved = moved;
    s->ctx = ctx;
    s->res_free = NONE;
    for (int n = 1; n <= SIM_FLOW_MAX_ROUTE; n++)
        sim_pool_init(&s->flows[n], flow_size(n));
    *out = s;
    return 0;
}

void sim_flow_destroy(sim_flow_sys *s)
{
    if (!s)
        return;
    for (int n = 1; n <= SIM_FLOW_MAX_ROUTE; n++)
        sim_pool_release(&s->flows[n]);
    free(s->tab);
    free(s->res);
    free(s->seeds);
    free(s->cres);
    free(s->heap);
    free(s->cflow);
    free(s->cpos);
    free(s->cstart);
    free(s->cadj);
    free(s);
}

/* ---- solving ---- */

static bool before(const res *a, const res *b)
{
    return a->share < b->share || (a->share == b->share && a->id < b->id);
}

static void heap_put(sim_flow_sys *s, uint32_t at, uint32_t idx)
{
    s->heap[at] = idx;
    s->res[idx].pos = at;
}

static void sift_up(sim_flow_sys *s, uint32_t at)
{
    uint32_t idx = s->heap[at];
    while (at > 0) {
        uint32_t up = (at - 1) / 2;
        if (!before(&s->res[idx], &s->res[s->heap[up]]))
            break;
        heap_put(s, at, s->heap[up]);
        at = up;
    }
    heap_put(s, at, idx);
}

static void sift_down(sim_flow_sys *s, uint32_t at, uint32_t n)
{
    uint32_t idx = s->heap[at];
    for (;;) {
        uint32_t c = 2 * at + 1;
        if (c >= n)
            break;
        if (c + 1 < n && before(&s->res[s->heap[c + 1]], &s->res[s->heap[c]]))
            c++;
        if (!before(&s->res[s->heap[c]], &s->res[idx]))
            break;
        heap_put(s, at, s->heap[c]);
        at = c;
    }
    heap_put(s, at, idx);
}

/* Work done since f->t at its current rate; never below zero, and a
 * rounding crumb counts as nothing. */
static void advance(sim_flow *f, double now)
{
    double dt = now - f->t;
    if (dt > 0 && f->rate > 0) {
        f->work -= f->rate * dt;
        if (f->work <= DONE * f->work0)
            f->work = 0;
    }
    f->t = now;
}

/* Resource idx joins the component walk() collects: its place in cres,
 * and its stretch of cadj (as many places as it has flows). */
static void walk_found(sim_flow_sys *s, uint32_t idx, uint32_t *r_n, size_t *a_n)
{
    s->cpos[idx] = *r_n;
    s->cstart[*r_n] = *a_n;
    s->cres[(*r_n)++] = idx;
    *a_n += s->res[idx].nflows;
}

/* Collects the component of resource `seed` into cres/cflow, and each of
 * its resources' flows into cadj (cpos, cstart), in the order of the
 * resource's list: fill then reads them from an array it can fetch ahead
 * of itself.  The lists are chased WALKERS at a time, a hop of each in
 * turn: in a large solve each hop is a line from memory, and a list's
 * next hop is known only once its hop is read, so one list at a time
 * waited on every line in turn. */
static void walk(sim_flow_sys *s, uint32_t seed, uint32_t *nr, size_t *nf)
{
    uint64_t ep = ++s->epoch;
    uint32_t r_n = 0, next = 0; /* resources found; the next one to chase */
    size_t f_n = 0, a_n = 0;    /* flows found; cadj's places given out */
    struct {
        hop *h;    /* the next hop of its list */
        size_t at; /* where its flow goes in cadj */
    } w[WALKERS];
    int busy = 0;
    s->res[seed].mark = ep;
    walk_found(s, seed, &r_n, &a_n);
    for (;;) {
        for (; busy < WALKERS && next < r_n; next++, busy++) {
            w[busy].h = s->res[s->cres[next]].head; /* a resource found has a flow */
            w[busy].at = s->cstart[next];
        }
        if (!busy)
            break;
        for (int k = 0; k < busy;) {
            hop *h = w[k].h;
            sim_flow *f = flow__of(h);
            s->cadj[w[k].at++] = f;
            if (f->mark != ep) {
                f->mark = ep;
                s->cflow[f_n++] = f;
                for (int i = 0; i < f->nres; i++) {
                    uint32_t q = f->hop[i].res;
                    if (s->res[q].mark != ep) {
                        s->res[q].mark = ep;
                        walk_found(s, q, &r_n, &a_n);
                    }
                }
            }
            if ((w[k].h = h->next))
                k++;
            else
                w[k] = w[--busy]; /* its list is done */
        }
    }
    s->cstart[r_n] = a_n;
    *nr = r_n;
    *nf = f_n;
}

static void set_rate(sim_flow_sys *s, sim_flow *f, double rate, double now)
{
    if (rate == f->rate)
        return; /* same rate, same end: nothing moved */
    f->rate = rate;
    double end = rate > 0 ? now + f->work / rate : INFINITY;
    if (end == f->end)
        return;
    f->end = end;
    if (f != s->quiet && s->moved) {
        s->stats.moves++;
        s->moved(s->ctx, f, f->end);
    }
}

/* Progressive filling of the component in cres/cflow at now. */
static void fill(sim_flow_sys *s, uint32_t nr, size_t nf, double now)
{
    for (size_t i = 0; i < nf; i++) {
        if (i + AHEAD < nf)
            __builtin_prefetch(s->cflow[i + AHEAD], 1);
        advance(s->cflow[i], now);
        s->cflow[i]->fixed = false;
    }
    for (uint32_t i = 0; i < nr; i++) {
        res *r = &s->res[s->cres[i]];
        r->rem = r->cap;
        r->unfixed = r->nflows;
        r->share = r->cap / r->nflows;
        heap_put(s, i, s->cres[i]);
    }
    for (uint32_t i = nr / 2; i-- > 0;)
        sift_down(s, i, nr);
    double level = 0;
    for (uint32_t n = nr; n > 0;) {
        uint32_t idx = s->heap[0];
        heap_put(s, 0, s->heap[--n]);
        sift_down(s, 0, n);
        res *r = &s->res[idx];
        if (!r->unfixed)
            continue; /* its flows were all fixed elsewhere: share +inf */
        double share = r->share;
        if (fabs(share - level) <= SNAP * level)
            share = level;
        else
            level = share;
        sim_flow *const *flows = s->cadj + s->cstart[s->cpos[idx]];
        size_t count = s->cstart[s->cpos[idx] + 1] - s->cstart[s->cpos[idx]];
        for (size_t j = 0; j < count; j++) {
            if (j + AHEAD < count) { /* its fields, then its first hops */
                __builtin_prefetch(flows[j + AHEAD], 1);
                __builtin_prefetch((const char *)flows[j + AHEAD] + 64, 1);
            }
            sim_flow *f = flows[j];
            if (f->fixed)
                continue;
            f->fixed = true;
            set_rate(s, f, share, now);
            for (int k = 0; k < f->nres; k++) {
                res *q = &s->res[f->hop[k].res];
                if (q == r)
                    continue;
                q->unfixed--;
                q->rem = fmax(q->rem - share, 0);
                q->share = q->unfixed ? q->rem / q->unfixed : INFINITY;
                /* Shares only grow as the level rises; rounding may nudge
                 * one down, so sift both ways. */
                sift_up(s, q->pos);
                sift_down(s, q->pos, n);
            }
        }
        r->unfixed = 0;
    }
}

/* Solves every component that holds a queued seed, once each. */
static void flush(sim_flow_sys *s, double now)
{
    if (!s->nseeds)
        return;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint64_t base = s->epoch;
    for (uint32_t i = 0; i < s->nseeds; i++) {
        uint32_t idx = s->seeds[i];
        res *r = &s->res[idx];
        r->dirty = false;
        if (!r->nflows) {
            if (!s->keep_idle)
                res_release(s, idx);
            continue;
        }
        if (r->mark > base)
            continue; /* solved with an earlier seed's component */
        uint32_t nr;
        size_t nf;
        walk(s, idx, &nr, &nf);
        fill(s, nr, nf, now);
        s->stats.solves++;
        s->stats.solved_res += nr;
        s->stats.solved_flows += nf;
    }
    s->nseeds = 0;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    s->stats.solve_s += (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
}

static void seed(sim_flow_sys *s, uint32_t idx)
{
    if (!s->res[idx].dirty) {
        s->res[idx].dirty = true;
        s->seeds[s->nseeds++] = idx;
    }
}

/* ---- flows ---- */

/* sim_flow_start and sim_flow_adopt: a flow whose bytes began to move at
 * since (<= now). */
static int start(sim_flow_sys *s, double since, double now, const int64_t *res_ids,
                 const double *cap, int nres, double work, void *owner, sim_flow **out)
{
    if (nres < 1 || nres > SIM_FLOW_MAX_ROUTE || !res_ids || !cap || !out ||
        !(work >= 0) || !isfinite(work) || !(now >= 0) || !isfinite(now) ||
        !(since >= 0) || since > now)
        return CL_EINVAL;
    assert(now >= s->last_now);
    assert(!s->batching || now == s->last_now);
    uint32_t idx[SIM_FLOW_MAX_ROUTE];
    uint32_t fresh = 0;
    bool alone = true;
    for (int i = 0; i < nres; i++) {
        if (!(cap[i] > 0) || !isfinite(cap[i]))
            return CL_EINVAL;
        for (int j = 0; j < i; j++)
            if (res_ids[j] == res_ids[i])
                return CL_EINVAL;
        idx[i] = flow__tab_find(s, res_ids[i]);
        if (idx[i] == NONE) {
            fresh++;
        } else if (s->res[idx[i]].nflows) {
            alone = false;
            if (s->res[idx[i]].cap != cap[i])
                return CL_EINVAL;
        }
    }
    if (since < now && !alone)
        return CL_EINVAL; /* sim_flow_adopt: only onto idle resources */
    if (reserve(s, fresh, nres))
        return CL_ENOMEM;
    sim_flow *f = sim_pool_take(&s->flows[nres]);
    if (!f)
        return CL_ENOMEM;
    /* Nothing can fail from here on. */
    s->last_now = now;
    *f = (sim_flow){.owner = owner, .work = work, .work0 = work, .t = since,
                    .end = INFINITY, .mark = 0, .nres = (uint8_t)nres};
    double rate = INFINITY;
    for (int i = 0; i < nres; i++) {
        if (idx[i] == NONE)
            idx[i] = res_new(s, res_ids[i], cap[i]);
        res *r = &s->res[idx[i]];
        if (!r->nflows)
            r->cap = cap[i]; /* idle until now: takes the capacity given */
        hop *h = &f->hop[i];
        h->res = idx[i];
        h->i = (uint32_t)i;
        h->prev = NULL;
        h->next = r->head;
        if (r->head)
            r->head->prev = h;
        r->head = h;
        r->nflows++;
        rate = fmin(rate, r->cap);
    }
    s->active++;
    s->hops += (size_t)nres;
    s->stats.starts++;
    *out = f;
    if (alone) {
        s->stats.fast_starts++;
        f->rate = rate;
        f->end = since + work / rate;
        return 0;
    }
    for (int i = 0; i < nres; i++)
        seed(s, idx[i]);
    if (!s->batching) {
        s->quiet = f;
        flush(s, now);
        s->quiet = NULL;
    }
    return 0;
}

int sim_flow_start(sim_flow_sys *s, double now, const int64_t *res_ids, const double *cap,
                   int nres, double work, void *owner, sim_flow **out)
{
    return start(s, now, now, res_ids, cap, nres, work, owner, out);
}

int sim_flow_adopt(sim_flow_sys *s, double since, double now, const int64_t *res_ids,
                   const double *cap, int nres, double work, void *owner, sim_flow **out)
{
    return start(s, since, now, res_ids, cap, nres, work, owner, out);
}

void sim_flow_finish(sim_flow_sys *s, double now, sim_flow *f)
{
    assert(now >= s->last_now);
    assert(!s->batching || now == s->last_now);
    s->last_now = now;
    bool alone = true;
    for (int i = 0; i < f->nres; i++) {
        hop *h = &f->hop[i];
        res *r = &s->res[h->res];
        if (h->prev)
            h->prev->next = h->next;
        else
            r->head = h->next;
        if (h->next)
            h->next->prev = h->prev;
        if (--r->nflows) {
            alone = false;
            seed(s, h->res);
        } else if (!r->dirty && !s->keep_idle) {
            res_release(s, h->res);
        }
    }
    s->active--;
    s->hops -= f->nres;
    s->stats.finishes++;
    if (alone)
        s->stats.fast_finishes++;
    sim_pool_give(&s->flows[f->nres], f);
    if (!s->batching)
        flush(s, now);
}

void sim_flow_batch_begin(sim_flow_sys *s, double now)
{
    assert(!s->batching && now >= s->last_now);
    s->batching = true;
    s->last_now = now;
}

void sim_flow_batch_end(sim_flow_sys *s)
{
    assert(s->batching);
    s->batching = false;
    flush(s, s->last_now);
}


void sim_flow_keep_idle(sim_flow_sys *s)
{
    s->keep_idle = true;
}
