/* mpib_lib.c - the MPI library itself: starting it once per process,
 * its name, and its eager limits through the MPI tool interface. */
#ifdef CL_HAVE_MPI
#include "real/mpi/mpib.h"

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "real/mpi/mpib_impl.h"

#define EXIT_FAILED 4 /* the CLI's "a rank failed" (cli/cli.h) */

/* MPI is process-wide: it is started once and finished once, so whether it
 * was, and whether a run left it dirty, is process-wide too. */
static struct {
    bool started;
    bool dirty; /* a run failed: a peer may still hold a message to us */
    pid_t pid;  /* the process that started it: the rank's own */
    pid_t forker; /* the process forking (pthread_atfork's prepare) */
    int rank;     /* its rank */
    MPI_Comm user, inner, sums; /* the world's context (mpib__world) */
} lib;

/* ---- processes a rank's pattern forks ----
 *
 * A child of the rank's process holds its MPI state, its descriptors (the
 * launcher's output pipes among them: mpirun waits until they close) and
 * its signal mask (SIGTERM blocked by the watchdog's thread): left alone,
 * it would keep the job from ending and outlive it.  Every process forked
 * in a rank's process dies with the thread that forked it
 * (PR_SET_PDEATHSIG), and one that goes on into commlab's calls is ended
 * there (mpib__own_process): only the rank's own process talks MPI. */

static void fork_prepare(void)
{
    lib.forker = getpid();
}

static void fork_child(void)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != lib.forker) /* the parent died before the line above */
        raise(SIGKILL);
}

static void fork_hook(void)
{
    pthread_atfork(fork_prepare, NULL, fork_child);
}

void mpib__own_process(int rank, const char *call)
{
    if (getpid() == lib.pid)
        return;
    fprintf(stderr, "commlab: rank %d: a process its pattern forked (pid %d) went on into "
            "%s: only the rank's own process talks MPI; it is ended\n", rank, (int)getpid(),
            call);
    _exit(EXIT_FAILED);
}

/* The processes this one forked that still run, said on stderr: they end
 * with it.  Nothing when the kernel does not list children. */
static void say_children(void)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)getpid());
    FILE *f = fopen(path, "re");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    while (n > 0 && (buf[n - 1] == ' ' || buf[n - 1] == '\n'))
        n--;
    buf[n] = 0;
    bool many = strchr(buf, ' ') != NULL;
    if (n)
        fprintf(stderr, "commlab: rank %d: the process%s its pattern forked (pid%s %s) still "
                "ran when the rank's process ended: %s with it\n", lib.rank, many ? "es" : "",
                many ? "s" : "", buf, many ? "they end" : "it ends");
}

int mpib_init(int want_rank, int want_size, cl_diag *d)
{
    if (lib.started)
        return 0;
    int provided, rank, size, err = mpib__load(d);
    if (err)
        return err;
    /* Ranks call MPI from the thread that started it; the watchdog thread
     * never calls MPI. */
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        return diag_set(d, CL_EIO, "MPI_Init_thread failed");
    lib.started = true;
    lib.pid = getpid();
    lib.rank = want_rank;
    static pthread_once_t hooked = PTHREAD_ONCE_INIT;
    pthread_once(&hooked, fork_hook);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank != want_rank || size != want_size) {
        lib.dirty = true;
        return diag_set(d, CL_EINVAL, "MPI says this process is rank %d of %d, its launcher's "
                        "environment said rank %d of %d", rank, size, want_rank, want_size);
    }
    if (MPI_Comm_dup(MPI_COMM_WORLD, &lib.user) != MPI_SUCCESS ||
        MPI_Comm_dup(MPI_COMM_WORLD, &lib.inner) != MPI_SUCCESS ||
        MPI_Comm_dup(MPI_COMM_WORLD, &lib.sums) != MPI_SUCCESS) {
        lib.dirty = true;
        return diag_set(d, CL_EIO, "MPI_Comm_dup of MPI_COMM_WORLD failed");
    }
    return 0;
}

void mpib__world(MPI_Comm *user, MPI_Comm *inner, MPI_Comm *sums)
{
    *user = lib.user;
    *inner = lib.inner;
    *sums = lib.sums;
}

void mpib__run_failed(void)
{
    lib.dirty = true;
}

void mpib_finalize(void)
{
    if (!lib.started || getpid() != lib.pid)
        return; /* a child the pattern forked: MPI is its parent's */
    say_children();
    if (!lib.dirty)
        MPI_Finalize();
    lib.started = false;
}

int mpib_bcast(void *buf, size_t bytes)
{
    if (bytes > INT_MAX || MPI_Bcast(buf, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
        return CL_EIO;
    return 0;
}

int mpib_library(char *buf, size_t len, cl_diag *d)
{
    int err = mpib__load(d);
    if (err)
        return err;
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int n = 0;
    MPI_Get_library_version(v, &n);
    v[n < (int)sizeof v ? n : (int)sizeof v - 1] = 0;
    v[strcspn(v, ",\n")] = 0; /* "Open MPI v4.1.4, package: ..." -> its first part */
    snprintf(buf, len, "%s", v);
    return 0;
}

/* ---- eager limits: MPI_T control variables ---- */

/* A control variable's value, whatever integer type it has. */
static bool cvar_read(int i, MPI_Datatype type, uint64_t *out)
{
    MPI_T_cvar_handle h;
    int count;
    if (MPI_T_cvar_handle_alloc(i, NULL, &h, &count) != MPI_SUCCESS)
        return false;
    bool ok = count == 1;
    union { /* room for any integer type, count 1 */
        unsigned long long ull;
        unsigned long ul;
        unsigned u;
        int i;
    } v = {0};
    if (ok) {
        ok = MPI_T_cvar_read(h, &v) == MPI_SUCCESS;
        if (type == MPI_UNSIGNED_LONG_LONG || type == MPI_UINT64_T)
            *out = v.ull;
        else if (type == MPI_UNSIGNED_LONG)
            *out = v.ul;
        else if (type == MPI_UNSIGNED)
            *out = v.u;
        else if (type == MPI_INT)
            *out = v.i < 0 ? 0 : (uint64_t)v.i;
        else
            ok = false;
    }
    MPI_T_cvar_handle_free(&h);
    return ok;
}

static bool ends_with(const char *s, const char *tail)
{
    size_t a = strlen(s), b = strlen(tail);
    return a >= b && strcmp(s + a - b, tail) == 0;
}

int mpib_limits(mpib_limit *v, size_t cap, size_t *n, cl_diag *d)
{
    int provided, num;
    *n = 0;
    int err = mpib__load(d);
    if (err)
        return err;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
        return diag_set(d, CL_ENOSYS, "the MPI library's tool interface (MPI_T) does not "
                        "start");
    if (MPI_T_cvar_get_num(&num) != MPI_SUCCESS)
        num = 0;
    for (int i = 0; i < num && *n < cap; i++) {
        char name[256], desc[8];
        int name_len = sizeof name, desc_len = sizeof desc, verbosity, bind, scope;
        MPI_Datatype type;
        MPI_T_enum enumtype;
        if (MPI_T_cvar_get_info(i, name, &name_len, &verbosity, &type, &enumtype, desc,
                                &desc_len, &bind, &scope) != MPI_SUCCESS ||
            !ends_with(name, "eager_limit") || strlen(name) >= sizeof v->name)
            continue;
        uint64_t bytes;
        if (!cvar_read(i, type, &bytes))
            continue;
        memcpy(v[*n].name, name, strlen(name) + 1); /* fits: checked above */
        v[*n].bytes = bytes;
        (*n)++;
    }
    MPI_T_finalize();
    if (*n == 0)
        return diag_set(d, CL_ENOSYS, "the MPI library names no eager limit in its control "
                        "variables (MPI_T)");
    return 0;
}

int mpib_eager_limit(bool one_host, uint64_t *bytes)
{
    static const char *const local[] = {"btl_vader_eager_limit", "btl_sm_eager_limit"};
    static const char *const remote[] = {"btl_tcp_eager_limit"};
    const char *const *want = one_host ? local : remote;
    size_t nwant = one_host ? 2 : 1;
    mpib_limit v[64];
    size_t n;
    cl_diag d = {{0}};
    if (mpib_limits(v, sizeof v / sizeof v[0], &n, &d))
        return CL_ENOSYS;
    for (size_t k = 0; k < nwant; k++)
        for (size_t i = 0; i < n; i++)
            if (strcmp(v[i].name, want[k]) == 0) {
                *bytes = v[i].bytes;
                return 0;
            }
    return CL_ENOSYS;
}
#endif
