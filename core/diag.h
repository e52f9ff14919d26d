/*
 * diag.h - a diagnostic: the one message a failed call leaves for the CLI.
 *
 * Library code never prints a user-facing error; it fills a cl_diag and
 * returns a CL_E* code.  The CLI prints the message once ("commlab: " +
 * msg).  Messages follow git's style: lowercase, the subject quoted, the bad
 * value shown, no trailing full stop.
 *
 * It is also the one type a failure's words are kept in, everywhere (a
 * rank's account, its job slot, the rendezvous's frames): one size, so a
 * message copied from one into another is never cut shorter on the way.
 * Where several things may fail, the first one's words are kept
 * (diag_vfirst): what follows is usually its consequence.
 */
#ifndef CL_DIAG_H
#define CL_DIAG_H

#include <stdarg.h>
#include <stddef.h>

#define DIAG_MAX 512 /* bytes of a message, its NUL included */

typedef struct cl_diag {
    char msg[DIAG_MAX]; /* NUL-terminated message, "" when none was set */
} cl_diag;

/* Formats into d->msg (truncating); d may be NULL.  Keeps errno.
 * Returns err so callers can write `return diag_set(d, CL_EPARSE, ...)`. */
int diag_set(cl_diag *d, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* As diag_set (a va_list), but only when d holds no message yet: the
 * first failure's words win.  Returns err either way. */
int diag_vfirst(cl_diag *d, int err, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

#endif
