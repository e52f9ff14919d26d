/*
 * rdma_lib.h - libfabric, opened when the rdma transport first needs it
 * (real/dlib.h says why it is not linked in); internal to real/ (hence
 * the rdma__ names).
 *
 * Most of libfabric's API is static inline functions in its headers that
 * call through the operations tables of the objects it returns
 * (fi_endpoint, fi_tsend, fi_cq_read, ...): they need no symbol from the
 * library.  Its few exported functions that commlab calls are the table
 * below.  Every file that talks to libfabric includes this header (through
 * rdma_impl.h) instead of libfabric's: it includes them, then makes each
 * of those names a macro for the table's field, so calls read as
 * libfabric's own API.  A call left out of the table is a link error
 * (commlab is not linked with libfabric), so the list cannot fall behind
 * the code.
 *
 * Every entry of the transport (rdma.h's rdma_provider_* functions, a
 * rank's opening) calls rdma__lib_load first; before it returned 0 the
 * table's fields are NULL.
 */
#ifndef REAL_RDMA_LIB_H
#define REAL_RDMA_LIB_H

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "core/diag.h"

/* libfabric's soname since 1.0 (its ABI keeps old versions' calls). */
#define RDMA_LIB_SONAME "libfabric.so.1"

/* The library's functions commlab calls, by name. */
#define RDMA_LIB_SYMS(X) \
    X(fi_getinfo)        \
    X(fi_freeinfo)       \
    X(fi_dupinfo)        \
    X(fi_fabric)         \
    X(fi_strerror)       \
    X(fi_version)

typedef struct rdma_lib {
#define RDMA_LIB_FIELD(name) __typeof__(name) *name;
    RDMA_LIB_SYMS(RDMA_LIB_FIELD)
#undef RDMA_LIB_FIELD
} rdma_lib;

/* The table, process-wide as the library it points into is (rdma_lib.c). */
extern rdma_lib rdma__lib;

/* Opens libfabric and fills rdma__lib, once: later calls return 0 at
 * once.  0, or CL_ENOSYS with d naming the library and why it could not
 * be loaded (the table is left empty, the library closed, and a later
 * call tries again). */
int rdma__lib_load(cl_diag *d);

/* The calls, through the table; not in rdma_lib.c, which fills it and
 * names its fields. */
#ifndef RDMA_LIB_LOADER
#define fi_getinfo (*rdma__lib.fi_getinfo)
#define fi_freeinfo (*rdma__lib.fi_freeinfo)
#define fi_dupinfo (*rdma__lib.fi_dupinfo)
#define fi_fabric (*rdma__lib.fi_fabric)
#define fi_strerror (*rdma__lib.fi_strerror)
#define fi_version (*rdma__lib.fi_version)
/* fabric.h's inline fi_allocinfo calls the library's fi_dupinfo by its
 * own name: the same call, through the table. */
#define fi_allocinfo() fi_dupinfo(NULL)
#endif

#endif
