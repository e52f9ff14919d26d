/* world.c - a process's rank and world from the command line or a
 * launcher's environment; see world.h for the order and the rendezvous. */
#include "real/world.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define JOIN_TIMEOUT_DEFAULT 60.0
#define SECRET_MIN_CHARS 16

/* A launcher's convention: the variables that carry rank and size, the ones
 * that say every rank is on this host, and the one naming its job. */
typedef struct launcher_env {
    const char *name;
    const char *rank, *size;
    const char *local_rank;
    const char *local_size; /* == size: one host (NULL: cannot tell this way) */
    const char *nodes;      /* == 1: one host (NULL: cannot tell this way) */
    const char *job, *step; /* name the job: the local socket, the key's salt */
} launcher_env;

static const launcher_env launchers[] = {
    {"torchrun's variables (RANK, WORLD_SIZE)", "RANK", "WORLD_SIZE", "LOCAL_RANK",
     "LOCAL_WORLD_SIZE", NULL, "TORCHELASTIC_RUN_ID", NULL},
    {"Open MPI (OMPI_COMM_WORLD_RANK)", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
     "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", NULL, "OMPI_MCA_ess_base_jobid",
     NULL},
    {"PMI (PMI_RANK)", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", NULL,
     "PMI_KVSNAME", NULL},
    /* SLURM_STEP_ID: inside an srun step, not a batch script's own shell */
    {"Slurm (SLURM_PROCID)", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", NULL,
     "SLURM_STEP_NUM_NODES", "SLURM_JOB_ID", "SLURM_STEP_ID"},
};

static int parse_count(const char *what, const char *text, long min, long max, int *out,
                       cl_diag *d)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (!*text || *end || errno || v < min || v > max)
        return diag_set(d, CL_EINVAL, "%s must be an integer in %ld..%ld, got '%s'", what, min,
                        max, text);
    *out = (int)v;
    return 0;
}

bool world_is_loopback(const char *host)
{
    if (strcmp(host, "localhost") == 0)
        return true;
    struct in_addr v4;
    struct in6_addr v6;
    if (inet_pton(AF_INET, host, &v4) == 1)
        return (ntohl(v4.s_addr) >> 24) == 127;
    return inet_pton(AF_INET6, host, &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

/* "host:port" or "[v6]:port" into w's master fields. */
static int split_master(real_world *w, const char *what, const char *text, cl_diag *d)
{
    const char *host = text, *colon;
    size_t hlen;
    if (text[0] == '[') {
        const char *close = strchr(text, ']');
        if (!close || close[1] != ':')
            return diag_set(d, CL_EINVAL, "%s must be HOST:PORT or [IPV6]:PORT, got '%s'", what,
                            text);
        host = text + 1;
        hlen = (size_t)(close - host);
        colon = close + 1;
    } else {
        colon = strrchr(text, ':');
        if (!colon)
            return diag_set(d, CL_EINVAL, "%s must be HOST:PORT, got '%s'", what, text);
        hlen = (size_t)(colon - text);
    }
    if (hlen == 0 || hlen >= sizeof w->master_host)
        return diag_set(d, CL_EINVAL, "%s has no usable host: '%s'", what, text);
    memcpy(w->master_host, host, hlen);
    w->master_host[hlen] = '\0';
    int port;
    if (parse_count("the master's port", colon + 1, 1, 65535, &port, d))
        return CL_EINVAL;
    snprintf(w->master_port, sizeof w->master_port, "%d", port);
    return 0;
}

/* Rank and size: the command line, else the first launcher whose rank
 * variable is set.  *env is that launcher (NULL: the command line or none). */
static int find_rank(real_world *w, const world_args *a, world_getenv_fn *get,
                     const launcher_env **env, cl_diag *d)
{
    *env = NULL;
    if (a->rank >= 0 || a->world >= 0) {
        if (a->rank < 0 || a->world < 0)
            return diag_set(d, CL_EINVAL, "--rank and --world go together: give both");
        w->rank = a->rank;
        w->size = a->world;
        snprintf(w->source, sizeof w->source, "the command line (--rank, --world)");
    } else {
        for (size_t i = 0; i < sizeof launchers / sizeof launchers[0] && !*env; i++) {
            const launcher_env *l = &launchers[i];
            const char *r = get(l->rank);
            if (!r || (l->step && !get(l->step)))
                continue;
            const char *s = get(l->size);
            if (!s)
                return diag_set(d, CL_EINVAL, "%s is set but %s is not: cannot tell the "
                                "world's size", l->rank, l->size);
            if (parse_count(l->rank, r, 0, WORLD_MAX_RANKS - 1, &w->rank, d) ||
                parse_count(l->size, s, 1, WORLD_MAX_RANKS, &w->size, d))
                return CL_EINVAL;
            snprintf(w->source, sizeof w->source, "%s", l->name);
            *env = l;
        }
        if (!*env)
            return 0; /* no world: a local run */
    }
    if (w->size < 1 || w->size > WORLD_MAX_RANKS)
        return diag_set(d, CL_EINVAL, "the world's size must be in 1..%d, got %d",
                        WORLD_MAX_RANKS, w->size);
    if (w->rank < 0 || w->rank >= w->size)
        return diag_set(d, CL_EINVAL, "rank %d is outside a world of %d ranks (0..%d)", w->rank,
                        w->size, w->size - 1);
    w->local_rank = -1;
    if (*env && (*env)->local_rank && get((*env)->local_rank))
        parse_count((*env)->local_rank, get((*env)->local_rank), 0, WORLD_MAX_RANKS - 1,
                    &w->local_rank, d);
    return 0;
}

/* Whether the launcher says every rank runs on this host. */
static bool one_host(const launcher_env *l, world_getenv_fn *get, int size)
{
    if (!l)
        return false;
    if (l->local_size && get(l->local_size))
        return atoi(get(l->local_size)) == size;
    if (l->nodes && get(l->nodes))
        return atoi(get(l->nodes)) == 1;
    return false;
}

/* The launcher's job and step, as one id ("" by hand or when unset). */
static void find_job_id(real_world *w, const launcher_env *l, world_getenv_fn *get)
{
    const char *job = l && l->job ? get(l->job) : NULL;
    const char *step = l && l->step ? get(l->step) : NULL;
    if (job)
        snprintf(w->job_id, sizeof w->job_id, "%.60s%s%.20s", job, step ? "." : "",
                 step ? step : "");
}

static int take_secret(real_world *w, const char *text, cl_diag *d)
{
    if (strlen(text) < SECRET_MIN_CHARS)
        return diag_set(d, CL_EINVAL, "COMMLAB_SECRET must have at least %d characters "
                        "(every process of the run is given the same one; a random one of "
                        "128 bits: `openssl rand -hex 16`)", SECRET_MIN_CHARS);
    char salt[16 + sizeof w->job_id];
    int n = snprintf(salt, sizeof salt, "commlab-secret|%s", w->job_id);
    auth_pbkdf2_sha256(text, strlen(text), salt, (size_t)n, WORLD_KDF_ROUNDS, w->secret);
    w->have_secret = true;
    return 0;
}

/* Whether dir is a folder of this user's that no one else may enter (a
 * link is not: its target could change). */
static bool private_folder(const char *dir)
{
    struct stat st;
    return lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
           !(st.st_mode & 077);
}

/* The private folder and the socket's name in it, `what` (only letters,
 * digits, '.', '-' and '_' are kept; others become '_').  A predictable
 * name in a folder others may write in (/tmp/commlab-UID) could be taken
 * by another user first; a fresh mkdtemp folder cannot. */
static void unix_place(real_world *w, world_getenv_fn *get, const char *what)
{
    snprintf(w->unix_name, sizeof w->unix_name, "%.46s", what);
    for (char *c = w->unix_name; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '.' && *c != '-' && *c != '_')
            *c = '_';
    const char *xdg = get("XDG_RUNTIME_DIR");
    if (xdg && xdg[0] == '/' && strlen(xdg) < 48 && private_folder(xdg)) {
        snprintf(w->unix_dir, sizeof w->unix_dir, "%s/commlab", xdg);
        snprintf(w->unix_path, sizeof w->unix_path, "%.60s/%.46s", w->unix_dir, w->unix_name);
    } else {
        const char *tmp = get("TMPDIR");
        if (!tmp || tmp[0] != '/' || strlen(tmp) >= 32)
            tmp = "/tmp";
        snprintf(w->unix_dir, sizeof w->unix_dir, "%s/commlab-%u.XXXXXX", tmp,
                 (unsigned)geteuid());
        w->unix_fresh = true;
    }
    w->rdv = WORLD_RDV_UNIX;
}

int world_detect(real_world *w, const world_args *a, world_getenv_fn *get, cl_diag *d)
{
    memset(w, 0, sizeof *w);
    const launcher_env *env;
    int err = find_rank(w, a, get, &env, d);
    if (err || w->size == 0) {
        if (!err && a->master)
            return diag_set(d, CL_EINVAL, "--master needs --rank and --world (or a launcher's "
                            "environment)");
        w->size = 0;
        return err;
    }
    w->join_timeout = a->join_timeout > 0 ? a->join_timeout : JOIN_TIMEOUT_DEFAULT;
    find_job_id(w, env, get);
    if (a->secret && take_secret(w, a->secret, d))
        return CL_EINVAL;
    const char *maddr = get("MASTER_ADDR"), *mport = get("MASTER_PORT");
    if (a->master) {
        err = split_master(w, "--master", a->master, d);
    } else if (maddr || mport) {
        if (!maddr || !mport)
            return diag_set(d, CL_EINVAL, "%s is set but %s is not: the rendezvous needs both",
                            maddr ? "MASTER_ADDR" : "MASTER_PORT",
                            maddr ? "MASTER_PORT" : "MASTER_ADDR");
        if (!*maddr || strlen(maddr) >= sizeof w->master_host)
            return diag_set(d, CL_EINVAL, "MASTER_ADDR has no usable host: '%s'", maddr);
        snprintf(w->master_host, sizeof w->master_host, "%s", maddr);
        int port;
        err = parse_count("MASTER_PORT", mport, 1, 65535, &port, d);
        if (!err)
            snprintf(w->master_port, sizeof w->master_port, "%d", port);
    } else if (one_host(env, get, w->size) && w->job_id[0]) {
        char what[sizeof w->job_id + 8];
        snprintf(what, sizeof what, "job-%s", w->job_id);
        unix_place(w, get, what);
        return 0;
    } else {
        return diag_set(d, CL_EINVAL, "rank %d of %d (from %s) does not know where rank 0 is: "
                        "set MASTER_ADDR and MASTER_PORT (or --master HOST:PORT) on every "
                        "process, and COMMLAB_SECRET when they are on several hosts",
                        w->rank, w->size, w->source);
    }
    if (err)
        return err;
    if (!w->have_secret) {
        if (!world_is_loopback(w->master_host))
            return diag_set(d, CL_EINVAL, "a run across hosts needs a shared secret: set "
                            "COMMLAB_SECRET (16 characters or more, the same on every process; "
                            "e.g. from `openssl rand -hex 16`) - master %s is not a loopback "
                            "address", w->master_host);
        /* This host only: a private local socket named after the port. */
        char what[16];
        snprintf(what, sizeof what, "port-%s", w->master_port);
        unix_place(w, get, what);
    }
    return 0;
}

void world_release(real_world *w)
{
    auth_wipe(w->secret, sizeof w->secret);
    w->have_secret = false;
}
