/*
 * file.h - opening the files a user names, safely.
 *
 * Every file commlab reads because a user named it (a config, a machine
 * file, a timeline CSV, a pattern's source) goes through here, so that a
 * FIFO, a device or a folder is refused at once instead of blocking for
 * ever or reading without end, and a file too large to be a config is
 * refused before it is read.  Opening never blocks: a FIFO is opened
 * non-blocking, seen to be one and closed.
 *
 * Every file commlab writes (a trace, a timeline, a machine file, a plot's
 * data and figures, compare --save) goes through file_out, so that a
 * symbolic link or another user's file at the path is refused, never
 * written through.
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

/* ---- files commlab writes ---- */

/* An output on its way: written under a temporary name of its folder and
 * renamed into place by file_out_commit, so that nothing is ever written
 * through a symbolic link or into a file another user can reach.
 *
 * Refused, with d naming the path and why: a path that is a symbolic link
 * (say, another user's in /tmp), a file that belongs to another user (its
 * owner would keep what access it gave itself), a folder, FIFO, socket or
 * block device.  A character device (/dev/null, a terminal) is written in
 * place.  The temporary name is created with O_EXCL and O_NOFOLLOW, so it
 * cannot be taken beforehand; an existing file's mode is kept. */
typedef struct file_out {
    FILE *f;           /* the stream to write; NULL once committed or aborted */
    char path[4096];   /* where the file goes */
    char tmp[4200];    /* the temporary name written; "" when written in place */
} file_out;

/* Opens o for writing path.  `what` names the file in messages ("trace").
 * CL_EINVAL (refused: a link, another user's, not a file) or CL_EIO
 * (cannot create), with d saying which; on error nothing is left open or
 * created. */
int file_out_open(file_out *o, const char *path, const char *what, cl_diag *d);

/* Closes o's stream and puts the file in place.  0, or CL_EIO with d
 * naming the path (a write or the rename failed): the temporary file is
 * then removed and path is as it was. */
int file_out_commit(file_out *o, const char *what, cl_diag *d);

/* Closes o's stream and removes the temporary file: path is as it was.
 * Cannot fail; does nothing once o is committed or aborted. */
void file_out_abort(file_out *o);

/* Whether path could be written (file_out_open's checks; the temporary
 * file made and removed), so a command can refuse before it measures.  The
 * errors of file_out_open; nothing is left behind. */
int file_out_check(const char *path, const char *what, cl_diag *d);

#endif
