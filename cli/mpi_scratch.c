/* mpi_scratch.c - an MPI job's own folder for Open MPI's files (see
 * mpi_scratch.h). */
#ifdef CL_HAVE_MPI
#include "cli/mpi_scratch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PREFIX "commlab-mpi."

/* Where scratch folders go: /dev/shm (Open MPI's own default for its
 * segments, memory not disk), else $TMPDIR, else /tmp. */
static const char *scratch_base(void)
{
    if (access("/dev/shm", W_OK | X_OK) == 0)
        return "/dev/shm";
    const char *t = getenv("TMPDIR");
    return t && *t == '/' && access(t, W_OK | X_OK) == 0 ? t : "/tmp";
}

/* The maker's pid in a scratch folder's name, "commlab-mpi.PID.XXXXXX", or
 * 0 when name is not one. */
static pid_t maker_of(const char *name)
{
    if (strncmp(name, PREFIX, strlen(PREFIX)) != 0)
        return 0;
    char *end;
    long pid = strtol(name + strlen(PREFIX), &end, 10);
    if (end == name + strlen(PREFIX) || *end != '.' || strlen(end + 1) != 6 || pid <= 0 ||
        pid > 1L << 30)
        return 0;
    return (pid_t)pid;
}

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *f)
{
    (void)st;
    (void)type;
    (void)f;
    remove(path);
    return 0; /* on with the rest */
}

void mpi_scratch_remove(const char *path)
{
    if (path && *path)
        nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Removes this user's scratch folders in base whose maker is gone. */
static void remove_orphans(const char *base)
{
    DIR *dir = opendir(base);
    if (!dir)
        return;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        pid_t maker = maker_of(e->d_name);
        struct stat st;
        if (!maker || fstatat(dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
            !(kill(maker, 0) < 0 && errno == ESRCH))
            continue;
        char path[MPI_SCRATCH_MAX];
        if (snprintf(path, sizeof path, "%s/%s", base, e->d_name) < (int)sizeof path)
            mpi_scratch_remove(path);
    }
    closedir(dir);
}

int mpi_scratch_make(char *path)
{
    const char *base = scratch_base();
    remove_orphans(base);
    if (snprintf(path, MPI_SCRATCH_MAX, "%s/" PREFIX "%d.XXXXXX", base, (int)getpid()) >=
        MPI_SCRATCH_MAX) {
        path[0] = 0;
        return ENAMETOOLONG;
    }
    if (!mkdtemp(path)) {
        int e = errno;
        path[0] = 0;
        return e;
    }
    return 0;
}
#endif
