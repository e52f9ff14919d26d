/* diag.c - filling a cl_diag. */
#include "core/diag.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

int diag_set(cl_diag *d, int err, const char *fmt, ...)
{
    int saved = errno;
    if (d) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(d->msg, sizeof d->msg, fmt, ap);
        va_end(ap);
    }
    errno = saved;
    return err;
}

int diag_vfirst(cl_diag *d, int err, const char *fmt, va_list ap)
{
    int saved = errno;
    if (d && !d->msg[0])
        vsnprintf(d->msg, sizeof d->msg, fmt, ap);
    errno = saved;
    return err;
}
