/* launch_watch.c - the launcher's watchdog (launch_impl.h): what ended,
 * what moved, and the reports of a deadlock, a --timeout or a stopped
 * rank. */
#include "real/launch_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/units.h"
#include "core/waitfor.h"

/* ---- the watchdog ---- */

/* Every rank and whatever it started: its process group outlives the rank
 * as long as a process is left in it. */
void launch__kill_all(launcher *l)
{
    if (l->in_process && !atomic_load(&l->j->stop))
        atomic_store(&l->j->stop, l->res->status ? l->res->status : CL_EPEER);
    for (int i = 0; i < l->o->job.nranks; i++)
        if (l->groups[i] > 0)
            kill(-l->groups[i], SIGKILL);
}

void launch__fail(launcher *l, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    bool first = run_result_vfail(l->res, status, fmt, ap);
    va_end(ap);
    if (first && l->o->boot && !l->res->told)
        l->res->told = boot_report_failure(l->o->boot, status, l->res->diag.msg);
    launch__kill_all(l);
}

/* A rank process ended with wait status st. */
static void judge(launcher *l, int rank, int st)
{
    job_slot *s = &l->j->slots[rank];
    if (l->res->status)
        return; /* stopped by us after the first failure */
    if (WIFSIGNALED(st)) {
        int sig = WTERMSIG(st);
        launch__fail(l, CL_EPEER, "rank %d was killed by signal %d (SIG%s)%s", rank, sig,
             sigabbrev_np(sig) ? sigabbrev_np(sig) : "?",
             WCOREDUMP(st) ? ", core dumped" : "");
    } else if (WEXITSTATUS(st) != 0 || atomic_load(&s->state) != JOB_DONE) {
        int status = s->status ? s->status : CL_EPEER;
        if (s->why.msg[0])
            launch__fail(l, status, "%s", s->why.msg);
        else
            launch__fail(l, status, "rank %d exited with status %d", rank, WEXITSTATUS(st));
    } else {
        return;
    }
    l->failed_rank = rank;
}

/* Where reports go: the job's report file, else stderr. */
FILE *launch__report_file(const launcher *l)
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
        cl_record made = {
            .bytes = p2p ? p->bytes : 0, .rank = rank,
            .peer = p2p && p->peer >= 0 ? p->peer : -1, .tag = p2p ? p->tag : -1, .iter = iter,
            .op = p->op == WF_SEND ? REC_SEND : p->op == WF_RECV ? REC_RECV : REC_BARRIER,
        };
        if (rec_log_stalled(log, &made, since, since))
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
        waitfor_explain(launch__report_file(l), w, (size_t)n, &ro, false);
    }
    free(w);
    free(pend);
    free(place);
    char t[UNITS_BUF];
    launch__fail(l, CL_EDEADLOCK, "deadlock: %d of %d ranks blocked with no progress for %s", blocked,
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
    FILE *f = launch__report_file(l);
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
                      waitfor_explain(launch__report_file(l), w, (size_t)n, &ro, false);
    free(w);
    free(pend);
    free(place);
    char t[UNITS_BUF], win[UNITS_BUF], last[UNITS_BUF];
    units_time_str(t, l->o->job.timeout);
    units_time_str(win, window);
    units_time_str(last, stalest);
    if (stopped >= 0)
        launch__fail(l, CL_ETIMEOUT, "the run took longer than --timeout %s: rank %d is stopped (pid "
             "%d, state T)%s", t, stopped, (int)rank_pid(l, stopped),
             nstopped > 1 ? ", and others too" : "");
    else if (running >= 0)
        launch__fail(l, CL_ETIMEOUT, "the run took longer than --timeout %s: rank %d made no progress, "
             "running its own code (or polling) while %d rank%s waited (none of its messages "
             "moved in the last %s)", t, running, blocked, blocked == 1 ? "" : "s", win);
    else if (deadlocked && moving > 0)
        launch__fail(l, CL_ETIMEOUT, "the run took longer than --timeout %s: ranks are deadlocked "
             "among themselves (the report above), while messages moved on %d other%s", t,
             moving, moving == 1 ? "" : "s");
    else if (moving > 0)
        launch__fail(l, CL_ETIMEOUT, "the run took longer than --timeout %s, its ranks still making "
             "progress (messages moved, or cl_compute ran, on %d of its %d unfinished ranks "
             "in the last %s%s): a long run, not a stuck one; raise --timeout, or 0 for no "
             "limit", t, moving, unfinished, last,
             moving < unfinished ? "; the rest waited" : "");
    else
        launch__fail(l, CL_ETIMEOUT, "the run took longer than --timeout %s: %d rank%s blocked", t,
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
        launch__fail(l, status, "%s", why.msg);
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

void launch__watch(launcher *l, const sigset_t *set)
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
            launch__fail(l, CL_EPEER, "interrupted (SIG%s): every rank was stopped",
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

void *launch__watch_thread(void *arg)
{
    launcher *l = arg;
    launch__watch(l, l->signals);
    return NULL;
}

