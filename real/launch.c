/* launch.c - the launcher of measured runs: fork, watch (launch_watch.c),
 * gather. */
#include "real/launch.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/debug.h"
#include "core/units.h"
#include "core/waitfor.h"
#include "real/bind.h"
#include "real/launch_impl.h"
#include "real/netlab.h"

#define RECORDS_PER_RUN (1u << 20) /* records kept over all ranks with --trace */

const real_transport *real_transport_find(const char *name)
{
    static const real_transport *const all[] = {&shm_transport, &tcp_transport,
                                                  &rdma_transport,
#ifdef CL_HAVE_MPI
                                                  &mpi_transport,
#endif
    };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (strcmp(all[i]->name, name) == 0)
            return all[i];
    return NULL;
}

/* ---- the shared job ---- */

static size_t line_up(size_t x)
{
    return (x + JOB_LINE - 1) & ~(size_t)(JOB_LINE - 1);
}

static int job_create(job *j, const real_opts *o, const real_transport *t, cl_diag *d)
{
    size_t n = (size_t)o->job.nranks;
    memset(j, 0, sizeof *j);
    j->nranks = o->job.nranks;
    j->warmup = o->job.warmup;
    j->iters = o->job.iters;
    /* Debug variables: this launcher's ranks read a clock shifted and
     * drifting, as another host's would be (core/sync.h corrects it). */
    bool monotonic;
    int err = job_clock_debug(&j->clock_shift, &j->clock_drift, &monotonic, d);
    if (err)
        return err;
    if (o->job.records) {
        j->rec_cap = RECORDS_PER_RUN / n;
        if (j->rec_cap < 4096)
            j->rec_cap = 4096;
    }
    size_t slots = line_up(n * sizeof(job_slot));
    size_t times = line_up(n * (size_t)o->job.iters * sizeof(double));
    size_t skews = line_up((size_t)o->job.iters * sizeof(double));
    size_t recs = line_up(n * j->rec_cap * sizeof(cl_record));
    size_t addrs = line_up(n * sizeof(job_addr));
    size_t area = t->shared_bytes ? t->shared_bytes(o) : 0;
    j->map_bytes = slots + times + skews + recs + addrs + area;
    j->only = o->boot ? boot_rank(o->boot) : -1;
    /* Anonymous and shared: the ranks inherit it through fork, nothing is
     * named, and it is gone when the last process unmaps or exits.  Not
     * populated here: a fork does not hand the children a shared mapping's
     * page-table entries, so each rank populates its own parts when it
     * starts (real/pages.h). */
    void *m = mmap(NULL, j->map_bytes, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
        char sz[UNITS_BUF];
        return diag_set(d, CL_ENOMEM, "cannot map %s of shared memory for %d ranks: %s",
                        units_size_str(sz, j->map_bytes), o->job.nranks, strerror(errno));
    }
    unsigned char *p = m;
    j->map = m;
    j->slots = (job_slot *)p;
    j->iter_time = (double *)(p + slots);
    j->iter_skew = (double *)(p + slots + times);
    p += skews;
    j->recs = (cl_record *)(p + slots + times);
    j->addrs = (job_addr *)(p + slots + times + recs);
    j->transport = p + slots + times + recs + addrs;
    /* One launcher forking every rank gives them one counter mapping;
     * launchers of one rank each keep the kernel's clock (real/tick.h). */
    j->t_base = tick_begin(&j->tick, j->only < 0 && !monotonic);
    err = t->shared_init ? t->shared_init(j->transport, o, d) : 0;
    if (err)
        munmap(m, j->map_bytes);
    return err;
}

/* ---- a rank process ---- */

/* Opens rank `rank` on t, runs it and closes it: the exit code of
 * rank_main, or 2 with the slot saying why it could not start. */
static int rank_body(const job *j, const real_opts *o, const real_transport *t, int rank,
                     const real_binder *b)
{
    job_slot *slot = &j->slots[rank];
    cl_diag d = {{0}};
    real_rank *r = NULL;
    int err = b ? real_binder_apply(b, rank, &d) : 0;
    if (!err && j->netlab) /* before the transport opens a socket */
        err = netlab_enter(j->netlab, rank, &d);
    if (!err)
        err = t->rank_open(&r, j, rank, o, &d);
    if (!err && o->job.debug && (err = debug_attach(&r->comm))) {
        diag_set(&d, err, "rank %d: out of memory for --debug", rank);
        t->rank_close(r);
    }
    if (err) {
        slot->why = d;
        slot->status = err;
        atomic_store(&slot->state, JOB_FAILED);
        return 2;
    }
    int code = rank_main(r, &o->job);
    debug_state *dbg = r->comm.debug; /* its shadows outlive the transport's last write */
    t->rank_close(r);
    debug_destroy(dbg);
    return code;
}

static _Noreturn void rank_process(const job *j, const real_opts *o, const real_transport *t,
                                   const real_binder *b, int rank, const sigset_t *mask,
                                   pid_t launcher)
{
    /* Die with the launcher, even if it is killed outright. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != launcher)
        _exit(2);
    /* A process group of its own (the launcher sets it too, whichever runs
     * first): what the pattern forks stays in it and goes with it. */
    setpgid(0, 0);
    boot_forget(o->boot); /* the launcher's sockets are its own */
    signal(SIGINT, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    sigprocmask(SIG_SETMASK, mask, NULL);
    _exit(rank_body(j, o, t, rank, b));
}

/* ---- an in-process rank that ends the process ----
 *
 * exit() called by the pattern of a rank that runs in this process would
 * end the watchdog with it, leave the world waiting for a rank nobody
 * reports on, and run the library's exit handlers (MPI_Finalize waits for
 * the other processes, which wait for this rank: the run would hang until
 * --timeout).  An on_exit handler, registered once per process before the
 * first such run and so run before the library's, catches the call: the
 * rank failed as a rank process that exited does on the other backends,
 * named with the status it asked for; its watchdog reports it to the
 * world, the process ends at once with "a rank failed" (4) and nothing
 * else of exit runs.  Process-wide, as exit itself is: the handler has no
 * other way to the run under way. */

#define EXIT_FAILED 4 /* the CLI's "a rank failed" (cli/cli.h) */

static launcher *_Atomic in_process_run; /* the in-process run under way, or NULL */

static void rank_called_exit(int code, void *arg)
{
    (void)arg;
    launcher *l = atomic_load(&in_process_run);
    if (!l || l->pid != getpid() || !pthread_equal(pthread_self(), l->rank_thread))
        return; /* not a rank's exit: a child it forked, or the command's own */
    int rank = l->j->only;
    job_slot *s = &l->j->slots[rank];
    diag_set(&s->why, 0, "rank %d called exit(%d) in its own code: a rank ends by returning "
             "from its pattern, never by ending the process", rank, code);
    s->status = CL_EPEER;
    atomic_store(&s->state, JOB_FAILED);
    atomic_store(&l->rank_code, EXIT_FAILED);
    atomic_store(&l->rank_ended, true);
    pthread_join(l->watchdog, NULL); /* the world knows, and has ended the run */
    if (!l->res->told)
        fprintf(launch__report_file(l), "commlab: %s\n",
                l->res->diag.msg);
    fflush(NULL);
    _exit(EXIT_FAILED);
}

static void hook_exit(void)
{
    on_exit(rank_called_exit, NULL);
}

/* The one rank of this process runs here while a thread watches. */
static int run_in_process(launcher *l, const real_transport *t, const sigset_t *set)
{
    static pthread_once_t hooked = PTHREAD_ONCE_INIT;
    pthread_once(&hooked, hook_exit);
    l->signals = set;
    l->in_process = true;
    l->alive = 1;
    l->pid = getpid();
    l->rank_thread = pthread_self();
    int err = pthread_create(&l->watchdog, NULL, launch__watch_thread, l);
    if (err)
        return diag_set(&l->res->diag, CL_ENOMEM, "cannot start the watchdog thread: %s",
                        strerror(err));
    atomic_store(&in_process_run, l);
    atomic_store(&l->rank_code, rank_body(l->j, l->o, t, l->j->only, NULL));
    atomic_store(&in_process_run, NULL);
    atomic_store(&l->rank_ended, true);
    pthread_join(l->watchdog, NULL);
    return 0;
}

/* ---- results ---- */

static int gather(launcher *l)
{
    const job *j = l->j;
    run_result *res = l->res;
    if (!res->status) {
        run_iter_times(j->iter_time, j->nranks, j->iters, res->iter_time);
        /* Rank 0 keeps the start skews: this launcher has them if it runs rank 0. */
        res->skewed = l->o->job.sync == RUN_SYNC_WINDOW && j->only <= 0;
        if (res->skewed)
            memcpy(res->start_skew, j->iter_skew, (size_t)j->iters * sizeof *j->iter_skew);
    }
    for (int r = 0; r < j->nranks; r++) {
        res->messages += j->slots[r].messages;
    }
    if (!l->o->job.records)
        return 0;
    for (int r = 0; r < j->nranks; r++) {
        uint64_t n = atomic_load(&j->slots[r].nrec);
        uint64_t keep = n < j->rec_cap ? n : j->rec_cap;
        for (uint64_t k = 0; k < keep; k++)
            if (rec_log_add(l->o->job.records, &j->recs[(size_t)r * j->rec_cap + k]))
                return diag_set(&res->diag, CL_ENOMEM, "out of memory gathering records");
        l->o->job.records->dropped += n - keep;
    }
    return 0;
}

/* What real_run refuses before it starts anything: 0, or CL_EINVAL with
 * res->diag saying why. */
static int check_run(const real_opts *o, const real_transport *t, run_result *res)
{
    if (!t)
        return diag_set(&res->diag, CL_EINVAL, "unknown transport '%s'", o->backend);
    if (o->job.nranks < 1 || o->job.iters < 1 || o->job.warmup < 0 || !o->job.fn)
        return diag_set(&res->diag, CL_EINVAL, "bad run options");
    if (t->in_process && !o->boot)
        return diag_set(&res->diag, CL_EINVAL, "the %s transport runs one rank per process "
                        "of a launcher (mpirun, srun)", t->name);
    if (o->tcp.netlab && (!t->over_netlab || o->boot || o->tcp.listen))
        return diag_set(&res->diag, CL_EINVAL, "--netlab runs every rank of a local tcp run "
                        "in a namespace of its own: not with %s", o->boot ? "a world of "
                        "processes started elsewhere" : o->tcp.listen ? "--listen" : o->backend);
    if (o->tcp.netlab && o->job.nranks > netlab_ports(o->tcp.netlab))
        return diag_set(&res->diag, CL_EINVAL, "--netlab: %d ranks on a netlab of %d ports",
                        o->job.nranks, netlab_ports(o->tcp.netlab));
    return 0;
}

/* Signals come to the launcher as events (sigtimedwait), never as
 * handlers: *set is blocked here (*old what was blocked before), and
 * *ranks the mask the ranks get back, old less those. */
static void block_signals(sigset_t *set, sigset_t *old, sigset_t *ranks)
{
    static const int sigs[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP};
    sigemptyset(set);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaddset(set, sigs[i]);
    sigprocmask(SIG_BLOCK, set, old);
    *ranks = *old;
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigdelset(ranks, sigs[i]);
}

/* Forks a process for every rank this launcher starts, each in a group
 * of its own; stops at the first fork that fails (the run has failed). */
static void fork_ranks(launcher *l, const real_transport *t, real_binder *b,
                       const sigset_t *ranks_mask)
{
    const real_opts *o = l->o;
    job *j = l->j;
    pid_t self = getpid();
    for (int i = 0; i < o->job.nranks; i++) {
        if (j->only >= 0 && i != j->only)
            continue;
        pid_t pid = fork();
        if (pid == 0)
            rank_process(j, o, t, b, i, ranks_mask, self);
        if (pid < 0) {
            launch__fail(l, CL_EPEER, "cannot start rank %d: %s", i, strerror(errno));
            break;
        }
        setpgid(pid, pid);
        l->pids[i] = l->groups[i] = pid;
        l->alive++;
    }
}

/* Signals still pending once the ranks are gone: an interrupt counts even
 * when the ranks it also reached were reaped first (a terminal's Ctrl-C
 * hits them all). */
static void take_pending_signals(const sigset_t *set, run_result *res)
{
    struct timespec zero = {0, 0};
    int sig;
    while ((sig = sigtimedwait(set, NULL, &zero)) > 0)
        if (sig != SIGCHLD && !res->signal) {
            res->signal = sig;
            res->status = CL_EPEER;
            snprintf(res->diag.msg, sizeof res->diag.msg,
                     "interrupted (SIG%s): every rank was stopped", sigabbrev_np(sig));
        }
}

int real_run(const real_opts *o, run_result *res)
{
    memset(res, 0, sizeof *res);
    const real_transport *t = real_transport_find(o->backend);
    int err = check_run(o, t, res);
    if (err)
        return err;
    pid_t *pids = calloc(2 * (size_t)o->job.nranks, sizeof *pids); /* and the groups */
    progress_mark *marks = calloc((size_t)o->job.nranks, sizeof *marks);
    if (run_result_init(res, o->job.iters) || !pids || !marks) {
        free(pids);
        free(marks);
        return diag_set(&res->diag, CL_ENOMEM, "out of memory");
    }
    real_binder *b = NULL;
    job j;
    /* Under someone else's launcher, placing the processes is its job. */
    err = real_binder_create(&b, o->job.nranks, o->bind && !o->boot, &res->diag);
    if (err) {
        free(pids);
        free(marks);
        return err;
    }
    res->cores = real_binder_cores(b);
    real_binder_describe(b, res->binding, sizeof res->binding);
    if (o->boot)
        snprintf(res->binding, sizeof res->binding, "left to the launcher that started the "
                 "processes");
    if (o->warn && o->job.nranks > res->cores && !o->boot)
        fprintf(o->warn, "commlab: warning: %d ranks on %d cores: ranks take turns on a core, "
                "so waits spin briefly, then yield and sleep, and timings include the "
                "scheduler\n", o->job.nranks, res->cores);
    if ((err = job_create(&j, o, t, &res->diag))) {
        real_binder_destroy(b);
        free(pids);
        free(marks);
        return err;
    }
    j.cores = res->cores;
    j.print_fd = fileno(o->job.out ? o->job.out : stdout);
    tick_end(&j.tick); /* before the ranks copy j */
    res->clock = tick_name(&j.tick);
    sigset_t set, old, ranks_mask;
    block_signals(&set, &old, &ranks_mask);
    fflush(NULL);
    double now = job_now();
    for (int i = 0; i < o->job.nranks; i++)
        marks[i].at = now;
    launcher l = {.o = o, .j = &j, .marks = marks, .started = now, .pids = pids,
                  .groups = pids + o->job.nranks,
                  .failed_rank = -1, .res = res,
                  .last_progress = UINT64_MAX, .last_moved = job_now(),
                  .last_change = job_now(),
                  .deadline = o->job.timeout > 0 ? job_now() + o->job.timeout : 0};
    if (o->boot)
        boot_run_begin(o->boot, &j);
    j.netlab = o->tcp.netlab;
    /* An in-process rank runs (and is watched) here; otherwise the ranks
     * are forked. */
    int thread_err = t->in_process ? run_in_process(&l, t, &set) : 0;
    if (!t->in_process) {
        fork_ranks(&l, t, b, &ranks_mask);
        launch__watch(&l, &set);
    }
    launch__kill_all(&l); /* what a pattern forked and left running: no rank is left to run it */
    take_pending_signals(&set, res);
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (t->shared_release)
        t->shared_release(j.transport, o);
    if (!res->signal)
        err = gather(&l); /* a failed run keeps its records: the trace shows the stall */
    munmap(j.map, j.map_bytes);
    real_binder_destroy(b);
    free(pids);
    free(marks);
    return thread_err ? thread_err : err;
}
