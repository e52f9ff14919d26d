/*
 * match.h - message matching with MPI's rules, shared by every backend.
 *
 * One match_queues per rank holds two FIFO lists: the receives posted and not
 * yet matched, and the messages (envelopes) that arrived before a receive
 * wanted them.  A receive matches a message when
 *
 *     recv.ctx == msg.ctx
 *     && (recv.src == MATCH_ANY_SOURCE || recv.src == msg.src)
 *     && (recv.tag == MATCH_ANY_TAG    || recv.tag == msg.tag)
 *
 * and among several candidates the oldest one wins: a new message takes the
 * earliest-posted receive it matches, a new receive takes the earliest-arrived
 * message it matches.  So two messages from one sender with one tag and one
 * ctx are never overtaken, and a wildcard receive takes the first such
 * message to have arrived.  Whether the arrival order of messages from one
 * sender is the send order is the transport's business (it must deliver
 * envelopes in order per sender and ctx).
 *
 * Ownership.  The lists are intrusive: the caller embeds a match_link in its
 * own request or message object and recovers the object from a returned link
 * (container_of style).  From match_post_recv/match_arrive appending a link
 * until that link is returned again or removed by match_remove, the queue owns
 * its next, prev and queue fields; the caller must not move, free or edit it
 * (src, tag and ctx included).  The lists own nothing; the index below is
 * the only memory a match_queues allocates, freed by match_queues_release
 * (and whenever both lists are empty).  Nothing fails for lack of memory: an
 * index that cannot be made leaves the scans.
 *
 * Cost.  While both lists are short, matching is a linear scan of the other
 * list: O(posted) per arrival, O(unexpected) per posted receive.  That is
 * the right trade for the few entries a rank usually has queued (a handful
 * of compares on cache-hot links), and it keeps the per-rank state at 56
 * bytes (LP64), which matters with 100,000+ simulated ranks.  Once a list
 * holds more than MATCH_INDEX_FROM entries (a root gathering from every rank
 * with receives pre-posted, an all-to-all among hundreds of ranks, where the
 * scans made the pattern O(P^2) per rank) the queues also keep an index:
 * a hash by (src, tag, ctx) of the unexpected messages and of the receives
 * that name both, in their order, and the wildcard receives in post order,
 * every receive with its post number.  A receive naming both then finds its
 * message in O(1), an arrival the oldest of its hash's receives and of the
 * wildcard receives that match it; a wildcard receive still scans the
 * unexpected list.  The answers are the scans' answers.
 *
 * Not thread-safe: one match_queues is used by one thread at a time.
 */
#ifndef CORE_MATCH_H
#define CORE_MATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "commlab.h"

/* Wildcards of a receive: the pattern-facing ones of commlab.h. */
#define MATCH_ANY_SOURCE CL_ANY_SOURCE
#define MATCH_ANY_TAG CL_ANY_TAG

/* Which list a link is on (match_link.queue). */
enum {
    MATCH_NONE = 0,       /* on no list: new, returned or removed */
    MATCH_POSTED = 1,     /* on a posted-receive list */
    MATCH_UNEXPECTED = 2, /* on an unexpected-message list */
};

typedef struct match_link {
    struct match_link *next, *prev; /* owned by the queue while queued */
    int src;        /* sending rank; in a receive, or MATCH_ANY_SOURCE */
    int tag;        /* tag >= 0; in a receive, or MATCH_ANY_TAG */
    uint32_t ctx;   /* communicator context id; only equal ctx match */
    uint32_t queue; /* MATCH_NONE/POSTED/UNEXPECTED; owned by the queue */
} match_link;

typedef struct match_list {
    match_link *head; /* oldest entry, NULL when empty */
    match_link *tail; /* newest entry, NULL when empty */
    size_t len;       /* entries */
} match_list;

#define MATCH_INDEX_FROM 32 /* entries in a list above which it is indexed */

typedef struct match_queues {
    match_list posted;       /* receives waiting for a message, post order */
    match_list unexpected;   /* messages waiting for a receive, arrival order */
    struct match_index *ix;  /* the index (see Cost), or NULL */
} match_queues;

/* ---- setup ---- */

/* Empty queues.  Cannot fail. */
void match_queues_init(match_queues *m);
/* Frees the index, if any; the lists and their links are left as they
 * are (the caller's).  Call it before dropping m.  Cannot fail. */
void match_queues_release(match_queues *m);

/* Fill a link before its first use: src, tag, ctx as given, on no list.
 * A zero-initialized link with its fields set is equally valid.  Cannot fail. */
void match_link_init(match_link *l, int src, int tag, uint32_t ctx);

/* ---- matching ---- */

/* A receive is posted (src may be MATCH_ANY_SOURCE, tag MATCH_ANY_TAG).
 * Returns the oldest unexpected message it matches, removed from the queue,
 * and recv is left untouched; or NULL after appending recv to the posted
 * queue.  recv must be on no list.  Cannot fail. */
match_link *match_post_recv(match_queues *m, match_link *recv);

/* A message envelope arrives (src >= 0, tag >= 0).  Returns the oldest posted
 * receive that matches it, removed from the queue, and msg is left untouched;
 * or NULL after appending msg to the unexpected queue.  msg must be on no
 * list.  Cannot fail. */
match_link *match_arrive(match_queues *m, match_link *msg);

/* Cancel: take a queued receive or message off m's list in O(1).  Returns
 * true if it was removed, false (nothing changed) if l is on no list.  A link
 * queued on another match_queues is a caller bug. */
bool match_remove(match_queues *m, match_link *l);

/* Speculation: fetches toward the lines a lookup of a key would read, one
 * step of the chain at a time: step 0 the index, 1 the key's slot, 2 its
 * chain's first entry, 3 that entry's link.  Each step reads only what
 * the step before fetched, so a caller that guesses its next keys calls
 * step 3 for the next, 2 for the one after, and so on.  arrive: the key of
 * a message (the posted receives are searched), else of a receive.  A
 * guess that is wrong costs the fetches; nothing changes. */
void match_prefetch(const match_queues *m, bool arrive, int src, int tag, uint32_t ctx,
                    int step);

/* ---- inspection ---- */

/* Number of posted receives / unexpected messages queued.  Cannot fail. */
size_t match_posted_len(const match_queues *m);
size_t match_unexpected_len(const match_queues *m);

/* Check the invariants: both lists well linked both ways, lengths equal to
 * the counts, every link marked with its list, messages without wildcards,
 * and where there is an index, every queued link in it once, in list
 * order.  Returns false at the first violation.  O(entries); for asserts
 * and tests. */
bool match_check(const match_queues *m);

#endif /* CORE_MATCH_H */
