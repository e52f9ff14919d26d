/*
 * formula.h - the alpha-beta-gamma time of each collective algorithm of
 * chapter 04, for `commlab collectives` to print beside the simulated one.
 *
 * Every formula prices each message alone on its link, alpha + m / B (the
 * Hockney model), and each reduction of m bytes m gamma, gamma the seconds
 * a rank takes to reduce a byte (Thakur, Rabenseifner and Gropp,
 * "Optimization of collective communication operations in MPICH", 2005),
 * with the steps the algorithm's file describes.  Gamma 0 gives the
 * alpha-beta figures.  The reductions are priced for an operator that
 * needs no last pass (every one but avg, whose division adds a pass over
 * what each rank finishes).  So the
 * simulator reproduces it to the nanosecond where no two messages ever
 * share a link (`--sharing none`, or an algorithm whose ranks send and
 * receive one message at a time) and the sizes split evenly: n bytes into
 * K blocks of whole doubles, K a power of two for the binomial trees and
 * the recursive algorithms (a cut tree's branches differ, and a fold
 * overlaps eager messages, so those are priced roughly on other K):
 * formula_exact says when a figure is exact.  Where ports are shared the simulator is
 * slower, and that difference is the lesson of the linear algorithms.
 */
#ifndef CL_FORMULA_H
#define CL_FORMULA_H

#include <stdbool.h>
#include <stdint.h>

typedef struct formula_args {
    int ranks;            /* K */
    uint64_t bytes;       /* n: the collective's size, as `run --bytes` */
    double alpha;         /* seconds per message */
    double bandwidth;     /* bytes per second */
    uint64_t eager_limit; /* bytes: broadcast-chain's pieces above it wait */
    uint64_t chunk;       /* broadcast-chain's piece, bytes (0: n / 8) */
    int group;            /* allreduce-hierarchical's group (0: K) */
    double gamma;         /* seconds per byte reduced (0: free) */
} formula_args;

/* Seconds; cannot fail. */
typedef double formula_fn(const formula_args *f);

formula_fn formula_broadcast_linear, formula_broadcast_binomial, formula_broadcast_chain,
    formula_reduce_linear, formula_reduce_binomial, formula_gather_linear,
    formula_gather_binomial, formula_scatter_linear, formula_scatter_binomial,
    formula_allgather_ring, formula_allgather_rd, formula_reducescatter_ring,
    formula_reducescatter_rh, formula_allreduce_naive, formula_allreduce_ring,
    formula_allreduce_rd, formula_allreduce_rabenseifner, formula_allreduce_tree,
    formula_allreduce_hierarchical, formula_alltoall_linear, formula_alltoall_pairwise,
    formula_barrier_dissemination;

/* Whether fn's figure for f is exact (see the top of this file): the
 * blocks are equal and, for the recursive and tree algorithms, K is a
 * power of two.  Cannot fail. */
bool formula_exact(formula_fn *fn, const formula_args *f);

#endif
