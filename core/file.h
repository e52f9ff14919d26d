/*
 * file.h - opening the files a user names, safely.
 *
 * Every file commlab reads because a user named it (a config, a machine
 * file, a timeline CSV, a pattern's source) goes through here, so that a
 * FIFO, a device or a folder is refused at once instead of blocking for
 * ever or reading without end, and a file too large to be a config is
 * refused before it is read.  Opening never blocks: a FIFO is opened
 * non-blocking, seen to be one and closed.
 */
#ifndef CL_FILE_H
#define CL_FILE_H

#include <stddef.h>
#include <stdio.h>

#include "core/diag.h"

/* Opens path for reading when it is a regular file.  `what` names the file
 * in messages ("config", "timeline").  CL_ENOENT (missing), CL_EIO (cannot
 * open, or not a regular file) with d saying which; nothing is left open
 * on error. */
int file_open_read(const char *path, const char *what, FILE **out, cl_diag *d);

/* Checks without opening for good that path is a readable regular file;
 * the same errors as file_open_read. */
int file_check_regular(const char *path, const char *what, cl_diag *d);

/* Reads the whole regular file path into *text (malloc'd, NUL-terminated,
 * *len bytes before the NUL).  A file over max bytes is CL_ERANGE; a file
 * holding a NUL byte is CL_EPARSE (text files only).  Besides the errors of
 * file_open_read, CL_ENOMEM; on error nothing is allocated. */
int file_read_text(const char *path, const char *what, size_t max, char **text, size_t *len,
                   cl_diag *d);

/* Removes what a failed write left at path when it is a regular file; a
 * device (/dev/full), a FIFO or a link's target is left alone: unlinking
 * those as root would break the system.  Cannot fail (a file that cannot
 * be removed stays). */
void file_discard(const char *path);

#endif
