/* file.c - opening user-named files: regular files only, sizes capped. */
#include "core/file.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
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

/* ---- outputs ---- */

/* Creates o->tmp beside o->path under a random name nobody could have
 * taken beforehand (O_EXCL; O_NOFOLLOW: a link planted there is refused
 * too).  The fd, or -1 with errno set. */
static int create_tmp(file_out *o)
{
    for (int tries = 0; tries < 64; tries++) {
        unsigned char r[8];
        if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
            return -1;
        unsigned long long x = 0;
        for (size_t i = 0; i < sizeof r; i++)
            x = x << 8 | r[i];
        if (snprintf(o->tmp, sizeof o->tmp, "%s.tmp-%016llx", o->path, x) >= (int)sizeof o->tmp) {
            errno = ENAMETOOLONG;
            return -1;
        }
        int fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY,
                      0666);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    errno = EEXIST;
    return -1;
}

int file_out_open(file_out *o, const char *path, const char *what, cl_diag *d)
{
    o->f = NULL;
    o->tmp[0] = 0;
    if (snprintf(o->path, sizeof o->path, "%s", path) >= (int)sizeof o->path)
        return diag_set(d, CL_EINVAL, "cannot write %s '%.60s...': the path is too long", what,
                        path);
    struct stat st;
    bool exists = lstat(path, &st) == 0;
    if (!exists && errno != ENOENT)
        return diag_set(d, CL_EIO, "cannot write %s '%s': %s", what, path, strerror(errno));
    if (exists && S_ISLNK(st.st_mode))
        return diag_set(d, CL_EINVAL, "cannot write %s '%s': it is a symbolic link (name "
                        "the file itself)", what, path);
    if (exists && S_ISCHR(st.st_mode)) { /* /dev/null, a terminal: written in place */
        int fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
        struct stat now;
        if (fd >= 0 && (fstat(fd, &now) != 0 || !S_ISCHR(now.st_mode))) {
            close(fd);
            fd = -1;
            errno = EINVAL;
        }
        if (fd < 0 || !(o->f = fdopen(fd, "w"))) {
            int e = errno;
            if (fd >= 0)
                close(fd);
            return diag_set(d, CL_EIO, "cannot write %s '%s': %s", what, path, strerror(e));
        }
        return 0;
    }
    if (exists && !S_ISREG(st.st_mode))
        return diag_set(d, CL_EINVAL, "cannot write %s '%s': %s", what, path,
                        kind_of(st.st_mode));
    if (exists && st.st_uid != geteuid())
        return diag_set(d, CL_EINVAL, "cannot write %s '%s': it belongs to another user "
                        "(uid %u, not %u)", what, path, (unsigned)st.st_uid,
                        (unsigned)geteuid());
    int fd = create_tmp(o);
    if (fd < 0) {
        int e = errno;
        o->tmp[0] = 0;
        return diag_set(d, CL_EIO, "cannot write %s '%s': %s", what, path, strerror(e));
    }
    if ((exists && fchmod(fd, st.st_mode & 07777) != 0) || !(o->f = fdopen(fd, "w"))) {
        int e = errno;
        close(fd);
        unlink(o->tmp);
        o->tmp[0] = 0;
        return diag_set(d, CL_EIO, "cannot write %s '%s': %s", what, path, strerror(e));
    }
    return 0;
}

int file_out_commit(file_out *o, const char *what, cl_diag *d)
{
    if (!o->f)
        return diag_set(d, CL_EIO, "cannot write %s '%s': it was not opened", what, o->path);
    bool bad = fflush(o->f) != 0 || ferror(o->f);
    int e = errno;
    if (fclose(o->f) != 0 && !bad) {
        bad = true;
        e = errno;
    }
    o->f = NULL;
    if (!bad && o->tmp[0] && rename(o->tmp, o->path) != 0) {
        bad = true;
        e = errno;
    }
    if (bad) {
        if (o->tmp[0])
            unlink(o->tmp);
        o->tmp[0] = 0;
        return diag_set(d, CL_EIO, "cannot write %s '%s': %s", what, o->path,
                        e ? strerror(e) : "write error");
    }
    o->tmp[0] = 0;
    return 0;
}

int file_out_check(const char *path, const char *what, cl_diag *d)
{
    file_out o;
    int err = file_out_open(&o, path, what, d);
    if (!err)
        file_out_abort(&o);
    return err;
}

void file_out_abort(file_out *o)
{
    if (o->f)
        fclose(o->f);
    o->f = NULL;
    if (o->tmp[0])
        unlink(o->tmp);
    o->tmp[0] = 0;
}
