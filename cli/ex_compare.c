/* ex_compare.c - what the probe saw of a code exercise's run
 * (include/commlab_probe.h, read by ex_probe.c), checked against what the
 * step's YAML names (where messages go, the data and sums each rank ends
 * with, the calls used) and against the reference solution's run of the
 * same command (the same messages, the same blocks received); ex_code.c
 * says what a step checks, in which order.  Every check leaves why empty
 * when it passes, or says why not (with the step's fault, where it
 * names one). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/exercise.h"

/* ---- what the probe saw ---- */

typedef struct pair {
    long a, b; /* ranks: source and destination, or holder and owner */
} pair;

#define MAX_PAIRS 4096

/* "0>1 1>0" into pairs; the text was checked when it was loaded. */
static size_t parse_pairs(const char *text, pair *out, size_t max)
{
    size_t n = 0;
    const char *p = text;
    char *end;
    while (n < max) {
        long a = strtol(p, &end, 10);
        if (end == p)
            break;
        long b = strtol(end + 1, &end, 10);
        out[n++] = (pair){a, b};
        p = end;
    }
    return n;
}

static long count_pair(const pair *v, size_t n, pair p)
{
    long k = 0;
    for (size_t i = 0; i < n; i++)
        k += v[i].a == p.a && v[i].b == p.b;
    return k;
}

static const char *times_word(long k, char *buf, size_t len)
{
    static const char *const words[] = {"never", "once", "twice"};
    if (k >= 0 && k < 3)
        return words[k];
    cli_textf(buf, len, "%ld times", k);
    return buf;
}

/* Every message goes where the task says: the sends the probe saw are, as
 * a multiset, s->route. */
void ex_check_route(const ex_step *s, const probe_data *pd, char *why, size_t len)
{
    static pair want[MAX_PAIRS], got[MAX_PAIRS];
    size_t nw = parse_pairs(s->route, want, MAX_PAIRS), ng = 0;
    for (size_t i = 0; i < pd->nsends && ng < MAX_PAIRS; i++)
        got[ng++] = (pair){pd->sends[i].rank, pd->sends[i].peer};
    for (size_t i = 0; i < ng; i++)
        if (count_pair(want, nw, got[i]) == 0) {
            cli_textf(why, len, "rank %ld sends to rank %ld: no message of this exercise "
                      "goes from %ld to %ld", got[i].a, got[i].b, got[i].a, got[i].b);
            return;
        }
    for (size_t i = 0; i < nw; i++) {
        long w = count_pair(want, nw, want[i]), g = count_pair(got, ng, want[i]);
        if (w != g) {
            char a[32], b[32];
            cli_textf(why, len, "rank %ld sends to rank %ld %s; the task asks for %s",
                      want[i].a, want[i].b, times_word(g, a, sizeof a),
                      times_word(w, b, sizeof b));
            return;
        }
    }
}

/* How many unused entries of v have (rank, seed), and need arrival when
 * arrived is set; marks up to `take` of them used. */
static long take_held(probe_held *v, size_t n, long rank, long seed, bool arrived, long take)
{
    long k = 0;
    for (size_t i = 0; i < n && k < take; i++)
        if (!v[i].used && v[i].rank == rank && v[i].seed == seed && (!arrived || v[i].arrived))
            v[i].used = true, k++;
    return k;
}

static void unuse(probe_held *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        v[i].used = false;
}

static void why_holds(long rank, long seed, long nranks, bool arrived, char *why, size_t len)
{
    if (arrived && seed < nranks && seed != rank)
        cli_textf(why, len, "rank %ld does not end with the data of rank %ld received into a "
                  "buffer it keeps: no buffer of it holds, as its receives left it, what rank "
                  "%ld filled with cl_fill(c, buf, a->bytes, %ld)", rank, seed, seed, seed);
    else
        cli_textf(why, len, "rank %ld does not end with the data cl_fill(..., %ld) in a buffer "
                  "of its own%s", rank, seed, arrived ? ", as its receives left it" : "");
}

/* Each rank ends with the data the task says (s->holds, "R<P"): a pair
 * listed w times needs w blocks of that rank holding that data, each
 * arrived through its receives when P is another rank. */
void ex_check_holds(const ex_step *s, probe_data *pd, char *why, size_t len)
{
    static pair want[MAX_PAIRS];
    size_t nw = parse_pairs(s->holds, want, MAX_PAIRS);
    for (size_t i = 0; i < nw && !why[0]; i++) {
        bool arrived = want[i].a != want[i].b;
        long w = count_pair(want, nw, want[i]);
        long g = take_held(pd->holds, pd->nholds, want[i].a, want[i].b, arrived, w);
        unuse(pd->holds, pd->nholds);
        if (g == 0)
            why_holds(want[i].a, want[i].b, pd->nranks, arrived, why, len);
        else if (g < w)
            cli_textf(why, len, "rank %ld ends with the data of rank %ld in %ld of its "
                      "buffers; the task asks for %ld", want[i].a, want[i].b, g, w);
    }
}

/* Each rank ends with the sums the task says (s->sums, "R<P+Q ..."): the
 * inputs of ranks P, Q, ... sum to S = (P + 1) + (Q + 1) + ... */
void ex_check_sums(const ex_step *s, probe_data *pd, char *why, size_t len)
{
    const char *p = s->sums;
    char *end;
    for (;;) {
        long r = strtol(p, &end, 10), sum = 0, q[64];
        int n = 0;
        if (end == p)
            return;
        do {
            long v = strtol(end + 1, &end, 10);
            sum += v + 1;
            if (n < 64)
                q[n++] = v;
        } while (*end == '+');
        bool found = take_held(pd->sums, pd->nsums, r, sum, false, 1) == 1;
        unuse(pd->sums, pd->nsums);
        if (!found) {
            char ranks[512] = "";
            int used = 0;
            for (int i = 0; i < n; i++)
                cli_appendf(ranks, sizeof ranks, &used, "%s%ld",
                            i == 0 ? "" : i == n - 1 ? " and " : ", ", q[i]);
            cli_textf(why, len, "rank %ld does not end with the sum over rank%s %s: none of "
                      "its buffers holds, element by element, the sum of their inputs "
                      "((r + 1)(i %% 7 + 1) on rank r)", r, n == 1 ? "" : "s", ranks);
            return;
        }
        p = end;
    }
}

/* Whether the probe saw every call of s->uses and none of s->avoids. */
void ex_check_calls(const ex_step *s, const probe_data *pd, char *why, size_t len)
{
    for (int pass = 0; pass < 2; pass++) {
        const char *list = pass ? s->avoids : s->uses;
        char buf[256];
        cli_textf(buf, sizeof buf, "%s", list ? list : "");
        char *save, *name;
        for (name = strtok_r(buf, ", ", &save); name; name = strtok_r(NULL, ", ", &save)) {
            if (ex_probe_any_called(pd, name) == (pass == 1)) {
                cli_textf(why, len, pass ? "calls cl_%s, which this exercise asks you not to use"
                                     : "never calls cl_%s", name);
                return;
            }
        }
    }
}

/* ---- against the reference solution ---- */

/* The sends of rank among v, in the order it posted them, into out. */
static size_t sends_of(const probe_data *d, long rank, const probe_msg **out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < d->nsends && n < max; i++)
        if (d->sends[i].rank == rank)
            out[n++] = &d->sends[i];
    return n;
}

static bool same_msg(const probe_msg *a, const probe_msg *b)
{
    return a->peer == b->peer && a->bytes == b->bytes && a->hash == b->hash;
}

/* Rank's sends in mine against ref's; says why (with the fault) when
 * they differ. */
static void compare_sends(long rank, const probe_data *mine, const probe_data *ref,
                          bool any_order, char *why, size_t len, ex_fault *fault)
{
    enum { MAX_SENDS = 1 << 14 };
    static const probe_msg *a[MAX_SENDS], *b[MAX_SENDS];
    size_t na = sends_of(mine, rank, a, MAX_SENDS), nb = sends_of(ref, rank, b, MAX_SENDS);
    if (na != nb) {
        cli_textf(why, len, "rank %ld sends %zu message%s; the task's schedule has %zu", rank,
                  na, na == 1 ? "" : "s", nb);
        *fault = FAULT_MESSAGES;
        return;
    }
    if (any_order) { /* match each of the reference's to one of mine */
        static bool used[MAX_SENDS];
        memset(used, 0, na * sizeof *used);
        for (size_t j = 0; j < nb; j++) {
            size_t i = 0, route = na;
            while (i < na && (used[i] || !same_msg(a[i], b[j]))) {
                if (!used[i] && a[i]->peer == b[j]->peer && a[i]->bytes == b[j]->bytes)
                    route = i;
                i++;
            }
            if (i < na) {
                used[i] = true;
                continue;
            }
            if (route < na)
                cli_textf(why, len, "rank %ld's message to rank %ld (%" PRIu64 " bytes) "
                          "does not carry the data the task asks for", rank, b[j]->peer,
                          b[j]->bytes);
            else
                cli_textf(why, len, "rank %ld sends no message of %" PRIu64 " bytes to rank "
                          "%ld; the task's schedule has one", rank, b[j]->bytes, b[j]->peer);
            *fault = route < na ? FAULT_DATA : FAULT_ROUTE;
            return;
        }
        return;
    }
    for (size_t i = 0; i < na; i++) {
        if (a[i]->peer != b[i]->peer || a[i]->bytes != b[i]->bytes) {
            cli_textf(why, len, "rank %ld's message %zu goes to rank %ld with %" PRIu64
                      " bytes; in the task's schedule it goes to rank %ld with %" PRIu64
                      " bytes", rank, i + 1, a[i]->peer, a[i]->bytes, b[i]->peer, b[i]->bytes);
            *fault = FAULT_ROUTE;
            return;
        }
        if (a[i]->hash != b[i]->hash) {
            cli_textf(why, len, "rank %ld's message %zu (to rank %ld, %" PRIu64 " bytes) does "
                      "not carry the data the task asks for", rank, i + 1, a[i]->peer,
                      a[i]->bytes);
            *fault = FAULT_DATA;
            return;
        }
    }
}

/* Whether every range of the "OFF+LEN,..." list want lies inside one of
 * have's (both merged and in order, as the probe writes them). */
static bool parts_cover(const char *have, const char *want)
{
    for (const char *w = want; *w && *w != '-';) {
        unsigned long long wo, wl;
        if (sscanf(w, "%llu+%llu", &wo, &wl) != 2)
            return false;
        bool in = false;
        for (const char *h = have; !in && *h && *h != '-';) {
            unsigned long long ho, hl;
            if (sscanf(h, "%llu+%llu", &ho, &hl) != 2)
                break;
            in = ho <= wo && wo + wl <= ho + hl;
            h = strchr(h, ',') ? strchr(h, ',') + 1 : "";
        }
        if (!in)
            return false;
        w = strchr(w, ',') ? strchr(w, ',') + 1 : "";
    }
    return true;
}

/* Every block a rank of ref ends with that received something, a rank
 * of mine ends with too: the same bytes, received where ref's were. */
void ex_compare_blocks(const probe_data *mine, const probe_data *ref, char *why, size_t len)
{
    for (size_t i = 0; i < ref->nblocks && !why[0]; i++) {
        const probe_block_seen *b = &ref->blocks[i];
        if (strcmp(b->parts, "-") == 0)
            continue;
        bool same = false, found = false;
        for (size_t j = 0; j < mine->nblocks && !found; j++) {
            const probe_block_seen *m = &mine->blocks[j];
            if (m->rank != b->rank || m->bytes != b->bytes || m->hash != b->hash)
                continue;
            same = true;
            found = parts_cover(m->parts, b->parts);
        }
        if (!same)
            cli_textf(why, len, "rank %ld does not end with a buffer of %" PRIu64 " bytes "
                      "holding what the task asks for", b->rank, b->bytes);
        else if (!found)
            cli_textf(why, len, "rank %ld ends with the right %" PRIu64 " bytes, but not all "
                      "of them arrived there through its receives: a part was written by the "
                      "rank itself", b->rank, b->bytes);
    }
}

/* The student's run (mine) against the reference's, rank by rank. */
void ex_compare_reference(const ex_step *s, probe_data *mine, probe_data *ref, char *why,
                          size_t len, ex_fault *fault)
{
    for (long r = 0; r < mine->nranks && !why[0]; r++) {
        if (!ref->done[r])
            continue; /* the reference reported nothing of this rank: nothing to match */
        if (!mine->done[r]) {
            cli_textf(why, len, "rank %ld left no report of its data (it returned early, or "
                      "ran out of memory)", r);
            *fault = FAULT_DATA;
        } else {
            compare_sends(r, mine, ref, s->any_order, why, len, fault);
        }
    }
    /* What arrived from other ranks and stayed: a rank's own data, and the
     * partial sums it kept on the way, are its business (a buffer on its
     * stack holds them as well as one from cl_alloc). */
    for (size_t i = 0; i < ref->nholds && !why[0]; i++) {
        const probe_held *h = &ref->holds[i];
        if (!h->arrived)
            continue;
        long want = 0;
        for (size_t j = 0; j < ref->nholds; j++)
            want += ref->holds[j].rank == h->rank && ref->holds[j].seed == h->seed &&
                    ref->holds[j].arrived;
        long got = take_held(mine->holds, mine->nholds, h->rank, h->seed, true, want);
        unuse(mine->holds, mine->nholds);
        if (got < want) {
            if (got == 0)
                why_holds(h->rank, h->seed, mine->nranks, true, why, len);
            else
                cli_textf(why, len, "rank %ld ends with the data cl_fill(..., %ld) in %ld of "
                          "its buffers; the task asks for %ld", h->rank, h->seed, got, want);
            *fault = FAULT_DATA;
        }
    }
    /* The reduction's result: the largest sum each rank of ref ends with. */
    for (long r = 0; r < ref->nranks && !why[0]; r++) {
        long total = 0;
        for (size_t i = 0; i < ref->nsums; i++)
            if (ref->sums[i].rank == r && ref->sums[i].seed > total)
                total = ref->sums[i].seed;
        if (total && take_held(mine->sums, mine->nsums, r, total, false, 1) == 0) {
            cli_textf(why, len, "rank %ld does not end with the sum the task asks for: none of "
                      "its buffers holds, element by element, the sum of the inputs "
                      "((r + 1)(i %% 7 + 1) on rank r) it should", r);
            *fault = FAULT_DATA;
        }
        unuse(mine->sums, mine->nsums);
    }
}
