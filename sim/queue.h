/*
 * queue.h - the simulator's event queue: a priority queue of events ordered
 * by (time, seq).
 *
 * seq is assigned by sim_queue_push from a counter private to each queue, so
 * two events never compare equal and a run pops events in the same order
 * every time: events at the same virtual time come out in the order they were
 * pushed (FIFO).  That is the simulator's determinism guarantee.
 *
 * Ownership: the queue owns copies of the events pushed into it.  It never
 * dereferences or frees an event's ptr; that belongs to the caller.
 *
 * The implementation is hidden behind these functions so that a heap, a
 * calendar queue or a ladder queue can be swapped in and benchmarked.  Today
 * it is a 4-ary min-heap of events stored by value, plus four sorted runs
 * (FIFOs), each taking the pushes not earlier than its last event (runs of
 * pushes in non-decreasing time: ranks moving in lockstep, or waiting one
 * of a few delays each): such pushes and their pops cost O(1) instead of
 * O(log n).  All are plain arrays grown by doubling.  Not thread-safe; one
 * queue belongs to one simulator.
 */
#ifndef SIM_QUEUE_H
#define SIM_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sim_event {
    double time;   /* virtual seconds; >= 0, not NaN (+inf is allowed) */
    uint64_t seq;  /* insertion order, set by sim_queue_push */
    uint32_t type; /* caller's event kind */
    uint32_t rank; /* caller's rank index */
    uint64_t arg;  /* caller's integer argument */
    void *ptr;     /* caller's pointer argument, never touched by the queue */
} sim_event;

typedef struct sim_queue sim_queue;

/* ---- lifecycle ---- */

/* Make an empty queue in *out.  CL_ENOMEM: *out is left untouched. */
int sim_queue_create(sim_queue **out);
/* Free q and the events still in it (not what their ptr points to).  NULL is
 * a no-op. */
void sim_queue_destroy(sim_queue *q);

/* ---- use ---- */

/* Copy *ev into q and set the copy's seq to the next value of q's counter
 * (ev itself is not modified; a time of -0.0 is stored as +0.0).  CL_EINVAL if ev->time is NaN or negative,
 * CL_ENOMEM if the queue cannot grow; on error q is unchanged, the counter
 * included. */
int sim_queue_push(sim_queue *q, const sim_event *ev);
/* Remove the earliest event by (time, seq) into *out.  Returns false, and
 * leaves *out untouched, when q is empty.  Cannot fail. */
bool sim_queue_pop(sim_queue *q, sim_event *out);
/* The event sim_queue_pop would return, or NULL when q is empty.  The
 * pointer is valid until the next push, pop or destroy. */
const sim_event *sim_queue_peek(const sim_queue *q);
/* A hint for prefetching: an event likely to be popped soon, the k-th
 * (from 0) of the first sorted run (queue.c), or NULL when the run holds
 * fewer.  In lockstep it is the event popped k after the next one; in
 * general the other runs' and the heap's events may come before it.  Valid
 * until the next push, pop or destroy. */
const sim_event *sim_queue_soon(const sim_queue *q, size_t k);
/* Number of events in q. */
size_t sim_queue_len(const sim_queue *q);

/* ---- checks ---- */

/* True when q's internal order invariants hold (heap property, runs sorted,
 * every seq below the counter).  O(n); for asserts and tests. */
bool sim_queue_check(const sim_queue *q);

#endif /* SIM_QUEUE_H */
