/*
 * commlab_probe.h - what `commlab exercise check` compiles into a student's
 * pattern so that the grader, not the student's own cl_verify, sees what
 * each rank sent, what arrived, and the data each rank ends with.  Not part
 * of the pattern API: a pattern never includes it.
 *
 * When the environment names a probe file (COMMLAB_PROBE), cli/student.c
 * compiles the student's file with this header forced in after commlab.h.
 * It renames the student's `pattern` to probe_student and wraps the calls
 * a pattern makes (cl_alloc, cl_group, the sends, receives, waits and
 * tests).  In the first timed iteration of a run that moves real bytes it
 * records, per rank, in the order they happen:
 *
 *     send R D N H     a send of rank R goes to world rank D with N bytes
 *                      whose hash is H (the bytes when posted); a rank's
 *                      sends are listed in the order it posted them
 *
 * and when the pattern returns, for every rank:
 *
 *     call R NAME      the rank called cl_NAME (once per name; the sends,
 *                      receives, waits, tests, group, barrier, reduce_local)
 *     leak R N         the rank returned with N requests it never completed
 *     holds R P HOW    a block of rank R from cl_alloc holds cl_fill's
 *                      stream for seed P; HOW is "arrived" when every byte
 *                      of it came through this iteration's completed
 *                      receives into that block and is unchanged since,
 *                      else "local" (the rank wrote it itself)
 *     block R N H C    a block of N bytes whose hash is H, and the parts
 *                      of it that arrived as "arrived" above: C is a list
 *                      OFF+LEN,... of byte ranges ("-" for none)
 *     sum R S          a block, read as doubles, holds S (i % 7 + 1) in
 *                      element i for a whole number S >= 1: the sum of the
 *                      chapter 04 reductions' inputs ((r + 1)(i % 7 + 1) on
 *                      rank r) over ranks whose r + 1 add up to S
 *     done R           the report of rank R is complete
 *
 * Ranks are world ranks, also for messages sent through a communicator
 * from cl_group.  The seeds looked for are 0 .. size - 1 and those listed
 * in COMMLAB_PROBE_SEEDS (comma-separated; an exercise whose data has
 * another seed names it).  The hash is the same function of the bytes on
 * every backend, so the grader compares a student's run, on any backend,
 * with the reference solution's on the simulator, message for message.
 *
 * The file is opened for appending and each line is one write(), so the
 * ranks of a measured run (processes) and of a modeled one (coroutines of
 * one process) can all report into it.  Events are kept in memory until
 * the rank's pattern returns, so nothing is written inside the timed
 * region but at its end.
 *
 * State: one probe_state per process, static in the compiled student
 * file (each compiled file gets its own; each measured rank is a process
 * of its own).  One process runs one rank at a time between blocking
 * calls (the simulator's ranks are coroutines of one thread), so no lock
 * is needed; every entry names its rank, and no pointer into an array is
 * kept across a call that may switch ranks.  Out of memory, an entry is
 * dropped: the report then misses it and the check fails, safely.
 */
#ifndef COMMLAB_PROBE_H
#define COMMLAB_PROBE_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commlab.h"

#define PROBE_UNUSED __attribute__((unused))

typedef struct probe_block {
    int rank;     /* world rank that allocated it */
    void *p;      /* the block */
    size_t bytes; /* its length */
} probe_block;

typedef struct probe_comm {
    const cl_comm *c; /* a communicator the pattern used */
    int rank;         /* the world rank it belongs to */
    int *world;       /* world rank of each member; NULL: the world itself */
} probe_comm;

typedef struct probe_pending {
    int rank;          /* world rank that posted it */
    cl_request *req;   /* the request, as cl_isend/cl_irecv set it */
    const void *buf;   /* receive: where the data lands; send: NULL */
} probe_pending;

typedef struct probe_landing {
    int rank;               /* world rank it landed at */
    const unsigned char *p; /* where */
    size_t bytes;           /* how much arrived */
    uint64_t hash;          /* of those bytes at completion */
} probe_landing;

typedef struct probe_line {
    int rank;      /* whose event */
    char text[96]; /* "send ...\n" */
} probe_line;

typedef struct probe_rank {
    int rank;       /* world rank */
    int recording;  /* 1 in the checked iteration */
    unsigned calls; /* bit per name of probe_call_names */
} probe_rank;

#define PROBE_ARRAY(type, name) \
    type *name;                 \
    size_t n##name, cap##name

typedef struct probe_state {
    PROBE_ARRAY(probe_block, blocks);
    PROBE_ARRAY(probe_comm, comms);
    PROBE_ARRAY(probe_pending, pending);
    PROBE_ARRAY(probe_landing, landings);
    PROBE_ARRAY(probe_line, lines);
    PROBE_ARRAY(probe_rank, ranks);
} probe_state;

static probe_state probe_st;

static cl_pattern_fn probe_student;

enum { PROBE_SEND, PROBE_ISEND, PROBE_RECV, PROBE_IRECV, PROBE_WAIT, PROBE_WAITALL,
       PROBE_TEST, PROBE_GROUP, PROBE_BARRIER, PROBE_REDUCE, PROBE_NCALLS };
static const char *const probe_call_names[PROBE_NCALLS] = {
    "send", "isend", "recv", "irecv", "wait", "waitall", "test", "group", "barrier",
    "reduce_local",
};

/* Room for one more entry in *v (n used of *cap, entries of size each);
 * 0, or -1 out of memory with nothing changed. */
static int probe_grow(void **v, size_t n, size_t *cap, size_t size)
{
    if (n < *cap)
        return 0;
    size_t more = *cap ? 2 * *cap : 16;
    void *p = realloc(*v, more * size);
    if (!p)
        return -1;
    *v = p;
    *cap = more;
    return 0;
}

#define PROBE_PUSH(name, ...)                                                             \
    (probe_grow((void **)&probe_st.name, probe_st.n##name, &probe_st.cap##name,          \
                sizeof *probe_st.name)                                                    \
         ? (void)0                                                                        \
         : (void)(probe_st.name[probe_st.n##name++] = (__VA_ARGS__)))

/* 64-bit FNV-1a over the words and the tail of a buffer, with its length. */
static uint64_t probe_hash(const void *buf, size_t bytes)
{
    const unsigned char *p = buf;
    uint64_t h = 0xcbf29ce484222325ULL ^ bytes;
    size_t i = 0;
    for (; p && i + 8 <= bytes; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0x100000001b3ULL;
    }
    for (; p && i < bytes; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

static probe_rank *probe_rank_at(int rank)
{
    for (size_t i = 0; i < probe_st.nranks; i++)
        if (probe_st.ranks[i].rank == rank)
            return &probe_st.ranks[i];
    PROBE_PUSH(ranks, (probe_rank){rank, 0, 0});
    return probe_st.nranks && probe_st.ranks[probe_st.nranks - 1].rank == rank
               ? &probe_st.ranks[probe_st.nranks - 1] : NULL;
}

static const probe_comm *probe_comm_of(const cl_comm *c)
{
    for (size_t i = probe_st.ncomms; i-- > 0;)
        if (probe_st.comms[i].c == c)
            return &probe_st.comms[i];
    return NULL;
}

/* The world rank a communicator belongs to; -1 if never seen. */
static int probe_rank_of(const cl_comm *c)
{
    const probe_comm *pc = probe_comm_of(c);
    return pc ? pc->rank : -1;
}

/* The world rank of member `member` of c; -1 when unknown. */
static int probe_world_of(const cl_comm *c, int member)
{
    const probe_comm *pc = probe_comm_of(c);
    if (!pc || member < 0 || member >= cl_size(c))
        return -1;
    return pc->world ? pc->world[member] : member;
}

/* Whether the rank that owns c records this iteration; sets *rank. */
static int probe_recording(const cl_comm *c, int *rank)
{
    *rank = probe_rank_of(c);
    probe_rank *r = *rank >= 0 ? probe_rank_at(*rank) : NULL;
    return r && r->recording;
}

static void probe_called(const cl_comm *c, int call)
{
    int rank;
    if (probe_recording(c, &rank))
        probe_rank_at(rank)->calls |= 1u << call;
}

static void probe_line_add(int rank, const char *text)
{
    probe_line l = {rank, ""};
    snprintf(l.text, sizeof l.text, "%s", text);
    PROBE_PUSH(lines, l);
}

/* Forgets what a rank noted in its previous iteration. */
static void probe_forget(int rank)
{
#define PROBE_DROP(name)                                  \
    do {                                                  \
        size_t k = 0;                                     \
        for (size_t i = 0; i < probe_st.n##name; i++)     \
            if (probe_st.name[i].rank != rank)            \
                probe_st.name[k++] = probe_st.name[i];    \
        probe_st.n##name = k;                             \
    } while (0)
    PROBE_DROP(blocks);
    PROBE_DROP(pending);
    PROBE_DROP(landings);
    PROBE_DROP(lines);
    for (size_t i = 0; i < probe_st.ncomms; i++)
        if (probe_st.comms[i].rank == rank)
            free(probe_st.comms[i].world);
    PROBE_DROP(comms);
#undef PROBE_DROP
}

static PROBE_UNUSED void *probe_alloc(cl_comm *c, size_t bytes)
{
    void *p = cl_alloc(c, bytes);
    int rank = probe_rank_of(c);
    if (p && rank >= 0)
        PROBE_PUSH(blocks, (probe_block){rank, p, bytes});
    return p;
}

static PROBE_UNUSED int probe_group(cl_comm *c, const int *ranks, int n, cl_comm **out)
{
    probe_called(c, PROBE_GROUP);
    int rank = probe_rank_of(c);
    int *world = n > 0 ? malloc((size_t)n * sizeof *world) : NULL;
    for (int i = 0; world && i < n; i++)
        world[i] = probe_world_of(c, ranks[i]);
    int err = cl_group(c, ranks, n, out);
    if (!err && *out && world &&
        !probe_grow((void **)&probe_st.comms, probe_st.ncomms, &probe_st.capcomms,
                    sizeof *probe_st.comms)) {
        probe_st.comms[probe_st.ncomms++] = (probe_comm){*out, rank, world};
        world = NULL;
    }
    free(world);
    return err;
}

static void probe_sent(cl_comm *c, const void *buf, size_t bytes, int dst)
{
    int rank;
    if (!probe_recording(c, &rank))
        return;
    char text[96];
    snprintf(text, sizeof text, "send %d %d %zu %016llx\n", rank, probe_world_of(c, dst),
             bytes, (unsigned long long)probe_hash(buf, bytes));
    probe_line_add(rank, text);
}

/* A receive of rank's completed into buf with what st says (cl_recv
 * returned, or a wait or test reported it done): where the data landed,
 * and its hash then, for the blocks' report. */
static void probe_landed(int rank, const void *buf, const cl_status *st)
{
    PROBE_PUSH(landings, (probe_landing){rank, buf, st->bytes, probe_hash(buf, st->bytes)});
}

static PROBE_UNUSED int probe_send(cl_comm *c, const void *buf, size_t bytes, int dst, int tag)
{
    probe_called(c, PROBE_SEND);
    probe_sent(c, buf, bytes, dst);
    return cl_send(c, buf, bytes, dst, tag);
}

static PROBE_UNUSED int probe_recv(cl_comm *c, void *buf, size_t bytes, int src, int tag,
                                   cl_status *st)
{
    probe_called(c, PROBE_RECV);
    cl_status mine, *use = st ? st : &mine;
    int err = cl_recv(c, buf, bytes, src, tag, use);
    int rank;
    if (!err && probe_recording(c, &rank))
        probe_landed(rank, buf, use);
    return err;
}

static void probe_posted(cl_comm *c, cl_request *req, const void *buf)
{
    int rank;
    if (req && probe_recording(c, &rank))
        PROBE_PUSH(pending, (probe_pending){rank, req, buf});
}

static PROBE_UNUSED int probe_isend(cl_comm *c, const void *buf, size_t bytes, int dst,
                                    int tag, cl_request **req)
{
    probe_called(c, PROBE_ISEND);
    probe_sent(c, buf, bytes, dst);
    int err = cl_isend(c, buf, bytes, dst, tag, req);
    if (!err)
        probe_posted(c, *req, NULL);
    return err;
}

static PROBE_UNUSED int probe_irecv(cl_comm *c, void *buf, size_t bytes, int src, int tag,
                                    cl_request **req)
{
    probe_called(c, PROBE_IRECV);
    int err = cl_irecv(c, buf, bytes, src, tag, req);
    if (!err)
        probe_posted(c, *req, buf);
    return err;
}

/* The request req (of the rank that owns c) completed with st: a
 * receive's data landed.  Unknown requests (posted outside the checked
 * iteration) are ignored. */
static void probe_completed(const cl_comm *c, const cl_request *req, const cl_status *st)
{
    int rank = probe_rank_of(c);
    for (size_t i = 0; req && i < probe_st.npending; i++) {
        probe_pending *p = &probe_st.pending[i];
        if (p->req != req || p->rank != rank)
            continue;
        probe_pending done = *p;
        probe_st.pending[i] = probe_st.pending[--probe_st.npending];
        if (done.buf)
            probe_landed(rank, done.buf, st);
        return;
    }
}

static PROBE_UNUSED int probe_wait(cl_comm *c, cl_request **req, cl_status *st)
{
    probe_called(c, PROBE_WAIT);
    cl_request *r = req ? *req : NULL;
    cl_status mine, *use = st ? st : &mine;
    int err = cl_wait(c, req, use);
    if (!err)
        probe_completed(c, r, use);
    return err;
}

static PROBE_UNUSED int probe_waitall(cl_comm *c, int n, cl_request **reqs, cl_status *sts)
{
    probe_called(c, PROBE_WAITALL);
    cl_request **saved = n > 0 && reqs ? malloc((size_t)n * sizeof *saved) : NULL;
    cl_status *mine = n > 0 && !sts ? calloc((size_t)n, sizeof *mine) : NULL;
    cl_status *use = sts ? sts : mine;
    if (saved)
        memcpy(saved, reqs, (size_t)n * sizeof *saved);
    int err = cl_waitall(c, n, reqs, use);
    for (int i = 0; !err && saved && use && i < n; i++)
        probe_completed(c, saved[i], &use[i]);
    free(saved);
    free(mine);
    return err;
}

static PROBE_UNUSED int probe_test(cl_comm *c, cl_request **req, bool *done, cl_status *st)
{
    probe_called(c, PROBE_TEST);
    cl_request *r = req ? *req : NULL;
    cl_status mine, *use = st ? st : &mine;
    int err = cl_test(c, req, done, use);
    if (!err && done && *done)
        probe_completed(c, r, use);
    return err;
}

static PROBE_UNUSED int probe_barrier(cl_comm *c)
{
    probe_called(c, PROBE_BARRIER);
    return cl_barrier(c);
}

static PROBE_UNUSED int probe_reduce_local(cl_comm *c, void *dst, const void *src,
                                            size_t count, cl_dtype t, cl_op op)
{
    probe_called(c, PROBE_REDUCE);
    return cl_reduce_local(c, dst, src, count, t, op);
}

/* Whether the block holds cl_fill's stream for seed: the first word is
 * compared first, the whole block only when it agrees. */
static int probe_holds(const cl_comm *c, const probe_block *b, unsigned long long seed,
                       unsigned char *scratch)
{
    size_t head = b->bytes < 8 ? b->bytes : 8;
    cl_fill(c, scratch, head, seed);
    if (memcmp(scratch, b->p, head) != 0)
        return 0;
    cl_fill(c, scratch, b->bytes, seed);
    return memcmp(scratch, b->p, b->bytes) == 0;
}

typedef struct probe_span {
    size_t from, to; /* byte offsets in a block, to excluded */
} probe_span;

static int probe_span_cmp(const void *x, const void *y)
{
    const probe_span *a = x, *b = y;
    return a->from < b->from ? -1 : a->from > b->from;
}

/* The parts of b that came through completed receives of this iteration
 * into it and still hold what arrived, as byte ranges from its start,
 * merged and in order, into text ("-" for none); the bytes covered.  Each
 * landing inside b is hashed once. */
static size_t probe_arrived(const probe_block *b, char *text, size_t len)
{
    const unsigned char *lo = b->p, *hi = lo + b->bytes;
    probe_span *spans = malloc((probe_st.nlandings ? probe_st.nlandings : 1) * sizeof *spans);
    size_t n = 0, covered = 0, used = 0;
    for (size_t i = 0; spans && i < probe_st.nlandings; i++) {
        const probe_landing *l = &probe_st.landings[i];
        if (l->rank == b->rank && l->bytes && l->p >= lo && l->p + l->bytes <= hi &&
            probe_hash(l->p, l->bytes) == l->hash)
            spans[n++] = (probe_span){(size_t)(l->p - lo), (size_t)(l->p - lo) + l->bytes};
    }
    if (n)
        qsort(spans, n, sizeof *spans, probe_span_cmp);
    text[0] = 0;
    for (size_t i = 0; i < n;) {
        probe_span m = spans[i++];
        while (i < n && spans[i].from <= m.to) /* overlapping or adjacent: one range */
            m.to = spans[i].to > m.to ? spans[i].to : m.to, i++;
        covered += m.to - m.from;
        if (used + 48 < len)
            used += (size_t)snprintf(text + used, len - used, "%s%zu+%zu", used ? "," : "",
                                     m.from, m.to - m.from);
    }
    free(spans);
    if (!used)
        snprintf(text, len, "-");
    return covered;
}

/* S when the block, read as doubles, holds S (i % 7 + 1) in element i
 * for a whole number S >= 1; else 0. */
static double probe_sum(const probe_block *b)
{
    size_t n = b->bytes / sizeof(double);
    const double *x = b->p;
    double s = n ? x[0] : 0;
    if (!(s >= 1 && s <= 1e15 && s == (double)(long long)s))
        return 0;
    for (size_t i = 1; i < n; i++)
        if (x[i] != s * (double)(i % 7 + 1))
            return 0;
    return s;
}

static int probe_write(int fd, const char *line)
{
    size_t len = strlen(line);
    return write(fd, line, len) == (ssize_t)len ? 0 : -1;
}

/* The seeds a block may hold: the ranks', then COMMLAB_PROBE_SEEDS. */
static int probe_seed(int world_size, int i, unsigned long long *seed)
{
    if (i < world_size) {
        *seed = (unsigned long long)i;
        return 1;
    }
    const char *p = getenv("COMMLAB_PROBE_SEEDS");
    for (int k = world_size; p && *p; k++) {
        char *end;
        unsigned long long v = strtoull(p, &end, 10);
        if (end == p)
            return 0;
        if (k == i) {
            *seed = v;
            return 1;
        }
        p = *end == ',' ? end + 1 : end;
    }
    return 0;
}

static void probe_report(cl_comm *world, int rank)
{
    const char *path = getenv("COMMLAB_PROBE");
    if (!path || !*path)
        return;
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0600); /* in the grader's own folder */
    if (fd < 0)
        return; /* the grader then finds no "done" line and says so */
    char line[128];
    int bad = 0;
    for (size_t i = 0; !bad && i < probe_st.nlines; i++)
        if (probe_st.lines[i].rank == rank)
            bad = probe_write(fd, probe_st.lines[i].text);
    probe_rank *r = probe_rank_at(rank);
    for (int k = 0; !bad && r && k < PROBE_NCALLS; k++)
        if (r->calls & (1u << k)) {
            snprintf(line, sizeof line, "call %d %s\n", rank, probe_call_names[k]);
            bad = probe_write(fd, line);
        }
    size_t leaked = 0;
    for (size_t i = 0; i < probe_st.npending; i++)
        leaked += probe_st.pending[i].rank == rank;
    if (!bad && leaked) {
        snprintf(line, sizeof line, "leak %d %zu\n", rank, leaked);
        bad = probe_write(fd, line);
    }
    for (size_t i = 0; !bad && i < probe_st.nblocks; i++) {
        const probe_block *b = &probe_st.blocks[i];
        if (b->rank != rank || !b->bytes)
            continue;
        char parts[1024];
        int arrived = probe_arrived(b, parts, sizeof parts) == b->bytes;
        char whole[1200];
        snprintf(whole, sizeof whole, "block %d %zu %016llx %s\n", rank, b->bytes,
                 (unsigned long long)probe_hash(b->p, b->bytes), parts);
        bad = probe_write(fd, whole);
        unsigned char *scratch = malloc(b->bytes);
        unsigned long long seed;
        for (int k = 0; !bad && scratch && probe_seed(cl_size(world), k, &seed); k++) {
            if (!probe_holds(world, b, seed, scratch))
                continue;
            snprintf(line, sizeof line, "holds %d %llu %s\n", rank, seed,
                     arrived ? "arrived" : "local");
            bad = probe_write(fd, line);
        }
        free(scratch);
        double sum = probe_sum(b);
        if (!bad && sum > 0) {
            snprintf(line, sizeof line, "sum %d %.0f\n", rank, sum);
            bad = probe_write(fd, line);
        }
    }
    if (!bad) {
        snprintf(line, sizeof line, "done %d\n", rank);
        probe_write(fd, line);
    }
    close(fd);
}

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c);
    probe_forget(rank);
    PROBE_PUSH(comms, (probe_comm){c, rank, NULL});
    probe_rank *r = probe_rank_at(rank);
    int checked = a->iteration == 0 && cl_payload(c) && cl_checking(c);
    if (r)
        *r = (probe_rank){rank, checked, 0};
    int err = probe_student(c, a);
    if (!err && checked)
        probe_report(c, rank);
    if ((r = probe_rank_at(rank)) != NULL)
        r->recording = 0;
    return err;
}

#define pattern probe_student
#define cl_alloc probe_alloc
#define cl_group probe_group
#define cl_send probe_send
#define cl_recv probe_recv
#define cl_isend probe_isend
#define cl_irecv probe_irecv
#define cl_wait probe_wait
#define cl_waitall probe_waitall
#define cl_test probe_test
#define cl_barrier probe_barrier
#define cl_reduce_local probe_reduce_local

#endif /* COMMLAB_PROBE_H */
