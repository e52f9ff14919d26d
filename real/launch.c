/* launch.c - the launcher of measured runs: fork, watch, gather. */
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
#include "real/netlab.h"

#define TICK_NS 10000000L         /* the watchdog looks every 10 ms */
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
    int err = job_clock_debug(&j->clock_shift, &j->clock_drift, d);
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
    j->t_base = job_now();
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

/* ---- the watchdog ---- */

/* What the watchdog last saw of a rank's progress counter. */
typedef struct progress_mark {
    uint64_t count; /* the slot's progress */
    double at;      /* job_now() when it last changed (or the run started) */
} progress_mark;

typedef struct launcher {
    const real_opts *o;
    job *j;
    progress_mark *marks; /* nranks */
    double started;       /* job_now() when the watchdog began */
    pid_t *pids;     /* 0 once reaped */
    pid_t *groups;   /* each rank's process group (its pid), 0: none; kept after reaping */
    int alive;
    int failed_rank; /* the first rank that failed, -1 */
    run_result *res;
    uint64_t last_progress;
    double last_moved;  /* when the progress counters last moved */
    double last_change; /* ... or a rank was last seen not blocked */
    bool noted;         /* the stopped ranks of this stall were reported */
    double deadline;    /* job_now() past which the run fails; 0: none */
    /* a rank in this process (real_transport.in_process) */
    bool in_process;
    _Atomic bool rank_ended; /* it returned, with this exit code: */
    _Atomic int rank_code;
    const sigset_t *signals; /* what the watchdog thread waits for */
    pthread_t watchdog;      /* the thread watching it ... */
    pthread_t rank_thread;   /* ... and the one running it, */
    pid_t pid;               /* in this process */
} launcher;

/* Every rank and whatever it started: its process group outlives the rank
 * as long as a process is left in it. */
static void kill_all(launcher *l)
{
    if (l->in_process && !atomic_load(&l->j->stop))
        atomic_store(&l->j->stop, l->res->status ? l->res->status : CL_EPEER);
    for (int i = 0; i < l->o->job.nranks; i++)
        if (l->groups[i] > 0)
            kill(-l->groups[i], SIGKILL);
}

static void fail(launcher *l, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void fail(launcher *l, int status, const char *fmt, ...)
{
    if (l->res->status == 0) {
        l->res->status = status;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(l->res->diag.msg, sizeof l->res->diag.msg, fmt, ap);
        va_end(ap);
        if (l->o->boot && !l->res->told)
            l->res->told = boot_report_failure(l->o->boot, status, l->res->diag.msg);
    }
    kill_all(l);
}

/* A rank process ended with wait status st. */
static void judge(launcher *l, int rank, int st)
{
    job_slot *s = &l->j->slots[rank];
    if (l->res->status)
        return; /* stopped by us after the first failure */
    if (WIFSIGNALED(st)) {
        int sig = WTERMSIG(st);
        fail(l, CL_EPEER, "rank %d was killed by signal %d (SIG%s)%s", rank, sig,
             sigabbrev_np(sig) ? sigabbrev_np(sig) : "?",
             WCOREDUMP(st) ? ", core dumped" : "");
    } else if (WEXITSTATUS(st) != 0 || atomic_load(&s->state) != JOB_DONE) {
        int status = s->status ? s->status : CL_EPEER;
        if (s->why.msg[0])
            fail(l, status, "%s", s->why.msg);
        else
            fail(l, status, "rank %d exited with status %d", rank, WEXITSTATUS(st));
    } else {
        return;
    }
    l->failed_rank = rank;
}

/* Where reports go: the job's report file, else stderr. */
static FILE *report_file(const launcher *l)
{
    return l->o->job.report ? l->o->job.report : stderr;
}

/* Where a blocked rank's published wait stands, beside its wf_rank. */
typedef struct wait_place {
    bool outside;     /* blocked outside its pattern (the driver's barrier) */
    int32_t iter;     /* the iteration it is in */
    int32_t returned; /* the last iteration whose pattern returned */
} wait_place;

/* Copies slot s's wait (job.c's seqlock) into w (WF_BLOCKED) and *p, its
 * operations into pend; returns the iteration it is in. */
static int32_t read_wait(const job_slot *s, wf_rank *w, wf_pending *pend, wait_place *p)
{
    job_wait copy;
    job_slot_wait_read(s, &copy);
    w->state = WF_BLOCKED;
    w->call = (wf_op)copy.call;
    w->npending = copy.npending;
    memcpy(pend, copy.pending, copy.npending * sizeof *pend);
    w->pending = pend;
    *p = (wait_place){.outside = copy.outside != 0, .iter = copy.iter,
                      .returned = copy.returned};
    return copy.iter;
}

/* A rank blocked outside its pattern counts as run_outside_state says
 * (returned, as on sim, when its pattern of the iteration the others are
 * blocked in has returned): a rank that waits on it is told so.  Returns
 * the ranks that stay WF_BLOCKED. */
static int settle_outside(wf_rank *w, const wait_place *p, int n)
{
    int k = 0, blocked = 0;
    bool known = false;
    for (int i = 0; i < n && !known; i++)
        if (w[i].state == WF_BLOCKED && !p[i].outside) {
            k = p[i].iter;
            known = true;
        }
    for (int i = 0; i < n; i++) {
        if (w[i].state == WF_BLOCKED && p[i].outside)
            w[i].state = run_outside_state(p[i].returned, k, known);
        blocked += w[i].state == WF_BLOCKED;
    }
    return blocked;
}

/* A blocked rank's operations as stalled records (core/record.h), so a
 * timeline shows the calls the deadlock froze; the ranks are stopped
 * without returning from them.  Each starts where the rank's last record
 * of that iteration ended: the moment it entered the call. */
static void record_stalled(launcher *l, int rank, const wf_rank *w, int32_t iter)
{
    rec_log *log = l->o->job.records;
    const job *j = l->j;
    if (!log)
        return;
    uint64_t n = atomic_load(&j->slots[rank].nrec);
    n = n < j->rec_cap ? n : j->rec_cap;
    double since = 0;
    for (uint64_t k = 0; k < n; k++) {
        const cl_record *r = &j->recs[(size_t)rank * j->rec_cap + k];
        if (r->iter == iter && r->finished > since)
            since = r->finished;
    }
    for (size_t i = 0; i < w->npending; i++) {
        const wf_pending *p = &w->pending[i];
        bool p2p = p->op == WF_SEND || p->op == WF_RECV;
        cl_record rec = {
            .posted = since, .started = since, .finished = since, .bytes = p2p ? p->bytes : 0,
            .rank = rank, .peer = p2p && p->peer >= 0 ? p->peer : -1, .tag = p2p ? p->tag : -1,
            .iter = iter, .blocking = 1, .stalled = 1,
            .op = p->op == WF_SEND ? REC_SEND : p->op == WF_RECV ? REC_RECV : REC_BARRIER,
        };
        if (rec_log_add(log, &rec))
            return; /* a figure's bar short; the deadlock is reported all the same */
    }
}

static void report_deadlock(launcher *l, double stalled)
{
    int n = l->o->job.nranks, blocked = 0;
    wf_rank *w = calloc((size_t)n, sizeof *w);
    wf_pending *pend = calloc((size_t)n * JOB_MAX_PENDING, sizeof *pend);
    wait_place *place = calloc((size_t)n, sizeof *place);
    if (w && pend && place) {
        for (int i = 0; i < n; i++) {
            const job_slot *s = &l->j->slots[i];
            if (atomic_load(&s->state) == JOB_DONE) {
                w[i].state = WF_DONE;
                continue;
            }
            int32_t iter = read_wait(s, &w[i], &pend[(size_t)i * JOB_MAX_PENDING], &place[i]);
            record_stalled(l, i, &w[i], iter);
        }
        blocked = settle_outside(w, place, n);
        wf_report_opts ro = {.eager_limit = l->o->job.eager_limit,
                             .time = job_now() - l->j->t_base};
        waitfor_explain(report_file(l), w, (size_t)n, &ro, false);
    }
    free(w);
    free(pend);
    free(place);
    char t[UNITS_BUF];
    fail(l, CL_EDEADLOCK, "deadlock: %d of %d ranks blocked with no progress for %s", blocked,
         n, units_time_str(t, stalled));
}

/* The state letter of process pid in /proc/PID/stat ('R', 'S', 'T'...),
 * or 0 when it cannot be read. */
static char proc_state(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    /* "PID (COMM) S ...": COMM may hold spaces and parentheses, so the
     * state is the letter after the last ')'. */
    const char *p = strrchr(buf, ')');
    return p && p[1] == ' ' ? p[2] : 0;
}

/* The pid of rank's process on this host, 0 when unknown: one this
 * launcher forked, or, when every rank runs in a process of its own
 * (real_transport.in_process: the mpi backend), the process that joined
 * the rendezvous for it from this host. */
static pid_t rank_pid(const launcher *l, int rank)
{
    if (l->pids[rank] > 0)
        return l->pids[rank];
    return l->in_process && l->o->boot ? boot_local_pid(l->o->boot, rank) : 0;
}

/* Whether rank's process (a local one) is stopped: by SIGSTOP or a
 * terminal's Ctrl-Z (state T), or by a debugger (t).  It holds the run up
 * without being blocked, and may yet be continued. */
static bool rank_is_stopped(const launcher *l, int rank)
{
    pid_t pid = rank_pid(l, rank);
    char st = pid > 0 ? proc_state(pid) : 0;
    return st == 'T' || st == 't';
}

/* The unfinished local ranks that are stopped: a line each on the report
 * when `say`.  Returns how many. */
static int stopped_ranks(const launcher *l, bool say)
{
    FILE *f = report_file(l);
    int n = 0;
    for (int i = 0; i < l->o->job.nranks; i++) {
        if (atomic_load(&l->j->slots[i].state) == JOB_DONE || !rank_is_stopped(l, i))
            continue;
        n++;
        int pid = (int)rank_pid(l, i);
        if (say)
            fprintf(f, "commlab: rank %d (pid %d) is stopped (state T in /proc/%d/stat): the "
                    "run waits for it to continue (kill -CONT %d)%s\n", i, pid, pid, pid,
                    l->deadline > 0 ? ", up to --timeout" : "");
    }
    return n;
}

/* Notes which ranks' counters moved since the last look (every tick). */
static void watch_progress(launcher *l)
{
    double now = job_now();
    for (int i = 0; i < l->o->job.nranks; i++) {
        uint64_t c = atomic_load_explicit(&l->j->slots[i].progress, memory_order_relaxed);
        if (c != l->marks[i].count) {
            l->marks[i].count = c;
            l->marks[i].at = now;
        }
    }
}

/* Every unfinished rank asleep in a blocking call, nothing completing for
 * the timeout: a deadlock.  A rank that computes, polls or is still
 * starting keeps the run alive; so does a stopped one, which is said once
 * per stall (it is not blocked: continued, it goes on).  The stall must
 * be seen whole, every rank runnable: each look that finds a rank stopped
 * starts the window again, so a rank just continued has the whole
 * deadlock timeout to move before the ranks it held up count as
 * deadlocked (it was called so in 9 of 25 runs, seen not yet moved in the
 * moment after SIGCONT). */
static void check_deadlock(launcher *l)
{
    uint64_t sum = 0;
    bool all_blocked = true;
    int unfinished = 0;
    for (int i = 0; i < l->o->job.nranks; i++) {
        const job_slot *s = &l->j->slots[i];
        uint32_t st = atomic_load(&s->state);
        sum += atomic_load_explicit(&s->progress, memory_order_relaxed);
        if (st == JOB_DONE)
            continue;
        unfinished++;
        if (st != JOB_BLOCKED)
            all_blocked = false;
    }
    double now = job_now();
    if (!unfinished || sum != l->last_progress) {
        l->last_progress = sum;
        l->last_moved = now;
        l->noted = false;
    }
    bool stall = all_blocked && l->last_moved != now;
    if (!stall || stopped_ranks(l, false))
        l->last_change = now;
    if (now - l->last_moved < l->o->deadlock_timeout)
        return;
    if (!l->noted)
        l->noted = stopped_ranks(l, true) > 0;
    if (now - l->last_change >= l->o->deadlock_timeout)
        report_deadlock(l, now - l->last_change);
}

/* The span over which report_timeout judges whether a rank made progress:
 * a quarter of the run's age (its setup, a barrier, moved every counter
 * once near the start), at most the deadlock timeout, at least a few of
 * the watchdog's looks. */
static double progress_window(const launcher *l, double now)
{
    double w = (now - l->started) / 4;
    if (w > l->o->deadlock_timeout)
        w = l->o->deadlock_timeout;
    return w > 5 * TICK_NS / 1e9 ? w : 5 * TICK_NS / 1e9;
}

/* Past the run's --timeout.  Each unfinished rank is judged over the last
 * progress_window: its counter moved (messages moved, or cl_compute ran),
 * or it did not.  The first rank that holds the run up is named: a
 * stopped one, else one running its own code (or polling) without
 * progress.  Else the run is called what it is: ranks deadlocked among
 * themselves, or a long run whose ranks still make progress (the others
 * wait on them).  The wait-for report shows the ranks that made no
 * progress (a stopped or progressing one counts as running: continued,
 * it goes on); none is printed when every rank progressed, a snapshot of
 * ranks in motion being no stall. */
static void report_timeout(launcher *l)
{
    int n = l->o->job.nranks, running = -1, stopped = -1, nstopped = 0, blocked = 0;
    int moving = 0, unfinished = 0;
    watch_progress(l);
    double now = job_now(), window = progress_window(l, now), stalest = TICK_NS / 1e9;
    wf_rank *w = calloc((size_t)n, sizeof *w);
    wf_pending *pend = calloc((size_t)n * JOB_MAX_PENDING, sizeof *pend);
    wait_place *place = calloc((size_t)n, sizeof *place);
    bool room = w && pend && place;
    for (int i = 0; i < n && room; i++) {
        const job_slot *s = &l->j->slots[i];
        uint32_t st = atomic_load(&s->state);
        double quiet = now - l->marks[i].at;
        if (st == JOB_DONE) {
            w[i].state = WF_DONE;
            continue;
        }
        unfinished++;
        if (rank_is_stopped(l, i)) {
            w[i].state = WF_RUNNING;
            nstopped++;
            if (stopped < 0)
                stopped = i;
        } else if (quiet < window) {
            w[i].state = WF_RUNNING;
            moving++;
            stalest = quiet > stalest ? quiet : stalest;
        } else if (st == JOB_BLOCKED) {
            read_wait(s, &w[i], &pend[(size_t)i * JOB_MAX_PENDING], &place[i]);
        } else {
            w[i].state = WF_RUNNING;
            if (running < 0)
                running = i;
        }
    }
    if (room)
        blocked = settle_outside(w, place, n);
    wf_report_opts ro = {.eager_limit = l->o->job.eager_limit, .time = now - l->j->t_base};
    bool deadlocked = room && moving < unfinished &&
                      waitfor_explain(report_file(l), w, (size_t)n, &ro, false);
    free(w);
    free(pend);
    free(place);
    char t[UNITS_BUF], win[UNITS_BUF], last[UNITS_BUF];
    units_time_str(t, l->o->job.timeout);
    units_time_str(win, window);
    units_time_str(last, stalest);
    if (stopped >= 0)
        fail(l, CL_ETIMEOUT, "the run took longer than --timeout %s: rank %d is stopped (pid "
             "%d, state T)%s", t, stopped, (int)rank_pid(l, stopped),
             nstopped > 1 ? ", and others too" : "");
    else if (running >= 0)
        fail(l, CL_ETIMEOUT, "the run took longer than --timeout %s: rank %d made no progress, "
             "running its own code (or polling) while %d rank%s waited (none of its messages "
             "moved in the last %s)", t, running, blocked, blocked == 1 ? "" : "s", win);
    else if (deadlocked && moving > 0)
        fail(l, CL_ETIMEOUT, "the run took longer than --timeout %s: ranks are deadlocked "
             "among themselves (the report above), while messages moved on %d other%s", t,
             moving, moving == 1 ? "" : "s");
    else if (moving > 0)
        fail(l, CL_ETIMEOUT, "the run took longer than --timeout %s, its ranks still making "
             "progress (messages moved, or cl_compute ran, on %d of its %d unfinished ranks "
             "in the last %s%s): a long run, not a stuck one; raise --timeout, or 0 for no "
             "limit", t, moving, unfinished, last,
             moving < unfinished ? "; the rest waited" : "");
    else
        fail(l, CL_ETIMEOUT, "the run took longer than --timeout %s: %d rank%s blocked", t,
             blocked, blocked == 1 ? "" : "s");
}

/* What the other processes of a run over several said. */
static void hear(launcher *l, int timeout_ms)
{
    boot *b = l->o->boot;
    boot_pump(b, timeout_ms);
    int status;
    bool from_master;
    cl_diag why;
    if (boot_failure(b, &status, &why, &from_master)) {
        l->res->told = from_master;
        fail(l, status, "%s", why.msg);
    }
}

static void reap(launcher *l)
{
    int st;
    pid_t pid;
    if (l->in_process && l->alive > 0 && atomic_load(&l->rank_ended)) {
        l->alive--;
        judge(l, l->j->only, W_EXITCODE(atomic_load(&l->rank_code), 0));
    }
    while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
        for (int i = 0; i < l->o->job.nranks; i++) {
            if (l->pids[i] != pid)
                continue;
            l->pids[i] = 0;
            l->alive--;
            judge(l, i, st);
        }
    }
}

static void watch(launcher *l, const sigset_t *set)
{
    struct timespec tick = {0, TICK_NS}, zero = {0, 0};
    boot *b = l->o->boot;
    bool done_told = false;
    while (l->alive > 0 || (b && boot_waiting(b))) {
        int sig;
        if (b) {
            hear(l, (int)(TICK_NS / 1000000L));
            sig = sigtimedwait(set, NULL, &zero);
        } else {
            sig = sigtimedwait(set, NULL, &tick);
        }
        if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
            if (!l->res->signal)
                l->res->signal = sig;
            fail(l, CL_EPEER, "interrupted (SIG%s): every rank was stopped",
                 sigabbrev_np(sig));
        }
        reap(l);
        if (b && l->alive == 0 && !l->res->status && !done_told) {
            boot_report_done(b);
            done_told = true;
        }
        watch_progress(l);
        if (!l->res->status && (!b || boot_rank(b) == 0))
            check_deadlock(l);
        if (!l->res->status && l->deadline > 0 && job_now() >= l->deadline)
            report_timeout(l);
    }
    if (b)
        boot_run_end(b, l->res->status);
    if (b && !l->res->status && boot_run_status(b)) {
        l->res->status = boot_run_status(b); /* the master's word */
        l->res->told = true;
    }
}

static void *watch_thread(void *arg)
{
    launcher *l = arg;
    watch(l, l->signals);
    return NULL;
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
        fprintf(report_file(l), "commlab: %s\n",
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
    int err = pthread_create(&l->watchdog, NULL, watch_thread, l);
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
    if (o->netlab && (t != &tcp_transport || o->boot || o->listen))
        return diag_set(&res->diag, CL_EINVAL, "--netlab runs every rank of a local tcp run "
                        "in a namespace of its own: not with %s", o->boot ? "a world of "
                        "processes started elsewhere" : o->listen ? "--listen" : o->backend);
    if (o->netlab && o->job.nranks > netlab_ports(o->netlab))
        return diag_set(&res->diag, CL_EINVAL, "--netlab: %d ranks on a netlab of %d ports",
                        o->job.nranks, netlab_ports(o->netlab));
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
            fail(l, CL_EPEER, "cannot start rank %d: %s", i, strerror(errno));
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
    j.netlab = o->netlab;
    /* An in-process rank runs (and is watched) here; otherwise the ranks
     * are forked. */
    int thread_err = t->in_process ? run_in_process(&l, t, &set) : 0;
    if (!t->in_process) {
        fork_ranks(&l, t, b, &ranks_mask);
        watch(&l, &set);
    }
    kill_all(&l); /* what a pattern forked and left running: no rank is left to run it */
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
