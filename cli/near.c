/* near.c - the nearest known name to a misspelt one (see near.h). */
#include "cli/near.h"

#include <stdbool.h>
#include <string.h>

#define NEAR_MAX 64 /* characters compared, and the largest distance */

size_t cli_near_distance(const char *a, const char *b)
{
    size_t la = strnlen(a, NEAR_MAX - 1), lb = strnlen(b, NEAR_MAX - 1);
    /* Three rows of the dynamic programme: i - 2, i - 1 and i. */
    size_t rows[3][NEAR_MAX];
    size_t *pp = rows[0], *prev = rows[1], *cur = rows[2];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t cost = a[i - 1] != b[j - 1];
            size_t d = prev[j - 1] + cost;
            if (prev[j] + 1 < d)
                d = prev[j] + 1;
            if (cur[j - 1] + 1 < d)
                d = cur[j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                pp[j - 2] + 1 < d)
                d = pp[j - 2] + 1;
            cur[j] = d;
        }
        size_t *t = pp;
        pp = prev;
        prev = cur;
        cur = t;
    }
    return prev[lb];
}

void cli_near_init(cli_near *n, const char *word)
{
    n->word = word;
    n->best = NULL;
    n->dist = NEAR_MAX;
}

void cli_near_add(cli_near *n, const char *candidate)
{
    size_t len = strlen(n->word);
    size_t most = len <= 4 ? 1 : len <= 8 ? 2 : 3;
    size_t d = cli_near_distance(n->word, candidate);
    /* Of two equally near, one that starts as the word does reads as the
     * intended one: --tiers is nearer --tier than --iters. */
    bool better = d < n->dist ||
                  (d == n->dist && n->best && n->best[0] != n->word[0] &&
                   candidate[0] == n->word[0]);
    if (d > 0 && d <= most && better) {
        n->best = candidate;
        n->dist = d;
    }
}
