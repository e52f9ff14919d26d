/* file.c - opening user-named files: regular files only, sizes capped. */
#include "core/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commlab.h"

static const char *kind_of(mode_t m)
{
    if (S_ISDIR(m))
        return "it is a folder";
    if (S_ISFIFO(m))
        return "it is a FIFO";
    if (S_ISSOCK(m))
        return "it is a socket";
    if (S_ISCHR(m) || S_ISBLK(m))
        return "it is a device";
    return "it is not a regular file";
}

/* Opens the regular file path into *fd (blocking reads, close-on-exec).
 * O_NONBLOCK keeps open() itself from waiting for a FIFO's writer. */
static int open_regular(const char *path, const char *what, int *fd, cl_diag *d)
{
    int f = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (f < 0)
        return diag_set(d, errno == ENOENT ? CL_ENOENT : CL_EIO, "cannot read %s '%s': %s",
                        what, path, strerror(errno));
    struct stat st;
    if (fstat(f, &st) != 0) {
        int err = diag_set(d, CL_EIO, "cannot read %s '%s': %s", what, path, strerror(errno));
        close(f);
        return err;
    }
    if (!S_ISREG(st.st_mode)) {
        close(f);
        return diag_set(d, CL_EIO, "cannot read %s '%s': %s", what, path, kind_of(st.st_mode));
    }
    fcntl(f, F_SETFL, fcntl(f, F_GETFL) & ~O_NONBLOCK);
    *fd = f;
    return 0;
}

int file_check_regular(const char *path, const char *what, cl_diag *d)
{
    int fd, err = open_regular(path, what, &fd, d);
    if (!err)
        close(fd);
    return err;
}

int file_open_read(const char *path, const char *what, FILE **out, cl_diag *d)
{
    int fd, err = open_regular(path, what, &fd, d);
    if (err)
        return err;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        err = diag_set(d, CL_ENOMEM, "cannot read %s '%s': %s", what, path, strerror(errno));
        close(fd);
        return err;
    }
    *out = f;
    return 0;
}

int file_read_text(const char *path, const char *what, size_t max, char **text, size_t *len,
                   cl_diag *d)
{
    FILE *f;
    int err = file_open_read(path, what, &f, d);
    if (err)
        return err;
    /* The size read decides, not fstat's: the file may change under us. */
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n + 1 == cap) {
            if (cap > max + 1) /* one byte more than max was read */
                break;
            char *more = realloc(buf, cap * 2);
            if (!more) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = more;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        if (got == 0)
            break;
        n += got;
    }
    if (!buf)
        err = diag_set(d, CL_ENOMEM, "cannot read %s '%s': out of memory", what, path);
    else if (ferror(f))
        err = diag_set(d, CL_EIO, "cannot read %s '%s': %s", what, path, strerror(errno));
    else if (n > max)
        err = diag_set(d, CL_ERANGE, "%s '%s' is larger than %zu bytes: is it the right file?",
                       what, path, max);
    else if (memchr(buf, 0, n))
        err = diag_set(d, CL_EPARSE, "%s '%s' holds a NUL byte: not a text file", what, path);
    fclose(f);
    if (err) {
        free(buf);
        return err;
    }
    buf[n] = 0;
    *text = buf;
    *len = n;
    return 0;
}

void file_discard(const char *path)
{
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISREG(st.st_mode))
        unlink(path);
}
