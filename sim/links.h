/*
 * links.h - when each directed link of the model is free again, under
 * --sharing none (with maxmin, sim/flow.h shares links instead).
 *
 * The alpha-beta model prices one message alone: alpha + n / B.  A link
 * still carries one message's bytes at a time, so messages that share a
 * directed link queue behind each other: the bytes of the next one start
 * when the previous one's last byte has left (n / B after it started); the
 * latency alpha is paid in flight and overlaps.  This changes none of the
 * course's figures (their links never carry two messages at once) and makes
 * a chunked transfer cost alpha + n / B rather than alpha + n / (pieces B).
 *
 * A link is keyed by (src, dst) rank pair: with --tier each pair has its own
 * link, and with a topology the route between a pair is treated as one
 * dedicated circuit; contention between different pairs that share a
 * physical link is what --sharing maxmin adds.
 *
 * Open addressing on 64-bit keys; grows at 1/2 load; memory is the number
 * of pairs that ever exchanged a message.
 */
#ifndef SIM_LINKS_H
#define SIM_LINKS_H

#include <stddef.h>
#include <stdint.h>

typedef struct sim_links {
    uint64_t *keys;   /* (src << 32 | dst) + 1; 0 marks an empty slot */
    double *free_at;  /* seconds: when the link takes its next message */
    size_t cap;       /* slots, a power of two */
    size_t len;       /* slots used */
} sim_links;

void sim_links_init(sim_links *l);
void sim_links_release(sim_links *l);

/* The free-at time of src -> dst, inserted as 0 when new; NULL when out of
 * memory.  The pointer is valid until the next call. */
double *sim_links_slot(sim_links *l, int src, int dst);

#endif
