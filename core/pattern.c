/* pattern.c - the table of built-in patterns. */
#include "core/pattern.h"

#include <string.h>

cl_pattern_fn relay, pingpong, ring, exchange, deadlock, pipeline, chunked, incast,
    allreduce_naive, allreduce_ring;

static const pattern_info table[] = {
    {"relay", relay, "02-point-to-point",
     "rank 0 creates a value, each rank adds 10 and passes it on", 2, 1, NULL},
    {"pingpong", pingpong, "02-point-to-point",
     "ranks 0 and 1 bounce a buffer; time is one-way (round trip / 2)", 2, 2, NULL},
    {"ring", ring, "02-point-to-point",
     "each rank sends to rank+1 and receives from rank-1 at once (isend/irecv)", 2, 1, NULL},
    {"exchange", exchange, "02-point-to-point",
     "even and odd neighbours swap buffers at the same time (isend/irecv)", 2, 1, NULL},
    {"deadlock", deadlock, "02-point-to-point",
     "ranks 0 and 1 both send first: fine below the eager limit, stuck above", 2, 1,
     "order,nonblocking"},
    {"pipeline", pipeline, "02-point-to-point",
     "stages pass activations forward and gradients back over microbatches", 2, 1, NULL},
    {"chunked", chunked, "02-point-to-point",
     "rank 0 sends a large buffer to rank 1 in pieces, all posted at once", 2, 1, NULL},
    {"incast", incast, "03-cost-of-a-message",
     "every other rank sends to rank 0 at once: they share rank 0's link", 2, 1, NULL},
    {"allreduce-naive", allreduce_naive, "04-collectives",
     "a running sum walks the ring, then the total walks back: 2(K-1) full hops", 2, 1, NULL},
    {"allreduce-ring", allreduce_ring, "04-collectives",
     "reduce-scatter then all-gather: 2(K-1) steps of n/K bytes per rank", 2, 1, NULL},
};

const pattern_info *pattern_find(const char *name)
{
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i].name, name) == 0)
            return &table[i];
    return NULL;
}

const pattern_info *pattern_at(size_t i)
{
    return i < sizeof table / sizeof table[0] ? &table[i] : NULL;
}
