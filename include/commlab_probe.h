/*
 * commlab_probe.h - what `commlab exercise check` compiles into a student's
 * pattern so that the grader, not the student's own cl_verify, sees the
 * data each rank ends with.  Not part of the pattern API: a pattern never
 * includes it.
 *
 * When the environment names a probe file (COMMLAB_PROBE), cli/student.c
 * compiles the student's file with this header forced in after commlab.h.
 * It renames the student's `pattern` to probe_student and defines the
 * `pattern` commlab calls: it runs the student's function, then, in the
 * first timed iteration of a run that moves real bytes, looks at every
 * block the rank took from cl_alloc and appends one line per block that
 * holds the data of some rank p of the world, cl_fill(c, buf, bytes, p):
 *
 *     holds R P        (world rank R ends with the data of rank P)
 *
 * and one line per block that, read as doubles, holds a sum of the
 * reductions' inputs of chapter 04 (rank r's element i is
 * (r + 1)(i % 7 + 1)): element i is S (i % 7 + 1) for a whole number S >= 1,
 * the sum of (r + 1) over the ranks summed:
 *
 *     sum R S          (world rank R ends with such a sum, S)
 *
 * The file is opened for appending and each line is one write(), so the
 * ranks of a measured run (processes) and of a modeled one (coroutines of
 * one process) can all report into it.  A block is "the data of rank p"
 * when its whole length equals cl_fill's stream for seed p; blocks of
 * another content say nothing.
 *
 * State: the blocks handed out and the rank of every communicator the
 * pattern used, in growable arrays of this object.  One process runs one
 * rank at a time between blocking calls (the simulator's ranks are
 * coroutines of one thread), so no lock is needed; every entry names its
 * rank.  Cost: nothing per message; at the end of the checked iteration a
 * comparison of each block with each rank's stream, stopped at the first
 * word that differs.
 */
#ifndef COMMLAB_PROBE_H
#define COMMLAB_PROBE_H

#include <fcntl.h>
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
} probe_comm;

typedef struct probe_state {
    probe_block *blocks;
    size_t nblocks, capblocks;
    probe_comm *comms;
    size_t ncomms, capcomms;
} probe_state;

static probe_state probe_st;

static cl_pattern_fn probe_student;

/* The world rank a communicator belongs to; -1 if never seen. */
static int probe_rank_of(const cl_comm *c)
{
    for (size_t i = probe_st.ncomms; i-- > 0;)
        if (probe_st.comms[i].c == c)
            return probe_st.comms[i].rank;
    return -1;
}

static void probe_note_comm(const cl_comm *c, int rank)
{
    if (probe_st.ncomms == probe_st.capcomms) {
        size_t cap = probe_st.capcomms ? 2 * probe_st.capcomms : 16;
        probe_comm *more = realloc(probe_st.comms, cap * sizeof *more);
        if (!more)
            return; /* the report then misses this rank's blocks: it fails, safely */
        probe_st.comms = more;
        probe_st.capcomms = cap;
    }
    probe_st.comms[probe_st.ncomms++] = (probe_comm){c, rank};
}

/* Forgets what a rank noted in its previous iteration. */
static void probe_forget(int rank)
{
    size_t k = 0;
    for (size_t i = 0; i < probe_st.nblocks; i++)
        if (probe_st.blocks[i].rank != rank)
            probe_st.blocks[k++] = probe_st.blocks[i];
    probe_st.nblocks = k;
    k = 0;
    for (size_t i = 0; i < probe_st.ncomms; i++)
        if (probe_st.comms[i].rank != rank)
            probe_st.comms[k++] = probe_st.comms[i];
    probe_st.ncomms = k;
}

static PROBE_UNUSED void *probe_alloc(cl_comm *c, size_t bytes)
{
    void *p = cl_alloc(c, bytes);
    int rank = probe_rank_of(c);
    if (!p || rank < 0)
        return p;
    if (probe_st.nblocks == probe_st.capblocks) {
        size_t cap = probe_st.capblocks ? 2 * probe_st.capblocks : 16;
        probe_block *more = realloc(probe_st.blocks, cap * sizeof *more);
        if (!more)
            return p;
        probe_st.blocks = more;
        probe_st.capblocks = cap;
    }
    probe_st.blocks[probe_st.nblocks++] = (probe_block){rank, p, bytes};
    return p;
}

static PROBE_UNUSED int probe_group(cl_comm *c, const int *ranks, int n, cl_comm **out)
{
    int err = cl_group(c, ranks, n, out);
    if (!err && *out)
        probe_note_comm(*out, probe_rank_of(c));
    return err;
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

static void probe_report(cl_comm *world, int rank)
{
    const char *path = getenv("COMMLAB_PROBE");
    if (!path || !*path)
        return;
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0600);
    if (fd < 0)
        return; /* the grader then finds no line and says so */
    for (size_t i = 0; i < probe_st.nblocks; i++) {
        const probe_block *b = &probe_st.blocks[i];
        unsigned char *scratch = b->rank == rank && b->bytes ? malloc(b->bytes) : NULL;
        for (int p = 0; scratch && p < cl_size(world); p++) {
            if (!probe_holds(world, b, (unsigned long long)p, scratch))
                continue;
            char line[64];
            int len = snprintf(line, sizeof line, "holds %d %d\n", rank, p);
            if (write(fd, line, (size_t)len) != len)
                break;
        }
        free(scratch);
        double sum = b->rank == rank ? probe_sum(b) : 0;
        if (sum > 0) {
            char line[64];
            int len = snprintf(line, sizeof line, "sum %d %.0f\n", rank, sum);
            if (write(fd, line, (size_t)len) != len)
                break;
        }
    }
    close(fd);
}

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c);
    probe_forget(rank);
    probe_note_comm(c, rank);
    int err = probe_student(c, a);
    if (!err && a->iteration == 0 && cl_payload(c) && cl_checking(c))
        probe_report(c, rank);
    return err;
}

#define pattern probe_student
#define cl_alloc probe_alloc
#define cl_group probe_group

#endif /* COMMLAB_PROBE_H */
