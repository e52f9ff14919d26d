/*
 * near.h - "did you mean ...?": the known name nearest to a misspelt one.
 *
 * Distance is the optimal string alignment distance (Levenshtein with the
 * swap of two neighbouring characters counted as one edit), case-sensitive.
 * A name is offered only when it is close for the word's length: one edit
 * up to 4 characters, two up to 8, three beyond (git's "did you mean" works
 * the same way), so a word unlike every name gets no suggestion.
 *
 * A search is caller memory (cli_near), fed the candidates one by one; it
 * keeps pointers to the word and to the best candidate, which must outlive
 * it.  Nothing here allocates or has global state; depends on libc only,
 * so unit tests compile it in.
 */
#ifndef CL_NEAR_H
#define CL_NEAR_H

#include <stddef.h>

typedef struct cli_near {
    const char *word; /* the misspelt word */
    const char *best; /* the nearest candidate so far; NULL: none close enough */
    size_t dist;      /* its distance */
} cli_near;

/* Starts a search for names near word.  Cannot fail. */
void cli_near_init(cli_near *n, const char *word);
/* Offers a candidate.  Of equally near ones, the first that starts with
 * the word's first character wins, else the first.  Cannot fail. */
void cli_near_add(cli_near *n, const char *candidate);

/* The edit distance between a and b, capped at 64 (longer words count
 * only their first 63 characters).  Cannot fail. */
size_t cli_near_distance(const char *a, const char *b);

#endif
