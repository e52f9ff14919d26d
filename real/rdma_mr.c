/*
 * rdma_mr.c - the rdma transport's registration cache.
 *
 * A rendezvous send registers its buffer so the receiver can read it.
 * Registering costs a system call and, on a NIC, pinning pages, so a
 * buffer the pattern sends again (every iteration, cl_alloc hands out the
 * same blocks) reuses its registration.  An entry is keyed by (address,
 * length): only a send of exactly the range registered is a hit, so a
 * buffer reallocated at the same address with another size, or a send of
 * part of a registered range (which may have been remapped since), is
 * registered anew.  The list is kept most recently used first; past
 * CACHE_MAX entries the least recently used registration nobody is using
 * is closed.  O(entries) per lookup: fine for the few buffers a pattern has.
 *
 * The limit, named: the cache does not watch memory, so a buffer freed and
 * another of the same length malloc'd at the same address would be served
 * by the old registration.  For shm (which reads by address) and tcp that
 * is still right; on a NIC that pinned the old pages it would not be, which
 * is why libfabric's own cache watches memory (FI_MR_CACHE_MONITOR).
 * cl_alloc's blocks live for the whole run and there is no cl_free, so
 * commlab's patterns never do that.
 */
#include <stdlib.h>

#include "real/rdma_impl.h"

#define CACHE_MAX 64 /* registrations kept */

void rdma__mr_init(rdma_mr_cache *c, struct fid_domain *domain, uint64_t mr_mode)
{
    c->domain = domain;
    c->head = NULL;
    c->count = 0;
    c->next_key = 1;
    c->prov_key = (mr_mode & FI_MR_PROV_KEY) != 0;
    c->virt_addr = (mr_mode & FI_MR_VIRT_ADDR) != 0;
}

static void evict(rdma_mr_cache *c)
{
    rdma_mr **victim = NULL;
    for (rdma_mr **at = &c->head; *at; at = &(*at)->next)
        if ((*at)->users == 0)
            victim = at; /* the last one free: least recently used */
    if (!victim)
        return;
    rdma_mr *m = *victim;
    *victim = m->next;
    fi_close(&m->mr->fid);
    free(m);
    c->count--;
}

int rdma__mr_get(rdma_mr_cache *c, const void *buf, size_t len, rdma_mr **out, bool *hit,
                 cl_diag *d)
{
    uintptr_t b = (uintptr_t)buf;
    for (rdma_mr **at = &c->head; *at; at = &(*at)->next) {
        rdma_mr *m = *at;
        if (m->base == b && m->len == len) {
            *at = m->next; /* to the front */
            m->next = c->head;
            c->head = m;
            m->users++;
            *out = m;
            *hit = true;
            return 0;
        }
    }
    rdma_mr *m = calloc(1, sizeof *m);
    if (!m)
        return diag_set(d, CL_ENOMEM, "out of memory for a registration");
    uint64_t want = c->prov_key ? 0 : c->next_key;
    int ret = fi_mr_reg(c->domain, buf, len ? len : 1, FI_REMOTE_READ, 0, want, 0, &m->mr, NULL);
    if (ret) {
        free(m);
        return rdma__fail(d, CL_EIO, "fi_mr_reg", ret, "registering %zu bytes", len);
    }
    if (!c->prov_key)
        c->next_key++;
    m->base = b;
    m->len = len;
    m->key = fi_mr_key(m->mr);
    m->users = 1;
    m->next = c->head;
    c->head = m;
    c->count++;
    if (c->count > CACHE_MAX)
        evict(c);
    *out = m;
    *hit = false;
    return 0;
}

void rdma__mr_put(rdma_mr_cache *c, rdma_mr *m)
{
    (void)c;
    if (m && m->users > 0)
        m->users--;
}

uint64_t rdma__mr_addr(const rdma_mr_cache *c, const rdma_mr *m, const void *buf)
{
    return c->virt_addr ? (uint64_t)(uintptr_t)buf : (uint64_t)((uintptr_t)buf - m->base);
}

void rdma__mr_release(rdma_mr_cache *c)
{
    while (c->head) {
        rdma_mr *m = c->head;
        c->head = m->next;
        fi_close(&m->mr->fid);
        free(m);
    }
    c->count = 0;
}
