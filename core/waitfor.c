/* waitfor.c - wait-for graph analysis (cycles, waits on returned ranks,
 * receives nobody sends) and the deadlock report. */
#include "core/waitfor.h"

#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "commlab.h"

enum { WHITE, GRAY, BLACK };

/* ---- input ---- */

static int validate(const wf_rank *ranks, size_t n)
{
    if (n > INT_MAX || (n > 0 && !ranks))
        return CL_EINVAL;
    for (size_t r = 0; r < n; r++) {
        const wf_rank *R = &ranks[r];
        if ((unsigned)R->state > WF_DONE)
            return CL_EINVAL;
        if (R->state == WF_BLOCKED &&
            ((unsigned)R->call > WF_BARRIER || R->npending > INT_MAX ||
             (R->npending > 0 && !R->pending)))
            return CL_EINVAL;
        for (size_t j = 0; R->state == WF_BLOCKED && j < R->npending; j++) {
            const wf_pending *p = &R->pending[j];
            int lo = p->op == WF_SEND ? 0 : -1; /* a recv may use wildcards */
            if (p->op != WF_BARRIER &&
                (!(p->op == WF_SEND || p->op == WF_RECV) || p->peer < lo ||
                 p->peer >= (int)n || p->tag < lo))
                return CL_EINVAL;
        }
    }
    return 0;
}

/* An edge to exactly one peer (not a wildcard set of ranks). */
static bool explicit_edge(const wf_pending *p)
{
    return p->op != WF_BARRIER && p->peer >= 0;
}

/* ---- skip lists: next rank >= i still eligible as a wildcard target ----
 * nx[i] == i while i is eligible; otherwise it points further right.  Path
 * halving keeps a find amortized near O(1); nx[n] == n is the sentinel. */

static int skip_find(int *nx, int i)
{
    while (nx[i] != i) {
        nx[i] = nx[nx[i]];
        i = nx[i];
    }
    return i;
}

typedef struct frame {
    int rank;   /* the blocked rank being explored */
    int cursor; /* next candidate rank of a wildcard op */
    size_t op;  /* current op index in its pending list */
    size_t via; /* op through which the frame above was pushed */
} frame;

typedef struct dfs {
    const wf_rank *ranks;
    int n;
    unsigned char *color;
    int *alive;  /* skips returned and finished (black) ranks */
    int *nonbar; /* also skips ranks inside a barrier */
    frame *st;
    size_t sp;
} dfs;

static void finish(dfs *d, int r)
{
    d->color[r] = BLACK;
    d->alive[r] = d->nonbar[r] = r + 1;
}

/* Copy the cycle st[k..sp-1] -> st[k] into res, rotated to its lowest rank. */
static int take_cycle(dfs *d, size_t k, wf_result *res)
{
    size_t len = d->sp - k, lo = 0;
    res->cycle = calloc(len, sizeof *res->cycle);
    if (!res->cycle)
        return CL_ENOMEM;
    for (size_t i = 1; i < len; i++)
        if (d->st[k + i].rank < d->st[k + lo].rank)
            lo = i;
    for (size_t i = 0; i < len; i++) {
        size_t a = k + (lo + i) % len, b = k + (lo + i + 1) % len;
        res->cycle[i] = (wf_wait){.rank = d->st[a].rank, .peer = d->st[b].rank,
                                  .op = d->st[a].via, .other_tag = WF_NO_TAG,
                                  .on_cycle = true};
    }
    res->cycle_len = len;
    return 0;
}

/* Iterative depth-first search from every blocked rank in ascending order;
 * stops at the first back edge.  Every edge is looked at once at most, and
 * a wildcard op walks the skip list, never the ranks it skipped. */
static int find_cycle(dfs *d, wf_result *res)
{
    const wf_rank *ranks = d->ranks;
    for (int root = 0; root < d->n; root++) {
        if (ranks[root].state != WF_BLOCKED || d->color[root] != WHITE)
            continue;
        d->sp = 0;
        d->st[d->sp++] = (frame){.rank = root};
        d->color[root] = GRAY;
        while (d->sp > 0) {
            frame *f = &d->st[d->sp - 1];
            const wf_rank *R = &ranks[f->rank];
            if (f->op >= R->npending) {
                finish(d, f->rank);
                d->sp--;
                continue;
            }
            const wf_pending *p = &R->pending[f->op];
            int t;
            if (explicit_edge(p)) {
                t = p->peer;
                if (ranks[t].state == WF_DONE || d->color[t] == BLACK) {
                    f->op++;
                    continue;
                }
            } else {
                t = skip_find(p->op == WF_BARRIER ? d->nonbar : d->alive, f->cursor);
                if (t == f->rank) {
                    f->cursor = t + 1;
                    continue;
                }
                if (t >= d->n) {
                    f->op++;
                    f->cursor = 0;
                    continue;
                }
            }
            f->via = f->op;
            if (d->color[t] == GRAY) {
                size_t k = d->sp;
                while (d->st[--k].rank != t)
                    ;
                return take_cycle(d, k, res);
            }
            if (explicit_edge(p))
                f->op++;
            else
                f->cursor = t + 1;
            if (ranks[t].state != WF_BLOCKED) {
                finish(d, t); /* running: a sink */
                continue;
            }
            d->color[t] = GRAY;
            d->st[d->sp++] = (frame){.rank = t};
        }
    }
    return 0;
}

/* ---- waits on returned ranks, receives nobody sends ----
 * The pending sends of blocked ranks, sorted twice: by (dst, src, tag) to
 * answer a receive from one peer, by (dst, tag, src) for ANY_SOURCE. */

typedef struct snd {
    int dst, src, tag;
} snd;

#define CMP(a, b) ((a) < (b) ? -1 : (a) > (b))

static int by_src(const void *a, const void *b)
{
    const snd *x = a, *y = b;
    int c = x->dst != y->dst ? CMP(x->dst, y->dst) : CMP(x->src, y->src);
    return c ? c : CMP(x->tag, y->tag);
}

static int by_tag(const void *a, const void *b)
{
    const snd *x = a, *y = b;
    int c = x->dst != y->dst ? CMP(x->dst, y->dst) : CMP(x->tag, y->tag);
    return c ? c : CMP(x->src, y->src);
}

/* First index whose entry is not below key under cmp. */
static size_t lower_bound(const snd *v, size_t len, const snd *key,
                          int (*cmp)(const void *, const void *))
{
    size_t lo = 0, hi = len;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cmp(&v[mid], key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Whether receive p of rank r has no pending send that can match it; then
 * *other is the lowest tag the peer (any rank, for ANY_SOURCE) does send to
 * r, or WF_NO_TAG. */
static bool unmatched(const snd *a, const snd *b, size_t len, int r, const wf_pending *p,
                      int *other)
{
    bool any = p->peer < 0;
    const snd *v = any ? b : a;
    int (*cmp)(const void *, const void *) = any ? by_tag : by_src;
    snd key = {.dst = r, .src = any ? INT_MIN : p->peer, .tag = INT_MIN};
    size_t i = lower_bound(v, len, &key, cmp);
    bool some = i < len && v[i].dst == r && (any || v[i].src == p->peer);
    *other = some ? v[i].tag : WF_NO_TAG;
    if (!some || p->tag == WF_ANY_TAG)
        return !some;
    key.tag = p->tag;
    i = lower_bound(v, len, &key, cmp);
    return !(i < len && v[i].dst == r && v[i].tag == p->tag && (any || v[i].src == p->peer));
}

/* Into res->on_done and res->unsent, sized for every pending op. */
static int find_waits(const wf_rank *ranks, size_t n, size_t nsend, int first_done,
                      const int *cycle_op, wf_result *res)
{
    snd *a = malloc((nsend ? nsend : 1) * 2 * sizeof *a);
    if (!a)
        return CL_ENOMEM;
    snd *b = a + nsend;
    size_t k = 0;
    for (size_t r = 0; r < n; r++) {
        for (size_t j = 0; ranks[r].state == WF_BLOCKED && j < ranks[r].npending; j++) {
            const wf_pending *p = &ranks[r].pending[j];
            if (p->op == WF_SEND)
                a[k++] = (snd){p->peer, (int)r, p->tag};
        }
    }
    memcpy(b, a, nsend * sizeof *a);
    qsort(a, nsend, sizeof *a, by_src);
    qsort(b, nsend, sizeof *b, by_tag);

    size_t u = 0;
    for (size_t r = 0; r < n; r++) {
        for (size_t j = 0; ranks[r].state == WF_BLOCKED && j < ranks[r].npending; j++) {
            const wf_pending *p = &ranks[r].pending[j];
            int other, peer = explicit_edge(p) && ranks[p->peer].state == WF_DONE ? p->peer
                              : p->op == WF_RECV && p->peer < 0 && res->ndone == n - 1
                                  ? WF_ANY_SOURCE
                              : p->op == WF_BARRIER && first_done >= 0 ? first_done
                                                                       : INT_MIN;
            if (peer != INT_MIN)
                res->on_done[res->non_done++] =
                    (wf_wait){.rank = (int)r, .peer = peer, .op = j, .other_tag = WF_NO_TAG};
            if (p->op != WF_RECV)
                continue;
            if (p->peer >= 0 && ranks[p->peer].state != WF_BLOCKED)
                continue; /* returned (on_done) or running (may send) */
            if (p->peer < 0 && (res->ndone == n - 1 || res->nrunning > 0))
                continue;
            if (unmatched(a, b, nsend, (int)r, p, &other))
                res->unsent[u++] = (wf_wait){.rank = (int)r, .peer = p->peer, .op = j,
                                             .other_tag = other,
                                             .on_cycle = cycle_op[r] == (int)j};
        }
    }
    free(a);
    res->nunsent = u;
    return 0;
}

/* ---- analysis ---- */

void waitfor_result_release(wf_result *res)
{
    if (!res)
        return;
    free(res->cycle);
    free(res->on_done);
    free(res->unsent);
    memset(res, 0, sizeof *res);
}

int waitfor_analyze(const wf_rank *ranks, size_t n, wf_result *out)
{
    memset(out, 0, sizeof *out);
    int err = validate(ranks, n);
    if (err)
        return err;
    dfs d = {.ranks = ranks, .n = (int)n};
    d.color = calloc(n + 1, 1);
    d.alive = malloc((n + 1) * sizeof *d.alive);
    d.nonbar = malloc((n + 1) * sizeof *d.nonbar);
    d.st = malloc((n + 1) * sizeof *d.st);
    if (!d.color || !d.alive || !d.nonbar || !d.st) {
        err = CL_ENOMEM;
        goto out;
    }
    int first_done = -1;
    size_t nops = 0, nsend = 0;
    for (size_t r = 0; r < n; r++) {
        const wf_rank *R = &ranks[r];
        bool in_barrier = false;
        out->nrunning += R->state == WF_RUNNING;
        out->nblocked += R->state == WF_BLOCKED;
        out->ndone += R->state == WF_DONE;
        if (R->state == WF_DONE && first_done < 0)
            first_done = (int)r;
        for (size_t j = 0; R->state == WF_BLOCKED && j < R->npending; j++) {
            in_barrier |= R->pending[j].op == WF_BARRIER;
            nsend += R->pending[j].op == WF_SEND;
        }
        nops += R->state == WF_BLOCKED ? R->npending : 0;
        d.alive[r] = R->state == WF_DONE ? (int)r + 1 : (int)r;
        d.nonbar[r] = R->state == WF_DONE || in_barrier ? (int)r + 1 : (int)r;
    }
    d.alive[n] = d.nonbar[n] = (int)n;
    out->on_done = calloc(nops + 1, sizeof *out->on_done);
    out->unsent = calloc(nops + 1, sizeof *out->unsent);
    if (!out->on_done || !out->unsent) {
        err = CL_ENOMEM;
        goto out;
    }
    err = find_cycle(&d, out);
    if (!err) {
        /* the skip list is spent: reuse it as each rank's op on the cycle */
        for (size_t r = 0; r < n; r++)
            d.alive[r] = -1;
        for (size_t i = 0; i < out->cycle_len; i++)
            d.alive[out->cycle[i].rank] = (int)out->cycle[i].op;
        err = find_waits(ranks, n, nsend, first_done, d.alive, out);
    }
    out->deadlock = out->cycle_len > 0 || out->non_done > 0;
out:
    free(d.color);
    free(d.alive);
    free(d.nonbar);
    free(d.st);
    if (err)
        waitfor_result_release(out);
    return err;
}

/* ---- report ---- */

/* Binary units; integral values without decimals ("1 MiB"), others with at
 * most two ("1.5 KiB") and at least one, so an inexact size never reads as
 * exact.  core/units will own this once it exists. */
static const char *fmt_bytes(char buf[32], uint64_t b)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int u = 0;
    uint64_t div = 1;
    while (u < 6 && b / div >= 1024) {
        div *= 1024;
        u++;
    }
    if (b % div == 0) {
        snprintf(buf, 32, "%" PRIu64 " %s", b / div, unit[u]);
        return buf;
    }
    double v = (double)b / (double)div;
    if (v >= 1023.995 && u < 6) {
        v /= 1024;
        u++;
    }
    int len = snprintf(buf, 32, "%.2f", v);
    while (len > 0 && buf[len - 1] == '0' && buf[len - 2] != '.')
        len--;
    snprintf(buf + len, 32 - (size_t)len, " %s", unit[u]);
    return buf;
}

/* 99990 -> "99,990". */
static const char *fmt_count(char buf[32], size_t v)
{
    char tmp[32];
    int len = snprintf(tmp, sizeof tmp, "%zu", v), o = 0;
    for (int i = 0; i < len; i++) {
        if (i > 0 && (len - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = tmp[i];
    }
    buf[o] = '\0';
    return buf;
}

/* " at t = 1.234 ms": seconds scaled to s, ms, us or ns. */
static void print_time(FILE *f, double t)
{
    static const char *const unit[] = {"s", "ms", "us", "ns"};
    int u = 0;
    for (; t > 0 && t < 1 && u < 3; u++)
        t *= 1e3;
    if (t == 0)
        fputs(" at t = 0 s", f);
    else
        fprintf(f, " at t = %.3f %s", t, unit[u]);
}

static const char *any_or(char buf[16], int v)
{
    if (v < 0)
        return "any";
    snprintf(buf, 16, "%d", v);
    return buf;
}

static void print_op(FILE *f, const wf_pending *p)
{
    char peer[16], tag[16], sz[32];
    if (p->op == WF_BARRIER)
        fputs("barrier()", f);
    else
        fprintf(f, "%s=%s, tag=%s, %s)", p->op == WF_SEND ? "send(dst" : "recv(src",
                any_or(peer, p->peer), any_or(tag, p->tag), fmt_bytes(sz, p->bytes));
}

enum { MAX_OPS = 8 }; /* pending ops shown in one rank's line */

static void print_rank(FILE *f, const wf_rank *R, int r)
{
    static const char *const call[] = {"send", "recv", "wait", "waitall", "barrier"};
    bool all_barrier = true;
    for (size_t j = 0; j < R->npending; j++)
        all_barrier &= R->pending[j].op == WF_BARRIER;
    if (R->state == WF_RUNNING) {
        fprintf(f, "rank %d: running\n", r);
        return;
    }
    fprintf(f, "rank %d: blocked in ", r);
    if ((R->call == WF_SEND || R->call == WF_RECV) && R->npending == 1 &&
               R->pending[0].op == R->call) {
        print_op(f, &R->pending[0]);
    } else if (R->call == WF_BARRIER && all_barrier) {
        fputs("barrier()", f);
    } else {
        fprintf(f, "%s(", call[R->call]);
        for (size_t j = 0; j < R->npending && j < MAX_OPS; j++) {
            fputs(j ? ", " : "", f);
            print_op(f, &R->pending[j]);
        }
        char c[32];
        if (R->npending > MAX_OPS)
            fprintf(f, ", ... %s more", fmt_count(c, R->npending - MAX_OPS));
        fputc(')', f);
    }
    fputc('\n', f);
}

/* Every rank not returned; past max of them, the middle is elided. */
static void print_ranks(FILE *f, const wf_rank *ranks, size_t n, const wf_result *res, size_t max)
{
    size_t listed = res->nblocked + res->nrunning, seen = 0;
    size_t head = listed > max ? (max + 1) / 2 : listed;
    size_t tail_from = listed > max ? listed - (max - head) : listed;
    char c[32];
    for (size_t r = 0; r < n; r++) {
        if (ranks[r].state == WF_DONE)
            continue;
        if (seen == head && head < listed)
            fprintf(f, "... %s more %s ...\n", fmt_count(c, tail_from - head),
                    res->nrunning ? "ranks" : "blocked ranks");
        if (seen < head || seen >= tail_from)
            print_rank(f, &ranks[r], (int)r);
        seen++;
    }
}

static void print_cycle(FILE *f, const wf_result *res, size_t max)
{
    size_t len = res->cycle_len, head = len > max ? (max + 1) / 2 : len;
    size_t tail_from = len - (len > max ? max - head : 0);
    char c[32];
    if (len > max)
        fprintf(f, "cycle of %s ranks:", fmt_count(c, len));
    else
        fputs("cycle:", f);
    for (size_t i = 0; i < len; i++) {
        if (i == head && head < len)
            fprintf(f, " ... %s more ... ->", fmt_count(c, tail_from - head));
        if (i < head || i >= tail_from)
            fprintf(f, " rank %d ->", res->cycle[i].rank);
    }
    fprintf(f, " rank %d\n", res->cycle[0].rank);
}

/* Waits one a line, the first max of them.  An unsent receive that is its
 * rank's edge on the cycle is left to the cycle, unless the tags differ. */
static void print_waits(FILE *f, const wf_rank *ranks, const wf_wait *w, size_t len,
                        bool unsent, size_t max)
{
    size_t shown = 0;
    char c[32];
    for (size_t i = 0; i < len; i++) {
        const wf_wait *x = &w[i];
        if ((unsent && x->on_cycle && x->other_tag == WF_NO_TAG) || shown++ >= max)
            continue;
        if (!unsent && x->peer >= 0)
            fprintf(f, "rank %d waits on rank %d, which already returned\n", x->rank, x->peer);
        else if (!unsent)
            fprintf(f, "rank %d waits for a message from any rank, but every other rank "
                       "already returned\n", x->rank);
        else if (x->peer >= 0)
            fprintf(f, "rank %d waits for a message from rank %d that rank %d does not send",
                    x->rank, x->peer, x->peer);
        else
            fprintf(f, "rank %d waits for a message from any rank that no rank sends", x->rank);
        if (unsent && x->other_tag != WF_NO_TAG)
            fprintf(f, " (it receives tag %d; tag %d is sent)",
                    ranks[x->rank].pending[x->op].tag, x->other_tag);
        if (unsent)
            fputc('\n', f);
    }
    if (shown > max)
        fprintf(f, "... %s more like this ...\n", fmt_count(c, shown - max));
}

static void print_why(FILE *f, const wf_rank *ranks, const wf_report_opts *o, const wf_result *res)
{
    char sz[32];
    if (!res->deadlock) {
        fprintf(f, "why: no cycle and no rank waits on one that returned%s\n",
                res->nrunning ? "; the blocked ranks may wait on a running rank" : "");
        return;
    }
    if (!res->cycle_len) {
        fputs("why: a rank that returned no longer sends or receives, so an operation "
              "that needs it never completes\n", f);
        return;
    }
    for (size_t i = 0; i < res->nunsent; i++) {
        const wf_wait *w = &res->unsent[i];
        if (w->on_cycle && w->other_tag != WF_NO_TAG && w->peer >= 0) {
            fprintf(f, "why: rank %d sends to rank %d with tag %d, but rank %d receives tag %d\n",
                    w->peer, w->rank, w->other_tag, w->rank, ranks[w->rank].pending[w->op].tag);
            return;
        }
    }
    size_t sends = 0, recvs = 0, big = 0;
    const wf_wait *bar = NULL;
    for (size_t i = 0; i < res->cycle_len; i++) {
        const wf_pending *p = &ranks[res->cycle[i].rank].pending[res->cycle[i].op];
        sends += p->op == WF_SEND;
        recvs += p->op == WF_RECV;
        big += p->op == WF_SEND && p->bytes > o->eager_limit;
        if (p->op == WF_BARRIER && !bar)
            bar = &res->cycle[i];
    }
    if (sends == res->cycle_len && big == sends)
        fprintf(f, "why: every rank in the cycle sends before it receives, and a message "
                   "above the eager limit (%s) waits for a matching receive\n",
                fmt_bytes(sz, o->eager_limit));
    else if (sends == res->cycle_len)
        fputs("why: every rank in the cycle sends before it receives, and each send "
              "waits for its matching receive\n", f);
    else if (recvs == res->cycle_len)
        fputs("why: every rank in the cycle receives before it sends\n", f);
    else if (bar)
        fprintf(f, "why: rank %d waits in a barrier for rank %d, which has not entered it\n",
                bar->rank, bar->peer);
    else
        fputs("why: each rank in the cycle waits for the next one, so none can move first\n", f);
}

int waitfor_report(FILE *f, const wf_rank *ranks, size_t n, const wf_report_opts *opts,
                   const wf_result *res)
{
    wf_report_opts o = opts ? *opts : (wf_report_opts){.time = -1};
    if (!o.max_ranks)
        o.max_ranks = 20;
    if (!o.max_cycle)
        o.max_cycle = 20;
    /* Ranks still running (a run past its time limit) may go on: the
     * deadlock is then of the others. */
    fputs(!res->deadlock       ? "no deadlock found"
          : res->nrunning == 0 ? "deadlock: no rank can make progress"
                               : "deadlock: the blocked ranks can make no progress",
          f);
    if (o.time >= 0)
        print_time(f, o.time);
    fputc('\n', f);
    print_ranks(f, ranks, n, res, o.max_ranks);
    if (res->cycle_len)
        print_cycle(f, res, o.max_cycle);
    print_waits(f, ranks, res->on_done, res->non_done, false, o.max_ranks);
    print_waits(f, ranks, res->unsent, res->nunsent, true, o.max_ranks);
    print_why(f, ranks, &o, res);
    return ferror(f) ? CL_EIO : 0;
}

bool waitfor_explain(FILE *f, const wf_rank *ranks, size_t n, const wf_report_opts *opts,
                     bool only_deadlock)
{
    wf_result res;
    if (waitfor_analyze(ranks, n, &res))
        return false;
    bool deadlock = res.deadlock;
    if (deadlock || !only_deadlock)
        waitfor_report(f, ranks, n, opts, &res);
    waitfor_result_release(&res);
    return deadlock;
}
