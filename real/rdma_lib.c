/* rdma_lib.c - opening libfabric (see rdma_lib.h). */
#define RDMA_LIB_LOADER
#include "real/rdma_lib.h"

#include <dlfcn.h>

#include "commlab.h"
#include "real/dlib.h"

/* A global, unlike commlab's other state: the library is loaded once per
 * process, and the macros of rdma_lib.h name this table from every file
 * of the transport. */
rdma_lib rdma__lib;

int rdma__lib_load(cl_diag *d)
{
    if (rdma__lib.fi_version)
        return 0;
    void *h = dlib_open(RDMA_LIB_SONAME, RTLD_NOW | RTLD_LOCAL,
                        "the rdma backend (Debian package libfabric1)", d);
    if (!h)
        return CL_ENOSYS;
    /* Filled aside and copied whole: the table is either empty or complete. */
    rdma_lib t;
#define RDMA_LIB_FIND(name)                                                         \
    if (!(t.name = (__typeof__(t.name))dlib_sym(h, RDMA_LIB_SONAME, #name, d))) { \
        dlclose(h);                                                                 \
        return CL_ENOSYS;                                                           \
    }
    RDMA_LIB_SYMS(RDMA_LIB_FIND)
#undef RDMA_LIB_FIND
    rdma__lib = t;
    return 0;
}
