/* pattern.c - the table of built-in patterns and collectives. */
#include "core/pattern.h"

#include <stdio.h>
#include <string.h>

cl_pattern_fn relay, pingpong, ring, exchange, deadlock, pipeline, chunked, incast,
    broadcast_linear, broadcast_binomial, broadcast_chain, reduce_linear, reduce_binomial,
    gather_linear, gather_binomial, scatter_linear, scatter_binomial, allgather_ring,
    allgather_rd, reducescatter_ring, reducescatter_rh, allreduce_naive, allreduce_ring,
    allreduce_rd, allreduce_rabenseifner, allreduce_tree, allreduce_hierarchical,
    alltoall_linear, alltoall_pairwise, barrier_dissemination, grid;
cl_pattern_fn overlap, relay_chunked, blocking_ring, training_step, pingpong_stream;

enum { BCAST, REDUCE, GATHER, SCATTER, ALLGATHER, REDSCAT, ALLREDUCE, ALLTOALL, BARRIER };

static const collective_info colls[] = {
    [BCAST] = {"broadcast", "rank 0's n bytes end on every rank", "binomial", BUS_ONE, false},
    [REDUCE] = {"reduce", "the reduction (--op) of every rank's n bytes ends on rank 0",
                "binomial", BUS_ONE, true},
    [GATHER] = {"gather", "every rank's block of n ends on rank 0", "binomial", BUS_SHARE,
                false},
    [SCATTER] = {"scatter", "rank 0's n bytes end a block on each rank", "binomial",
                 BUS_SHARE, false},
    [ALLGATHER] = {"allgather", "every rank's block of n ends on every rank", "ring",
                   BUS_SHARE, false},
    [REDSCAT] = {"reducescatter",
                 "rank r ends with block r of the reduction of every rank's n bytes", "ring",
                 BUS_SHARE, true},
    [ALLREDUCE] = {"allreduce", "every rank ends with the reduction of every rank's n bytes",
                   "ring", BUS_ALLREDUCE, true},
    [ALLTOALL] = {"alltoall", "block d of rank r's n bytes ends on rank d, for every r and d",
                  "pairwise", BUS_SHARE, false},
    [BARRIER] = {"barrier", "no rank leaves before every rank has arrived", "dissemination",
                 BUS_NONE, false},
};

/* A pattern that is not a collective, on 2 ranks or more. */
#define PATTERN(name_, fn_, chapter_, summary_, divisor_, fixes_)                          \
    {.name = name_, .fn = fn_, .chapter = chapter_, .summary = summary_, .min_ranks = 2,   \
     .time_divisor = divisor_, .fixes = fixes_}

#define C04 "04-collectives"
/* Algorithm algo of collective c: the pattern fn, called name. */
#define COLL_FIELDS(c, name_, algo_, fn_, summary_, text_)                                \
    .name = name_, .fn = fn_, .chapter = C04, .summary = summary_, .min_ranks = 2,          \
    .time_divisor = 1, .collective = &colls[c], .algo = algo_, .formula = formula_##fn_,    \
    .formula_text = text_
#define COLL(c, name_, algo_, fn_, summary_, text_)                                       \
    {COLL_FIELDS(c, name_, algo_, fn_, summary_, text_)}
#define LINEAR(c, name_, fn_, summary_, text_) COLL(c, name_, "linear", fn_, summary_, text_)

static const pattern_info table[] = {
    PATTERN("relay", relay, "02-point-to-point",
            "rank 0 creates a value, each rank adds 10 and passes it on", 1, NULL),
    PATTERN("pingpong", pingpong, "02-point-to-point",
            "ranks 0 and 1 bounce a buffer; time is one-way (round trip / 2)", 2, NULL),
    /* 64: pingpong.c's STREAM_ROUND_TRIPS (32) round trips, two messages each */
    PATTERN("pingpong-stream", pingpong_stream, "02-point-to-point",
            "pingpong 32 round trips an iteration, as bench times them (chapter 06); "
            "time is one-way (iteration / 64)",
            64, NULL),
    PATTERN("ring", ring, "02-point-to-point",
            "each rank sends to rank+1 and receives from rank-1 at once (isend/irecv)", 1, NULL),
    PATTERN("exchange", exchange, "02-point-to-point",
            "even and odd neighbours swap buffers at the same time (isend/irecv)", 1, NULL),
    PATTERN("deadlock", deadlock, "02-point-to-point",
            "ranks 0 and 1 both send first: fine below the eager limit, stuck above", 1,
            "order,nonblocking"),
    {.name = "pipeline", .fn = pipeline, .chapter = "02-point-to-point",
     .summary = "stages pass activations forward and gradients back over microbatches "
                "(--schedule gpipe or 1f1b)",
     .min_ranks = 2, .time_divisor = 1, .schedules = "gpipe,1f1b"},
    {.name = "chunked", .fn = chunked, .chapter = "02-point-to-point",
     .summary = "rank 0 sends a large buffer to rank 1 in pieces, all posted at once",
     .min_ranks = 2, .time_divisor = 1, .max_pieces = 1024},
    PATTERN("overlap", overlap, "02-point-to-point",
            "replicas swap gradient buckets while computing the next (isend, compute, wait)", 1,
            NULL),
    PATTERN("relay-chunked", relay_chunked, "02-point-to-point",
            "the relay in pieces (--pieces): the hops work at once, like pipeline stages", 1,
            NULL),
    PATTERN("blocking-ring", blocking_ring, "05-deadlock",
            "each rank sends right, then receives from the left: stuck above the eager limit",
            1, "evenodd"),
    PATTERN("incast", incast, "03-cost-of-a-message",
            "every other rank sends to rank 0 at once: they share rank 0's link", 1, NULL),
    {.name = "grid", .fn = grid, .chapter = C04,
     .summary = "P x D ranks: a pipeline send in each replica's group, an all-reduce in each "
                "stage's data-parallel group of --group D (cl_group)",
     .min_ranks = 2, .time_divisor = 1, .group_divides = true, .makes_groups = true},
    {.name = "training-step", .fn = training_step, .chapter = "07-training-step",
     .summary = "one training step: tensor-parallel all-reduces, pipeline sends, data-parallel "
                "gradients (`commlab step FILE.yaml`)",
     .min_ranks = 1, .time_divisor = 1, .makes_groups = true, .from_step_file = true},
    LINEAR(BCAST, "broadcast-linear", broadcast_linear, "rank 0 posts a send to every rank at once",
         "a + n/B"),
    COLL(BCAST, "broadcast-binomial", "binomial", broadcast_binomial,
         "a binomial tree: the ranks holding the data double each round", "ceil(lg K)(a + n/B)"),
    COLL(BCAST, "broadcast-chain", "chain", broadcast_chain,
         "a pipelined chain: m pieces (--chunk) flow rank to rank",
         "(K-1)a + (K+m-2)n/(mB) eager, (K+m-2)(a + n/(mB)) above"),
    LINEAR(REDUCE, "reduce-linear", reduce_linear, "every rank posts its buffer to rank 0 at once",
         "a + n/B + (K-1)n g"),
    COLL(REDUCE, "reduce-binomial", "binomial", reduce_binomial, "a binomial tree of partial results",
         "ceil(lg K)(a + n/B + n g)"),
    LINEAR(GATHER, "gather-linear", gather_linear, "every rank posts its block to rank 0 at once",
         "a + n/(K B)"),
    COLL(GATHER, "gather-binomial", "binomial", gather_binomial, "a binomial tree of growing runs of blocks",
         "lg K a + (K-1)n/(K B)"),
    LINEAR(SCATTER, "scatter-linear", scatter_linear, "rank 0 posts every block at once", "a + n/(K B)"),
    COLL(SCATTER, "scatter-binomial", "binomial", scatter_binomial, "a binomial tree of shrinking runs of blocks",
         "lg K a + (K-1)n/(K B)"),
    COLL(ALLGATHER, "allgather-ring", "ring", allgather_ring, "K-1 steps around the ring, a block each",
         "(K-1)(a + n/(K B))"),
    COLL(ALLGATHER, "allgather-rd", "rd", allgather_rd, "recursive doubling: swap all you hold with r XOR 2^j",
         "lg K a + (K-1)n/(K B)"),
    COLL(REDSCAT, "reducescatter-ring", "ring", reducescatter_ring, "K-1 steps around the ring, a block each",
         "(K-1)(a + n/(K B) + n g/K)"),
    COLL(REDSCAT, "reducescatter-rh", "rh", reducescatter_rh,
         "recursive halving: give half of what is left to r XOR 2^j",
         "lg K a + (K-1)n/(K B) + (K-1)n g/K"),
    COLL(ALLREDUCE, "allreduce-naive", "naive", allreduce_naive,
         "a running reduction walks the ring, then the result walks back: 2(K-1) full hops",
         "2(K-1)(a + n/B) + (K-1)n g"),
    COLL(ALLREDUCE, "allreduce-ring", "ring", allreduce_ring,
         "reduce-scatter then all-gather: 2(K-1) steps of n/K bytes per rank",
         "2(K-1)(a + n/(K B)) + (K-1)n g/K"),
    COLL(ALLREDUCE, "allreduce-rd", "rd", allreduce_rd, "recursive doubling: swap the whole result with r XOR 2^j",
         "lg K (a + n/B + n g)"),
    COLL(ALLREDUCE, "allreduce-rabenseifner", "rabenseifner", allreduce_rabenseifner,
         "reduce-scatter by halving, all-gather by doubling",
         "2 lg K a + 2(K-1)n/(K B) + (K-1)n g/K"),
    COLL(ALLREDUCE, "allreduce-tree", "tree", allreduce_tree, "reduce up a binary tree, broadcast down it",
         "2 floor(lg K)(a + n/B) + up to 2 floor(lg K)n g"),
    {COLL_FIELDS(ALLREDUCE, "allreduce-hierarchical", "hierarchical", allreduce_hierarchical,
         "ring reduce-scatter in groups (--group), ring across, ring all-gather in groups",
         "2(G-1)(a + n/(G B)) + 2(K/G-1)(a + n/(K B)) + ((G-1)/G + (K/G-1)/K)n g"),
     .makes_groups = true},
    LINEAR(ALLTOALL, "alltoall-linear", alltoall_linear, "every rank posts every block at once",
         "a + n/(K B)"),
    COLL(ALLTOALL, "alltoall-pairwise", "pairwise", alltoall_pairwise, "K-1 steps: send to r+i, receive from r-i",
         "(K-1)(a + n/(K B))"),
    COLL(BARRIER, "barrier-dissemination", "dissemination", barrier_dissemination,
         "round j: tell r + 2^j all you have heard", "ceil(lg K)(a + m/B), m = K/8 bytes"),
};

#define NPATTERNS (sizeof table / sizeof table[0])
#define NCOLLS (sizeof colls / sizeof colls[0])

const pattern_info *pattern_find(const char *name)
{
    for (size_t i = 0; i < NPATTERNS; i++)
        if (strcmp(table[i].name, name) == 0)
            return &table[i];
    return NULL;
}

const pattern_info *pattern_at(size_t i)
{
    return i < NPATTERNS ? &table[i] : NULL;
}

const collective_info *collective_find(const char *name)
{
    for (size_t i = 0; i < NCOLLS; i++)
        if (strcmp(colls[i].name, name) == 0)
            return &colls[i];
    return NULL;
}

const collective_info *collective_at(size_t i)
{
    return i < NCOLLS ? &colls[i] : NULL;
}

const pattern_info *collective_algo_at(const collective_info *c, size_t i)
{
    for (size_t j = 0; j < NPATTERNS; j++)
        if (table[j].collective == c && i-- == 0)
            return &table[j];
    return NULL;
}

const pattern_info *collective_algo(const collective_info *c, const char *algo)
{
    const pattern_info *p;
    for (size_t i = 0; (p = collective_algo_at(c, i)) != NULL; i++)
        if (strcmp(p->algo, algo) == 0)
            return p;
    return NULL;
}

char *collective_algo_list(const collective_info *c, char *buf, size_t len)
{
    const pattern_info *p;
    size_t at = 0;
    buf[0] = 0;
    for (size_t i = 0; (p = collective_algo_at(c, i)) != NULL && at < len; i++) {
        int n = snprintf(buf + at, len - at, "%s%s", i ? ", " : "", p->algo);
        at += n > 0 ? (size_t)n : 0;
    }
    return buf;
}

double pattern_bus_factor(pattern_bus bus, int k)
{
    switch (bus) {
    case BUS_ONE: return 1;
    case BUS_SHARE: return (double)(k - 1) / k;
    case BUS_ALLREDUCE: return 2.0 * (k - 1) / k;
    case BUS_NONE: break;
    }
    return 0;
}
