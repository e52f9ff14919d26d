/* netlab.c - a switch made of network namespaces, built with ip and tc. */
#include "real/netlab.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "commlab.h"

#define PREFIX "clnl-"       /* every name a netlab makes starts so */
#define BRIDGE "clbr"        /* the switch, in the hub namespace */
#define RANK_DEV "eth0"      /* a rank's end of its pair, in its namespace */
#define NET "169.254.100."   /* link-local; lives only inside the namespaces */
#define QUEUE "50ms"         /* a port's queue: this long at its rate, then drops */
#define MIN_BURST 16384.0    /* bytes: above an MTU-sized frame with headers */
#define MAX_ARGS 24

extern char **environ;

struct netlab {
    pid_t pid;         /* the creating process's, in every name */
    int nranks;
    int made;          /* rank namespaces added so far (0 .. made-1) */
    bool hub;          /* the hub namespace was added */
    double rate;       /* bytes per second, each way per port */
    char (*addr)[24];  /* nranks: "169.254.100.<i+1>" */
};

/* "clnl-P-hub" for rank < 0, else "clnl-P-<rank>". */
static void ns_name(char *buf, size_t cap, pid_t pid, int rank)
{
    if (rank < 0)
        snprintf(buf, cap, PREFIX "%ld-hub", (long)pid);
    else
        snprintf(buf, cap, PREFIX "%ld-%d", (long)pid, rank);
}

/* Runs argv (argv[0] looked up in PATH) with stdin and stdout on /dev/null
 * and its stderr kept in err (the first cap-1 bytes).  Returns its exit
 * status (0: it succeeded), 127 when it could not be started (err says
 * why), or 128+N when signal N ended it. */
static int spawn(const char *const *argv, char *err, size_t cap)
{
    err[0] = 0;
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) < 0) {
        snprintf(err, cap, "pipe: %s", strerror(errno));
        return 127;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, pfd[1], 2);
    pid_t pid;
    /* posix_spawnp takes char *const[] for history's sake; it writes nothing. */
    int e = posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(pfd[1]);
    if (e) {
        close(pfd[0]);
        snprintf(err, cap, "cannot run '%s': %s", argv[0], strerror(e));
        return e == ENOENT ? 126 : 127;
    }
    size_t n = 0;
    char sink[256];
    for (;;) {
        ssize_t r = n + 1 < cap ? read(pfd[0], err + n, cap - 1 - n) : read(pfd[0], sink, sizeof sink);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        if (n + 1 < cap)
            n += (size_t)r;
    }
    err[n] = 0;
    close(pfd[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return 127;
    /* ip's message, on one line: "Error: ...". */
    for (char *p = err; *p; p++)
        if (*p == '\n')
            *p = *(p + 1) ? ' ' : 0;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Runs the command of the NULL-terminated arguments; when it fails, d says
 * "--netlab: cannot WHAT: its stderr" and CL_ENOSYS is returned (the only
 * reason left once we are root is a kernel or an iproute2 without what a
 * netlab needs). */
static int cmd(cl_diag *d, const char *what, ...)
{
    const char *argv[MAX_ARGS + 1];
    int n = 0;
    va_list ap;
    va_start(ap, what);
    const char *s;
    while ((s = va_arg(ap, const char *)) != NULL && n < MAX_ARGS)
        argv[n++] = s;
    va_end(ap);
    argv[n] = NULL;
    char err[300];
    int rc = spawn(argv, err, sizeof err);
    if (rc == 0)
        return 0;
    if (rc == 126)
        return diag_set(d, CL_ENOSYS, "--netlab needs '%s' (iproute2) to build its network: %s",
                        argv[0], err);
    return diag_set(d, CL_ENOSYS, "--netlab: cannot %s: %s", what,
                    err[0] ? err : rc > 128 ? "killed by a signal" : "it failed");
}

/* ---- leftovers of processes that were killed outright ---- */

/* pid runs and is not a zombie (a zombie is gone: nothing of
 * it will delete anything). */
static bool running(pid_t pid)
{
    if (kill(pid, 0) < 0 && errno == ESRCH)
        return false;
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return true; /* no /proc: believe kill */
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')');
    return !(p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'));
}

/* Deletes every clnl-P-* whose process P is gone, or is self (a pid that
 * was reused: self has no netlab yet).  Best effort: a name another
 * process deletes at the same moment is simply gone. */
static void reap_stale(pid_t self)
{
    DIR *dir = opendir(NETLAB_NETNS_DIR);
    if (!dir)
        return;
    char (*names)[64] = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        const char *s = e->d_name;
        if (strncmp(s, PREFIX, strlen(PREFIX)) != 0 || strlen(s) >= sizeof *names)
            continue;
        char *end;
        long pid = strtol(s + strlen(PREFIX), &end, 10);
        if (end == s + strlen(PREFIX) || *end != '-' || pid <= 0)
            continue;
        if (pid != (long)self && running((pid_t)pid))
            continue;
        if (n == cap) {
            size_t ncap = cap ? 2 * cap : 16;
            void *m = realloc(names, ncap * sizeof *names);
            if (!m)
                break;
            names = m;
            cap = ncap;
        }
        memcpy(names[n++], s, strlen(s) + 1); /* fits: checked above */
    }
    closedir(dir);
    for (size_t i = 0; i < n; i++)
        cmd(NULL, "delete a leftover namespace", "ip", "netns", "del", names[i], (char *)NULL);
    free(names);
}

/* ---- building ---- */

/* Rank i's namespace, its veth pair to the switch, addresses and limits. */
static int add_port(netlab *nl, int i, const char *rate, const char *burst, cl_diag *d)
{
    char hub[64], ns[64], port[16], addr[32], what[160];
    ns_name(hub, sizeof hub, nl->pid, -1);
    ns_name(ns, sizeof ns, nl->pid, i);
    snprintf(port, sizeof port, "p%d", i);
    snprintf(addr, sizeof addr, "%s/24", nl->addr[i]);
    snprintf(what, sizeof what, "add the network namespace '%s'", ns);
    int err = cmd(d, what, "ip", "netns", "add", ns, (char *)NULL);
    if (err)
        return err;
    nl->made = i + 1;
    snprintf(what, sizeof what, "add a veth pair from '%s' to '%s'", hub, ns);
    if ((err = cmd(d, what, "ip", "-n", hub, "link", "add", port, "type", "veth", "peer",
                   "name", RANK_DEV, "netns", ns, (char *)NULL)))
        return err;
    snprintf(what, sizeof what, "plug '%s' into the bridge in '%s'", port, hub);
    if ((err = cmd(d, what, "ip", "-n", hub, "link", "set", port, "master", BRIDGE, "up",
                   (char *)NULL)))
        return err;
    snprintf(what, sizeof what, "address '%s' in '%s'", addr, ns);
    if ((err = cmd(d, what, "ip", "-n", ns, "addr", "add", addr, "dev", RANK_DEV,
                   (char *)NULL)) ||
        (err = cmd(d, what, "ip", "-n", ns, "link", "set", RANK_DEV, "up", (char *)NULL)) ||
        (err = cmd(d, what, "ip", "-n", ns, "link", "set", "lo", "up", (char *)NULL)))
        return err;
    /* The two directions of the port: what the rank sends, what it gets. */
    snprintf(what, sizeof what, "limit '%s' in '%s' with tc tbf (is sch_tbf in this kernel?)",
             RANK_DEV, ns);
    if ((err = cmd(d, what, "tc", "-n", ns, "qdisc", "add", "dev", RANK_DEV, "root", "tbf",
                   "rate", rate, "burst", burst, "latency", QUEUE, (char *)NULL)))
        return err;
    snprintf(what, sizeof what, "limit '%s' in '%s' with tc tbf (is sch_tbf in this kernel?)",
             port, hub);
    return cmd(d, what, "tc", "-n", hub, "qdisc", "add", "dev", port, "root", "tbf", "rate",
               rate, "burst", burst, "latency", QUEUE, (char *)NULL);
}

int netlab_create(netlab **out, int nranks, double rate_Bps, cl_diag *d)
{
    *out = NULL;
    if (nranks < 1 || nranks > NETLAB_MAX_RANKS)
        return diag_set(d, CL_EINVAL, "--netlab runs 1 to %d ranks, got %d", NETLAB_MAX_RANKS,
                        nranks);
    if (!(rate_Bps >= 1000))
        return diag_set(d, CL_EINVAL, "--netlab needs a rate of at least 8 kbit/s, got %g B/s",
                        rate_Bps);
    if (geteuid() != 0)
        return diag_set(d, CL_ENOSYS, "--netlab needs root to create network namespaces (run "
                        "as root or without --netlab)");
    netlab *nl = calloc(1, sizeof *nl);
    if (!nl || !(nl->addr = calloc((size_t)nranks, sizeof *nl->addr))) {
        free(nl);
        return diag_set(d, CL_ENOMEM, "out of memory");
    }
    nl->pid = getpid();
    nl->nranks = nranks;
    nl->rate = rate_Bps;
    for (int i = 0; i < nranks; i++)
        snprintf(nl->addr[i], sizeof nl->addr[i], NET "%d", i + 1);
    reap_stale(nl->pid);

    char hub[64], what[160], rate[32], burst[32];
    ns_name(hub, sizeof hub, nl->pid, -1);
    snprintf(rate, sizeof rate, "%.0fbit", rate_Bps * 8);
    snprintf(burst, sizeof burst, "%.0f", netlab_burst(rate_Bps));
    snprintf(what, sizeof what, "create network namespaces here ('ip netns add %s')", hub);
    int err = cmd(d, what, "ip", "netns", "add", hub, (char *)NULL);
    if (!err)
        nl->hub = true;
    snprintf(what, sizeof what, "add the bridge '%s' in '%s'", BRIDGE, hub);
    if (!err)
        err = cmd(d, what, "ip", "-n", hub, "link", "add", BRIDGE, "type", "bridge",
                  (char *)NULL);
    if (!err)
        err = cmd(d, what, "ip", "-n", hub, "link", "set", BRIDGE, "up", (char *)NULL);
    for (int i = 0; i < nranks && !err; i++)
        err = add_port(nl, i, rate, burst, d);
    if (err) {
        netlab_destroy(nl);
        return err;
    }
    *out = nl;
    return 0;
}

/* ---- using it ---- */

int netlab_enter(const netlab *nl, int rank, cl_diag *d)
{
    char ns[64], path[128];
    ns_name(ns, sizeof ns, nl->pid, rank);
    snprintf(path, sizeof path, NETLAB_NETNS_DIR "/%s", ns);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return diag_set(d, CL_EIO, "rank %d: cannot open its network namespace '%s': %s", rank,
                        path, strerror(errno));
    int rc = setns(fd, CLONE_NEWNET);
    int e = errno;
    close(fd);
    if (rc < 0)
        return diag_set(d, CL_EIO, "rank %d: cannot enter its network namespace '%s': %s",
                        rank, ns, strerror(e));
    return 0;
}

const char *netlab_addr(const netlab *nl, int rank)
{
    return nl->addr[rank];
}

double netlab_rate(const netlab *nl)
{
    return nl->rate;
}

int netlab_ports(const netlab *nl)
{
    return nl->nranks;
}

void netlab_destroy(netlab *nl)
{
    if (!nl)
        return;
    char ns[64];
    for (int i = 0; i < nl->made; i++) {
        ns_name(ns, sizeof ns, nl->pid, i);
        cmd(NULL, "delete a namespace", "ip", "netns", "del", ns, (char *)NULL);
    }
    if (nl->hub) {
        ns_name(ns, sizeof ns, nl->pid, -1);
        cmd(NULL, "delete a namespace", "ip", "netns", "del", ns, (char *)NULL);
    }
    free(nl->addr);
    free(nl);
}

double netlab_burst(double rate_Bps)
{
    /* One millisecond at the rate: a port that idled sends at most that
     * much at once, then the rate holds.  Less starves TCP: at 16 KiB a
     * 1 Gbit/s port carried a 4 MiB ping-pong at 96 MB/s, not 122. */
    return rate_Bps / 1000 > MIN_BURST ? rate_Bps / 1000 : MIN_BURST;
}
