/*
 * bind.h - pinning rank processes to cores with hwloc.
 *
 * A measured run forks one process per rank.  Left alone, the kernel moves
 * them between cores, and a ping-pong then measures the scheduler as much as
 * the transport.  The binder loads the machine's topology once, in the
 * launcher before fork, and plans a core for each rank:
 *
 *   rank r -> core (r % ncores)        cores in hwloc logical order
 *
 * so ranks are spread over the cores and, with more ranks than cores, the
 * cores are reused round-robin.  Each child calls real_binder_apply() right
 * after fork; it uses the topology and the plan inherited from the parent and
 * never reloads them.
 *
 * A "core" is an hwloc core object; on a topology with no cores (some VMs and
 * containers) it is a PU.  Binding is to all the PUs of the core, so
 * hyperthread siblings stay available to the rank.  Only cores this process
 * may use (its cgroup/cpuset) are counted.
 *
 * The binder owns its topology and plan; real_binder_destroy() frees them.
 * It is read-only after create, so a forked child may use its copy freely.
 */
#ifndef CL_REAL_BIND_H
#define CL_REAL_BIND_H

#include <stdbool.h>
#include <stddef.h>

#include "core/diag.h"

typedef struct real_binder real_binder;

/* ---- lifecycle ---- */

/* Loads the topology and plans a core for each of nranks (>= 1) ranks.
 * bind == false plans nothing but still counts the cores.  Returns 0, or
 * CL_ENOMEM / CL_EIO with d saying why (d may be NULL); on error *out is
 * NULL and nothing is left allocated. */
int real_binder_create(real_binder **out, int nranks, bool bind, cl_diag *d);
/* NULL-safe; cannot fail. */
void real_binder_destroy(real_binder *b);

/* ---- queries ---- */

/* Cores (PUs when the topology has no cores) this process may use, >= 1.
 * Cannot fail. */
int real_binder_cores(const real_binder *b);
/* A short text for reports, "bound to cores 0,1,0,1" (logical core of each
 * rank in rank order) or "not bound", written into buf (len >= 1) and
 * truncated with "..." when it does not fit.  Returns buf; cannot fail. */
const char *real_binder_describe(const real_binder *b, char *buf, size_t len);

/* ---- in the child ---- */

/* Binds the calling process (all its threads) to the core planned for rank
 * (0 <= rank < nranks).  A no-op returning 0 when bind was false.  On failure
 * returns CL_EIO with d saying "cannot bind rank 3 to core 1: <strerror>";
 * a single-threaded process then keeps its old affinity. */
int real_binder_apply(const real_binder *b, int rank, cl_diag *d);

#endif
