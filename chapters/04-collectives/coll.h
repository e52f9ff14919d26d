/*
 * coll.h - what the chapter's collectives share: how a buffer is cut into
 * blocks, the data every rank starts from and what it must end with, and
 * the fold that lets the power-of-two algorithms (recursive doubling and
 * halving) run on any number of ranks.
 *
 * Blocks.  A buffer of `total` units (bytes, or doubles for a reduction)
 * is cut into k blocks; block j starts at coll_first(total, k, j) and holds
 * coll_len(total, k, j) units.  The remainder of total / k goes one unit
 * each to the first blocks, so sizes that do not divide by k lose nothing
 * and no block differs from another by more than one unit.
 *
 * Data.  The collectives that only move data (broadcast, gather, scatter,
 * all-gather, all-to-all) fill and check bytes with cl_fill/cl_verify and
 * a seed naming the block's origin, so any byte count works.  The
 * reductions work on doubles: element i of rank r is (r + 1) (i % 7 + 1),
 * a small integer, so every partial sum is exact in whatever order it is
 * added, and the sum over K ranks is K (K + 1) / 2 (i % 7 + 1).  Their
 * element count is bytes / 8: the last bytes % 8 bytes of a size that is
 * not a multiple of 8 are not part of a reduction.
 *
 * In size-only runs (`--no-payload`) every buffer is NULL: the helpers do
 * nothing with NULL and the patterns still send the same byte counts.
 */
#ifndef COLL_H
#define COLL_H

#include <stddef.h>

#include "commlab.h"

/* ---- blocks (cannot fail) ---- */

/* Inline: a ring step asks for two blocks' bounds per message, and one
 * division then serves all four answers. */
static inline size_t coll_first(size_t total, int k, int j)
{
    size_t base = total / (size_t)k, extra = total % (size_t)k, uj = (size_t)j;
    return uj * base + (uj < extra ? uj : extra);
}

static inline size_t coll_len(size_t total, int k, int j)
{
    return total / (size_t)k + ((size_t)j < total % (size_t)k ? 1 : 0);
}

/* Units from the start of block j to the end of block j + n - 1. */
size_t coll_span(size_t total, int k, int j, int n);

/* ---- data (a NULL buffer, or an iteration that does not check, passes) ---- */

/* The seed of the bytes that start on rank `rank` for block `block`. */
unsigned long long coll_seed(int rank, int block);
/* Rank r's input to a reduction: count doubles as described above. */
void coll_reduce_init(const cl_comm *c, double *x, size_t count);
/* Elements [first, first + count) of x hold the sum over every rank of
 * their inputs; CL_ECHECK through cl_fail naming `what` if not. */
int coll_reduce_verify(cl_comm *c, const double *x, size_t first, size_t count,
                       const char *what);
/* x holds every rank's block of a gather (block s as rank s filled it);
 * cl_verify's error for the first block that does not. */
int coll_gathered_verify(cl_comm *c, const unsigned char *x, size_t total);
/* x[i] += y[i] for i < count; nothing when either is NULL. */
void coll_add(double *x, const double *y, size_t count);
/* The doubles a reduction of `bytes` works on. */
static inline size_t coll_count(size_t bytes)
{
    return bytes / sizeof(double);
}
/* Offset of element i of a double buffer that may be NULL. */
#define COLL_AT(x, i) ((x) ? (x) + (i) : NULL)

/* ---- the fold: any K onto the largest power of two p <= K ----
 *
 * Of the first 2r ranks (r = K - p) each odd rank hands its data to the
 * even rank below it and waits; the remaining p ranks are virtual ranks
 * 0 .. p-1 of the power-of-two algorithm: v < r is real rank 2v (standing
 * for ranks 2v and 2v + 1), v >= r is real rank v + r.  At the end each
 * even rank of a pair hands the result back.  Real ranks stay in order, so
 * the real ranks behind virtual ranks [a, b] are the run coll_real_lo(a)
 * .. coll_real_hi(b) and their blocks are contiguous. */
typedef struct coll_fold {
    int p;     /* the power of two */
    int r;     /* K - p: ranks folded away */
    int v;     /* this rank's virtual rank, or -1 when folded away */
    int buddy; /* the other rank of this rank's pair, or -1 */
} coll_fold;

void coll_fold_init(coll_fold *f, int rank, int size);
/* The fold's first step for a reduction of x's count doubles: a rank
 * folded away sends them to its buddy (tag 0); the even rank of a pair
 * receives them into tmp and adds them to x; other ranks do nothing. */
int coll_fold_in(cl_comm *c, const coll_fold *f, double *x, double *tmp, size_t count);
/* The lowest and highest real rank behind virtual rank v. */
int coll_real_lo(const coll_fold *f, int v);
int coll_real_hi(const coll_fold *f, int v);

/* ---- small steps ---- */

/* *r = an array of n request pointers (cl_array: on the heap, not the
 * rank's small stack, so a linear algorithm keeps one per peer at any
 * rank count); 0 or CL_ENOMEM. */
int coll_requests(cl_comm *c, size_t n, cl_request ***r);

/* Sends sbuf to dst and receives rbuf from src at once (tag), then waits
 * for both; either count may be 0 and either peer -1 for none. */
int coll_sendrecv(cl_comm *c, const void *sbuf, size_t sbytes, int dst, void *rbuf,
                  size_t rbytes, int src, int tag);

/* ---- the power-of-two halves of the fold, for virtual ranks (f->v >= 0) ----
 * Blocks are those of the K real ranks: virtual rank v stands for the
 * blocks of coll_real_lo(v) .. coll_real_hi(v). */

/* Recursive halving: x holds count doubles; after log2(p) steps of
 * exchanging half of what is left with v ^ mask (mask = p/2, ..., 1) and
 * adding the half kept, this rank's blocks of x hold the sum over every
 * virtual rank.  tmp holds at least count doubles. */
int coll_halving(cl_comm *c, const coll_fold *f, double *x, double *tmp, size_t count, int tag);
/* Recursive doubling all-gather: x holds total units of unit bytes, this
 * rank's blocks filled; after log2(p) steps of exchanging everything
 * held with v ^ mask (mask = 1, ..., p/2), all of x is. */
int coll_doubling(cl_comm *c, const coll_fold *f, void *x, size_t total, size_t unit, int tag);

/* The ring all-reduce of count doubles on communicator c (allreduce_ring.c),
 * for the algorithms that run it inside a group. */
int coll_ring_allreduce(cl_comm *c, double *x, size_t count);

#endif
