/* links.c - per directed pair "free at" times, open addressing. */
#include "sim/links.h"

#include <stdlib.h>

void sim_links_init(sim_links *l)
{
    l->keys = NULL;
    l->free_at = NULL;
    l->cap = 0;
    l->len = 0;
}

void sim_links_release(sim_links *l)
{
    free(l->keys);
    free(l->free_at);
    sim_links_init(l);
}

static size_t slot_of(uint64_t key, size_t mask)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return (size_t)key & mask;
}

static int grow(sim_links *l)
{
    size_t cap = l->cap ? l->cap * 2 : 1024;
    uint64_t *keys = calloc(cap, sizeof *keys);
    double *free_at = malloc(cap * sizeof *free_at);
    if (!keys || !free_at) {
        free(keys);
        free(free_at);
        return -1;
    }
    for (size_t i = 0; i < l->cap; i++) {
        if (!l->keys[i])
            continue;
        size_t s = slot_of(l->keys[i], cap - 1);
        while (keys[s])
            s = (s + 1) & (cap - 1);
        keys[s] = l->keys[i];
        free_at[s] = l->free_at[i];
    }
    free(l->keys);
    free(l->free_at);
    l->keys = keys;
    l->free_at = free_at;
    l->cap = cap;
    return 0;
}

double *sim_links_slot(sim_links *l, int src, int dst)
{
    if (2 * (l->len + 1) > l->cap && grow(l))
        return NULL;
    uint64_t key = ((uint64_t)(uint32_t)src << 32 | (uint32_t)dst) + 1;
    size_t mask = l->cap - 1, s = slot_of(key, mask);
    while (l->keys[s] && l->keys[s] != key)
        s = (s + 1) & mask;
    if (!l->keys[s]) {
        l->keys[s] = key;
        l->free_at[s] = 0;
        l->len++;
    }
    return &l->free_at[s];
}

