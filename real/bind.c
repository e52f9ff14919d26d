/* bind.c - loading the topology once and pinning each rank to its core. */
#include "real/bind.h"

#include <assert.h>
#include <errno.h>
#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commlab.h"

struct real_binder {
    hwloc_topology_t topo;  /* loaded by create, read-only afterwards */
    hwloc_obj_type_t type;  /* HWLOC_OBJ_CORE, or HWLOC_OBJ_PU without cores */
    int ncores;             /* objects of that type, >= 1 */
    int nranks;             /* ranks planned for, >= 1 */
    bool bind;              /* false: nothing planned, apply is a no-op */
    int *core;              /* nranks logical core indexes, NULL if !bind */
};

int real_binder_create(real_binder **out, int nranks, bool bind, cl_diag *d)
{
    assert(out && nranks >= 1);
    *out = NULL;
    real_binder *b = calloc(1, sizeof *b);
    if (!b)
        return diag_set(d, CL_ENOMEM, "cannot allocate the core binder");
    if (hwloc_topology_init(&b->topo) < 0) {
        free(b);
        return diag_set(d, CL_EIO, "cannot initialise the hwloc topology: %s",
                        strerror(errno));
    }
    if (hwloc_topology_load(b->topo) < 0) {
        int err = diag_set(d, CL_EIO, "cannot load the hwloc topology: %s", strerror(errno));
        real_binder_destroy(b);
        return err;
    }
    b->type = HWLOC_OBJ_CORE;
    b->ncores = hwloc_get_nbobjs_by_type(b->topo, HWLOC_OBJ_CORE);
    if (b->ncores <= 0) { /* some VMs and containers report PUs only */
        b->type = HWLOC_OBJ_PU;
        b->ncores = hwloc_get_nbobjs_by_type(b->topo, HWLOC_OBJ_PU);
    }
    if (b->ncores <= 0) {
        real_binder_destroy(b);
        return diag_set(d, CL_EIO, "the hwloc topology has no cores and no PUs");
    }
    b->nranks = nranks;
    b->bind = bind;
    if (bind) {
        b->core = malloc((size_t)nranks * sizeof *b->core);
        if (!b->core) {
            real_binder_destroy(b);
            return diag_set(d, CL_ENOMEM, "cannot allocate a core plan for %d ranks", nranks);
        }
        /* Round-robin rather than hwloc_distrib: the plan is then obvious
         * from the rank alone, and with ranks > cores distrib would split
         * cores into PUs, which is not what "one rank per core" means. */
        for (int r = 0; r < nranks; r++)
            b->core[r] = r % b->ncores;
    }
    *out = b;
    return 0;
}

void real_binder_destroy(real_binder *b)
{
    if (!b)
        return;
    if (b->topo)
        hwloc_topology_destroy(b->topo);
    free(b->core);
    free(b);
}

int real_binder_cores(const real_binder *b)
{
    return b->ncores;
}

const char *real_binder_describe(const real_binder *b, char *buf, size_t len)
{
    assert(buf && len >= 1);
    if (!b->bind) {
        snprintf(buf, len, "not bound");
        return buf;
    }
    size_t n = (size_t)snprintf(buf, len, "bound to cores ");
    if (n >= len)
        return buf;
    /* Whole numbers only: after each item but the last there is room left
     * for "...", so a list that does not fit ends in "..." and never in a
     * cut number. */
    for (int r = 0; r < b->nranks; r++) {
        char item[16];
        size_t k = (size_t)snprintf(item, sizeof item, "%s%d", r ? "," : "", b->core[r]);
        size_t reserve = r + 1 < b->nranks ? 3 : 0;
        if (n + k + reserve >= len) {
            snprintf(buf + n, len - n, "...");
            break;
        }
        memcpy(buf + n, item, k + 1);
        n += k;
    }
    return buf;
}

int real_binder_apply(const real_binder *b, int rank, cl_diag *d)
{
    assert(rank >= 0 && rank < b->nranks);
    if (!b->bind)
        return 0;
    int core = b->core[rank];
    hwloc_obj_t obj = hwloc_get_obj_by_type(b->topo, b->type, (unsigned)core);
    if (!obj || !obj->cpuset)
        return diag_set(d, CL_EIO, "cannot bind rank %d to core %d: no such core in the topology",
                        rank, core);
    if (hwloc_set_cpubind(b->topo, obj->cpuset, HWLOC_CPUBIND_PROCESS) < 0)
        return diag_set(d, CL_EIO, "cannot bind rank %d to core %d: %s", rank, core,
                        strerror(errno));
    return 0;
}
