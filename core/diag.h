/*
 * diag.h - a diagnostic: the one message a failed call leaves for the CLI.
 *
 * Library code never prints a user-facing error; it fills a cl_diag and
 * returns a CL_E* code.  The CLI prints the message once ("commlab: " +
 * msg).  Messages follow git's style: lowercase, the subject quoted, the bad
 * value shown, no trailing full stop.
 */
#ifndef CL_DIAG_H
#define CL_DIAG_H

#include <stddef.h>

typedef struct cl_diag {
    char msg[512]; /* NUL-terminated message, "" when none was set */
} cl_diag;

/* Formats into d->msg (truncating); d may be NULL.  Keeps errno.
 * Returns err so callers can write `return diag_set(d, CL_EPARSE, ...)`. */
int diag_set(cl_diag *d, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
