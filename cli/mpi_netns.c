/* mpi_netns.c - an MPI job reachable from this host only (see
 * mpi_netns.h). */
#ifdef CL_HAVE_MPI
#include "cli/mpi_netns.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* Writes text to the file at path.  0 or the errno. */
static int write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    size_t n = strlen(text);
    int e = write(fd, text, n) == (ssize_t)n ? 0 : errno ? errno : EIO;
    close(fd);
    return e;
}

/* In a new user namespace: this user (uid, gid outside) is its root.  0
 * or the errno. */
static int map_root(uid_t uid, gid_t gid)
{
    char map[64];
    snprintf(map, sizeof map, "0 %u 1", (unsigned)uid);
    int e = write_file("/proc/self/uid_map", map);
    snprintf(map, sizeof map, "0 %u 1", (unsigned)gid);
    if (!e && (e = write_file("/proc/self/setgroups", "deny")) == 0)
        e = write_file("/proc/self/gid_map", map);
    if (!e) { /* Open MPI refuses root unless told it is meant */
        setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
        setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    }
    return e;
}

/* Loopback up in this network namespace.  0 or the errno. */
static int loopback_up(void)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return errno;
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    memcpy(ifr.ifr_name, "lo", 3);
    int e = ioctl(fd, SIOCGIFFLAGS, &ifr) == 0 ? 0 : errno;
    ifr.ifr_flags |= IFF_UP;
    if (!e && ioctl(fd, SIOCSIFFLAGS, &ifr) != 0)
        e = errno;
    close(fd);
    return e;
}

int mpi_netns_enter(char *why, size_t len)
{
    /* Open MPI's own narrowing, in the namespace or not: no TCP transport
     * between the processes (each would listen on 0.0.0.0 and ::). */
    if (!getenv("OMPI_MCA_btl"))
        setenv("OMPI_MCA_btl", "self,vader", 1);
    const char *keep = getenv("COMMLAB_MPI_NETNS");
    if (keep && strcmp(keep, "0") == 0)
        return 0; /* asked to stay in the host's namespace */
    if (unshare(CLONE_NEWNET) != 0) {
        uid_t uid = geteuid();
        gid_t gid = getegid();
        if (unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0)
            return 0; /* refused: the host's namespace, as narrowed above */
        int e = map_root(uid, gid);
        if (e) {
            snprintf(why, len, "cannot map this user into the job's user namespace: %s",
                     strerror(e));
            return -1;
        }
    }
    int e = loopback_up();
    if (e) {
        snprintf(why, len, "cannot bring up loopback in the job's network namespace: %s",
                 strerror(e));
        return -1;
    }
    return 0;
}
#endif
