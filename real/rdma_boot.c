/*
 * rdma_boot.c - the rdma transport's bootstrap: every rank learns every
 * other rank's endpoint address.
 *
 * One all-gather of a fixed-size blob per rank is all the transport asks
 * of a bootstrap.  Local runs (ranks forked by one launcher) gather through
 * the launcher's shared area: each rank writes its slot and publishes it
 * with a release store, then reads every slot once its flag is set.  A
 * multi-host bootstrap (MASTER_ADDR, an MPI launcher) replaces this one
 * function and nothing else.
 */
#include <string.h>
#include <time.h>

#include "real/rdma_impl.h"

#define BOOT_SECONDS 60.0 /* every rank has published its address by then */

int rdma__boot_allgather(rdma_area *area, int rank, int nranks, const void *blob, size_t len,
                         unsigned char *all, size_t *lens, cl_diag *d)
{
    if (len > RDMA_ADDR_MAX)
        return diag_set(d, CL_EPROTO, "rank %d: an endpoint address of %zu bytes (at most %d)",
                        rank, len, RDMA_ADDR_MAX);
    rdma_boot_slot *mine = &area->slot[rank];
    memcpy(mine->blob, blob, len);
    mine->len = (uint32_t)len;
    atomic_store_explicit(&mine->ready, 1, memory_order_release);
    double deadline = job_now() + BOOT_SECONDS;
    for (int i = 0; i < nranks; i++) {
        const rdma_boot_slot *s = &area->slot[i];
        while (!atomic_load_explicit(&s->ready, memory_order_acquire)) {
            if (job_now() > deadline)
                return diag_set(d, CL_ETIMEOUT, "rank %d: rank %d published no address within "
                                "%.0f s", rank, i, BOOT_SECONDS);
            struct timespec ts = {0, 1000000L};
            nanosleep(&ts, NULL);
        }
        if (s->len > RDMA_ADDR_MAX)
            return diag_set(d, CL_EPROTO, "rank %d: rank %d published a bad address", rank, i);
        memcpy(all + (size_t)i * RDMA_ADDR_MAX, s->blob, s->len);
        lens[i] = s->len;
    }
    return 0;
}
