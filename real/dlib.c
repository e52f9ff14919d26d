/* dlib.c - opening a shared library on demand (see dlib.h). */
#include "real/dlib.h"

#include <dlfcn.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>

#include "commlab.h"

/* Whether two dispositions are the same handler with the same flags. */
static bool same_action(const struct sigaction *a, const struct sigaction *b)
{
    if (a->sa_flags != b->sa_flags)
        return false;
    if (a->sa_flags & SA_SIGINFO)
        return a->sa_sigaction == b->sa_sigaction;
    return a->sa_handler == b->sa_handler;
}

void *dlib_open(const char *soname, int mode, const char *who, cl_diag *d)
{
    /* Every signal's disposition before (glibc reserves a few real-time
     * signals for itself: sigaction refuses them, and they are skipped). */
    struct sigaction before[NSIG];
    bool known[NSIG];
    for (int s = 1; s < NSIG; s++)
        known[s] = sigaction(s, NULL, &before[s]) == 0;
    void *lib = dlopen(soname, mode);
    for (int s = 1; s < NSIG; s++) {
        struct sigaction now;
        if (known[s] && sigaction(s, NULL, &now) == 0 && !same_action(&now, &before[s]))
            sigaction(s, &before[s], NULL);
    }
    if (!lib) {
        const char *why = dlerror();
        diag_set(d, CL_ENOSYS, "%s needs %s, which cannot be loaded: %s", who, soname,
                 why ? why : "dlopen failed");
    }
    return lib;
}

void *dlib_sym(void *lib, const char *soname, const char *name, cl_diag *d)
{
    dlerror();
    void *p = dlsym(lib, name);
    if (!p) {
        const char *why = dlerror();
        diag_set(d, CL_ENOSYS, "%s has no '%s' (%s): is it the library commlab was built "
                 "against?", soname, name, why ? why : "its address is NULL");
    }
    return p;
}
