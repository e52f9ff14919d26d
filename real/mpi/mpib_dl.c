/* mpib_dl.c - opening the MPI library (see mpib_dl.h). */
#ifdef CL_HAVE_MPI
#define MPIB_LOADER
#include "real/mpi/mpib_dl.h"

#include <dlfcn.h>

#include "commlab.h"
#include "real/dlib.h"

/* A global, unlike commlab's other state: the library is loaded once per
 * process, and the macros of mpib_dl.h name this table from every file
 * of the backend. */
mpib_syms mpib__lib;

int mpib__load(cl_diag *d)
{
    if (mpib__lib.MPI_Init_thread)
        return 0;
    void *h = dlib_open(MPIB_SONAME, RTLD_NOW | RTLD_GLOBAL,
                        "the mpi backend (Open MPI: Debian package libopenmpi3)", d);
    if (!h)
        return CL_ENOSYS;
    /* Filled aside and copied whole: the table is either empty or complete. */
    mpib_syms t;
#define MPIB_SYM_FIND(name)                                                      \
    if (!(t.name = (__typeof__(t.name))dlib_sym(h, MPIB_SONAME, #name, d))) { \
        dlclose(h);                                                              \
        return CL_ENOSYS;                                                        \
    }
    MPIB_SYMS(MPIB_SYM_FIND)
#undef MPIB_SYM_FIND
    mpib__lib = t;
    return 0;
}
#endif
