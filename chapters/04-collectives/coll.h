/*
 * coll.h - what the chapter's collectives share: how a buffer is cut into
 * blocks, the data every rank starts from and what it must end with, and
 * the fold that lets the power-of-two algorithms (recursive doubling and
 * halving) run on any number of ranks.
 *
 * Blocks.  A buffer of `total` units (bytes, or elements for a reduction)
 * is cut into k blocks; block j starts at coll_first(total, k, j) and holds
 * coll_len(total, k, j) units.  The remainder of total / k goes one unit
 * each to the first blocks, so sizes that do not divide by k lose nothing
 * and no block differs from another by more than one unit.
 *
 * Data.  The collectives that only move data (broadcast, gather, scatter,
 * all-gather, all-to-all) fill and check bytes with cl_fill/cl_verify and
 * a seed naming the block's origin, so any byte count works.  The
 * reductions work on elements of the run's type with its operator
 * (--dtype, --op: f64 and sum by default) and combine them with
 * cl_reduce_local.  Their element count is bytes / the element's size: the
 * last bytes of a size that is not a multiple of it are not reduced.  The
 * inputs (coll_data.c) are chosen so that the result is exact in the type
 * whatever the order of combining, so one expected value checks every
 * algorithm: for f64 sum, element i of rank r is (r + 1)(i % 7 + 1), a
 * small integer, and the sum over K ranks is K (K + 1) / 2 (i % 7 + 1).
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
/* x holds every rank's block of a gather (block s as rank s filled it);
 * cl_verify's error for the first block that does not. */
int coll_gathered_verify(cl_comm *c, const unsigned char *x, size_t total);

/* ---- reductions ---- */

/* What a run reduces: its type and operator (cl_args), and the size of
 * an element. */
typedef struct coll_red {
    cl_dtype t;
    cl_op op;
    size_t size; /* bytes of an element */
} coll_red;

static inline coll_red coll_red_of(const cl_args *a)
{
    return (coll_red){a->dtype, a->op, cl_dtype_size(a->dtype)};
}

/* The elements a reduction of `bytes` works on. */
static inline size_t coll_count(const coll_red *r, size_t bytes)
{
    return bytes / r->size;
}
/* Element i of x, which may be NULL (size-only runs). */
static inline void *coll_at(const coll_red *r, void *x, size_t i)
{
    return x ? (char *)x + i * r->size : NULL;
}
/* x[i] = x[i] op y[i] for i < count (cl_reduce_local). */
static inline int coll_reduce(cl_comm *c, const coll_red *r, void *x, const void *y, size_t count)
{
    return cl_reduce_local(c, x, y, count, r->t, r->op);
}
/* The end of a reduction over n ranks (cl_reduce_finish: avg divides). */
static inline int coll_finish(cl_comm *c, const coll_red *r, void *x, size_t count, int n)
{
    return cl_reduce_finish(c, x, count, r->t, r->op, n);
}
/* Rank `rank`'s input to a reduction over k ranks: count elements
 * (coll_data.c).  Writes only while cl_checking. */
void coll_reduce_init(const cl_comm *c, const coll_red *r, void *x, size_t count);
/* Elements [first, first + count) of the whole buffer, at x, hold the
 * reduction over every rank of c of their inputs; CL_ECHECK through
 * cl_fail naming `what` if not. */
int coll_reduce_verify(cl_comm *c, const coll_red *r, const void *x, size_t first,
                       size_t count, const char *what);

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
/* The fold's first step for a reduction of x's count elements: a rank
 * folded away sends them to its buddy (tag 0); the even rank of a pair
 * receives them into tmp and reduces them into x; other ranks do
 * nothing. */
int coll_fold_in(cl_comm *c, const coll_red *r, const coll_fold *f, void *x, void *tmp,
                 size_t count);
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

/* Recursive halving: x holds count elements; after log2(p) steps of
 * exchanging half of what is left with v ^ mask (mask = p/2, ..., 1) and
 * reducing the half kept, this rank's blocks of x hold the reduction over
 * every virtual rank (avg not yet divided).  tmp holds at least count
 * elements. */
int coll_halving(cl_comm *c, const coll_red *r, const coll_fold *f, void *x, void *tmp,
                 size_t count, int tag);
/* Recursive doubling all-gather: x holds total units of unit bytes, this
 * rank's blocks filled; after log2(p) steps of exchanging everything
 * held with v ^ mask (mask = 1, ..., p/2), all of x is. */
int coll_doubling(cl_comm *c, const coll_fold *f, void *x, size_t total, size_t unit, int tag);

/* The ring all-reduce of count elements on communicator c
 * (allreduce_ring.c), for the algorithms that run it inside a group: the
 * summed blocks are finished over n ranks (avg: divided by n) before they
 * go round; n 0: not finished. */
int coll_ring_allreduce(cl_comm *c, const coll_red *r, void *x, size_t count, int n);

#endif
