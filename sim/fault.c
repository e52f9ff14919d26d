/* fault.c - guarded simulation runs: fatal signals on an alternate stack,
 * exit() from a rank, and the wall-clock limit (see fault.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* gettid, sigabbrev_np, RTLD_DEFAULT */
#endif
#include "sim/fault.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include "commlab.h"
#include "core/units.h"

#if defined(__SANITIZE_ADDRESS__)
#define FAULT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FAULT_ASAN 1
#endif
#endif
#ifdef FAULT_ASAN
#include <sanitizer/asan_interface.h>
#endif

#define ALTSTACK_BYTES ((size_t)256 << 10) /* room for a chained handler (ASan's) too */
#define EXIT_FAILED 4                      /* the CLI's "a rank failed" (cli/cli.h) */

/* The innermost guarded run of this thread: handlers and the exit
 * functions get no argument, so this is their one way to it. */
static _Thread_local sim_fault *active;

/* The guarded run a handler or an exit function is about: the innermost
 * one of this thread, unless this process is a child a rank forked. */
static sim_fault *guarded(void)
{
    sim_fault *f = active;
    return f && f->pid == getpid() ? f : NULL;
}

static const int caught[SIM_FAULT_NSIG] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE,
                                           SIGABRT, SIGTRAP, SIGSYS, SIGALRM};

static int slot_of(int sig)
{
    for (int i = 0; i < SIM_FAULT_NSIG; i++)
        if (caught[i] == sig)
            return i;
    return 0; /* not reached: only caught signals come here */
}

/* ---- the last resort (async-signal-safe) ---- */

static void say(const char *s)
{
    size_t n = strlen(s);
    while (n > 0) {
        ssize_t w = write(STDERR_FILENO, s, n);
        if (w <= 0 && errno != EINTR)
            return;
        if (w > 0) {
            s += w;
            n -= (size_t)w;
        }
    }
}

/* Ends the process at once with "a rank failed", saying what is known.
 * exit_group directly: _exit here is this file's own. */
static _Noreturn void last_resort(const sim_fault *f, const char *what)
{
    say("commlab: ");
    if (f->report[0]) {
        say(f->report);
        say("\ncommlab: ");
    }
    say(what);
    say("\n");
    for (;;)
        syscall(SYS_exit_group, EXIT_FAILED);
}

/* ---- handlers ---- */

/* The outermost guarded run of this thread holds the handlers that were
 * there before any run. */
static const struct sigaction *previous(int sig)
{
    const sim_fault *f = active;
    while (f && f->outer)
        f = f->outer;
    return f ? &f->old[slot_of(sig)] : NULL;
}

/* Hands a signal that is not a rank's to whoever had it before us; the
 * default action is put back and the signal let happen again (a fault
 * re-runs its instruction when the handler returns; a raised signal is
 * raised again, and arrives once the handler returns). */
static void chain(int sig, siginfo_t *si, void *uc)
{
    const struct sigaction *p = previous(sig);
    if (p && (p->sa_flags & SA_SIGINFO)) {
        p->sa_sigaction(sig, si, uc);
        return;
    }
    if (p && p->sa_handler == SIG_IGN)
        return;
    if (p && p->sa_handler != SIG_DFL) {
        p->sa_handler(sig);
        return;
    }
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    if (si->si_code <= 0)
        raise(sig);
}

/* The stack pointer when the signal came; unknown: the top of memory,
 * which no stack lies above. */
static const void *stack_pointer(const void *uc)
{
    const ucontext_t *u = uc;
#if defined(__x86_64__)
    return (const void *)(uintptr_t)u->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
    return (const void *)(uintptr_t)u->uc_mcontext.sp;
#else
    (void)u;
    return (const void *)UINTPTR_MAX;
#endif
}

/* Ends the rank running on f's scheduler: the handler never returns, so
 * the mask it runs with is put back by hand first. */
static _Noreturn void end_rank(sim_fault *f, sim_fault_cause cause, int err)
{
    f->cause = cause;
    pthread_sigmask(SIG_SETMASK, &f->mask, NULL);
    sim_sched_abandon(f->sched, err);
}

static void on_fatal(int sig, siginfo_t *si, void *uc)
{
    sim_fault *f = guarded();
    const sim_coro *co = f ? sim_sched_current(f->sched) : NULL;
    if (co) {
        f->sig = sig;
        f->code = si->si_code;
        f->addr = si->si_addr;
        bool off_stack = (sig == SIGSEGV || sig == SIGBUS) &&
                         sim_coro_overflowed(co, si->si_addr, stack_pointer(uc));
        end_rank(f, SIM_FAULT_SIGNAL, off_stack ? CL_ESTACK : CL_EPEER);
    }
    if (f && f->report[0])
        last_resort(f, "the simulator then crashed too while stopping the run; it is ended");
    chain(sig, si, uc);
}

static void on_alarm(int sig, siginfo_t *si, void *uc)
{
    sim_fault *f = guarded();
    while (f && !(si->si_code == SI_TIMER && si->si_value.sival_ptr == f))
        f = f->outer;
    if (!f) {
        chain(sig, si, uc); /* an alarm() of the pattern's own */
        return;
    }
    const sim_coro *co = sim_sched_current(f->sched);
    uint64_t resumes = f->sched->resumes;
    int ticks = f->ticks++;
    if (ticks == 0)
        sim_sched_stop(f->sched, CL_ETIMEOUT);
    else if (co && co == f->spinner && resumes == f->resumes)
        end_rank(f, SIM_FAULT_SPIN, CL_ETIMEOUT);
    else if (ticks * f->grace >= SIM_FAULT_GIVE_UP)
        last_resort(f, "the run went past --timeout and the simulator did not stop; it is "
                       "ended");
    f->spinner = co;
    f->resumes = resumes;
}

/* ---- exit(), _exit(), _Exit() ---- */

/* A rank calling name(status) is ended instead; returns when no rank of a
 * guarded run is running on this thread. */
static void rank_exit(const char *name, int status)
{
    sim_fault *f = guarded();
    if (!f || !sim_sched_current(f->sched))
        return;
    f->exit_fn = name;
    f->exit_status = status;
    end_rank(f, SIM_FAULT_EXIT, CL_EPEER);
}

/* The calls a pattern's shared object makes to exit, _exit, _Exit and fork
 * come here (it is linked with --wrap, fault.h); every other caller of the
 * binary reaches libc's directly.  What is not a rank's call is passed on:
 * exit through libc's own (its handlers run), _exit and _Exit as the
 * system call they are (async-signal-safe, as a forked child needs). */
void __wrap_exit(int status)
{
    rank_exit("exit", status);
    void *p = dlsym(RTLD_DEFAULT, "exit");
    if (p) {
        void (*fn)(int);
        memcpy(&fn, &p, sizeof fn); /* POSIX: dlsym's pointer is the function's */
        fn(status);
    }
    fflush(NULL);
    for (;;)
        syscall(SYS_exit_group, status);
}

void __wrap__exit(int status)
{
    rank_exit("_exit", status);
    for (;;)
        syscall(SYS_exit_group, status);
}

void __wrap__Exit(int status)
{
    rank_exit("_Exit", status);
    for (;;)
        syscall(SYS_exit_group, status);
}

/* ---- fork() ---- */

static pid_t libc_fork(void)
{
    void *p = dlsym(RTLD_DEFAULT, "fork");
    if (!p) {
        errno = ENOSYS;
        return -1;
    }
    pid_t (*fn)(void);
    memcpy(&fn, &p, sizeof fn);
    return fn();
}

/* A rank's fork: the child leads a group of its own, which dies with the
 * tool and is killed when the run ends.  Room to remember it is made
 * first, so no child goes unremembered. */
pid_t __wrap_fork(void)
{
    sim_fault *f = guarded();
    const sim_coro *co = f ? sim_sched_current(f->sched) : NULL;
    if (!co)
        return libc_fork();
    if (f->nchildren == f->children_cap) {
        size_t cap = f->children_cap ? 2 * f->children_cap : 8;
        sim_fault_child *c = realloc(f->children, cap * sizeof *c);
        if (!c) {
            errno = ENOMEM;
            return -1;
        }
        f->children = c;
        f->children_cap = cap;
    }
    pid_t parent = getpid(), pid = libc_fork();
    if (pid == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) /* the tool died before the line above */
            raise(SIGKILL);
    } else if (pid > 0) {
        setpgid(pid, pid); /* the child does it too: whichever runs first */
        f->children[f->nchildren++] = (sim_fault_child){pid, co};
    }
    return pid;
}

/* Kills the groups of the children that still hold a process and reaps
 * the children, noting what was left running. */
static void children_end(sim_fault *f)
{
    for (size_t i = 0; i < f->nchildren; i++) {
        pid_t pid = f->children[i].pid;
        siginfo_t si = {0};
        /* Ours still (not reaped by the pattern), and whether it ended. */
        bool ours = waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0;
        bool running = ours && si.si_pid == 0;
        if (ours && !running)
            waitpid(pid, NULL, WNOHANG); /* reaped: the group is what it left */
        bool group = kill(-pid, 0) == 0;
        if (running || group) {
            if (f->left < SIM_FAULT_SHOWN) {
                f->shown[f->left] = f->children[i];
                f->shown_running[f->left] = running;
            }
            f->left++;
            kill(-pid, SIGKILL);
        }
        if (running) {
            kill(pid, SIGKILL); /* also when it left its group */
            waitpid(pid, NULL, 0);
        }
    }
    free(f->children);
    f->children = NULL;
    f->nchildren = f->children_cap = 0;
}

/* ---- a guarded run ---- */

/* Under AddressSanitizer: a handler that never returned left its frame's
 * redzones poisoned on the alternate stack, where the next handler would
 * trip on them (and so would whoever maps that memory next). */
static void altstack_clean(sim_fault *f)
{
#ifdef FAULT_ASAN
    ASAN_UNPOISON_MEMORY_REGION(f->altstack, f->altstack_bytes);
#else
    (void)f;
#endif
}

static struct timespec timespec_of(double s)
{
    struct timespec ts = {.tv_sec = (time_t)s};
    ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
    return ts;
}

/* A timer of this thread: SIGALRM at the limit, then every grace. */
static int timer_start(sim_fault *f, cl_diag *d)
{
    struct sigevent ev = {.sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGALRM};
    ev.sigev_value.sival_ptr = f;
    ev._sigev_un._tid = gettid(); /* sigev_notify_thread_id, unnamed in glibc 2.36 */
    if (timer_create(CLOCK_MONOTONIC, &ev, &f->timer) != 0)
        return diag_set(d, CL_EIO, "cannot start the run's --timeout timer: %s",
                        strerror(errno));
    f->has_timer = true;
    return 0;
}

int sim_fault_begin(sim_fault *f, sim_sched *s, double timeout, cl_diag *d)
{
    memset(f, 0, sizeof *f);
    f->sched = s;
    f->pid = getpid();
    f->timeout = timeout > 0 ? timeout : 0;
    f->grace = SIM_FAULT_GRACE;
    pthread_sigmask(SIG_SETMASK, NULL, &f->mask);
    f->altstack_bytes = ALTSTACK_BYTES;
    f->altstack = mmap(NULL, f->altstack_bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (f->altstack == MAP_FAILED)
        return diag_set(d, CL_ENOMEM, "out of memory for the run's signal stack");
    stack_t ss = {.ss_sp = f->altstack, .ss_size = f->altstack_bytes};
    if (sigaltstack(&ss, &f->old_stack) != 0) {
        int e = errno;
        munmap(f->altstack, f->altstack_bytes);
        return diag_set(d, CL_EIO, "cannot set up the run's signal stack: %s", strerror(e));
    }
    int err = f->timeout > 0 ? timer_start(f, d) : 0;
    if (err) {
        sigaltstack(&f->old_stack, NULL);
        munmap(f->altstack, f->altstack_bytes);
        return err;
    }
    for (int i = 0; i < SIM_FAULT_NSIG; i++) {
        struct sigaction sa = {.sa_flags = SA_SIGINFO | SA_ONSTACK};
        sa.sa_sigaction = caught[i] == SIGALRM ? on_alarm : on_fatal;
        if (caught[i] == SIGALRM)
            sa.sa_flags |= SA_RESTART; /* the pattern's own system calls go on */
        sigemptyset(&sa.sa_mask);
        sigaction(caught[i], &sa, &f->old[i]);
    }
    f->outer = active;
    active = f;
    if (f->has_timer) {
        struct itimerspec its = {.it_value = timespec_of(f->timeout),
                                 .it_interval = timespec_of(f->grace)};
        timer_settime(f->timer, 0, &its, NULL);
    }
    return 0;
}

void sim_fault_end(sim_fault *f)
{
    sigset_t alrm;
    sigemptyset(&alrm);
    sigaddset(&alrm, SIGALRM);
    bool foreign = false;
    if (f->has_timer) {
        /* A signal of the timer may be pending still: take it now, while
         * SIGALRM is blocked, rather than let the old disposition have it. */
        pthread_sigmask(SIG_BLOCK, &alrm, NULL);
        timer_delete(f->timer);
        siginfo_t si;
        struct timespec zero = {0, 0};
        while (sigtimedwait(&alrm, &si, &zero) == SIGALRM)
            foreign |= !(si.si_code == SI_TIMER && si.si_value.sival_ptr == f);
    }
    for (int i = 0; i < SIM_FAULT_NSIG; i++)
        sigaction(caught[i], &f->old[i], NULL);
    sigaltstack(&f->old_stack, NULL);
    altstack_clean(f);
    munmap(f->altstack, f->altstack_bytes);
    active = f->outer;
    pthread_sigmask(SIG_SETMASK, &f->mask, NULL);
    if (foreign)
        raise(SIGALRM); /* someone else's alarm came meanwhile: theirs again */
    children_end(f);
}

/* "signal 11 (SIGSEGV: Segmentation fault at address 0x10)" */
static void signal_words(const sim_fault *f, char *buf, size_t len)
{
    const char *abbrev = sigabbrev_np(f->sig);
    int n = snprintf(buf, len, "signal %d (SIG%s: %s", f->sig, abbrev ? abbrev : "?",
                     strsignal(f->sig));
    size_t used = n > 0 ? (size_t)n : 0;
    if (used < len && (f->sig == SIGSEGV || f->sig == SIGBUS))
        used += (size_t)snprintf(buf + used, len - used, " at address 0x%llx",
                                 (unsigned long long)(uintptr_t)f->addr);
    else if (used < len && f->sig == SIGFPE && f->code == FPE_INTDIV)
        used += (size_t)snprintf(buf + used, len - used, ", an integer division by zero");
    else if (used < len && f->sig == SIGABRT)
        used += (size_t)snprintf(buf + used, len - used, ", abort() or a failed assert");
    if (used < len)
        snprintf(buf + used, len - used, ")");
}

const void *sim_fault_addr(const sim_fault *f)
{
    bool memory = f->sig == SIGSEGV || f->sig == SIGBUS;
    return f->cause == SIM_FAULT_SIGNAL && memory ? f->addr : NULL;
}

bool sim_fault_why(sim_fault *f, int err, int rank, size_t stack_bytes, const char *where,
                   char *buf, size_t len)
{
    sim_fault_cause cause = (sim_fault_cause)f->cause;
    f->cause = SIM_FAULT_NONE;
    altstack_clean(f);
    char a[UNITS_BUF], b[UNITS_BUF], sig[128];
    bool blame = true;
    if (err == CL_ESTACK) {
        snprintf(buf, len, "rank %d overflowed its %s stack %s (raise it with --stack-size, "
                 "or make large arrays with cl_alloc or cl_array)", rank,
                 units_size_str(a, stack_bytes), where);
    } else if (err == CL_ETIMEOUT && cause == SIM_FAULT_SPIN) {
        snprintf(buf, len, "rank %d made no progress: at --timeout %s it was running %s, and "
                 "it did not come back to commlab in the %s after (on sim, time passes only "
                 "in calls that send, receive, wait or compute)", rank,
                 units_time_str(a, f->timeout), where, units_time_str(b, f->grace));
    } else if (err == CL_ETIMEOUT) { /* the caller says the rest */
        blame = false;
        snprintf(buf, len, "the run took longer than --timeout %s", units_time_str(a, f->timeout));
    } else if (cause == SIM_FAULT_SIGNAL) {
        signal_words(f, sig, sizeof sig);
        snprintf(buf, len, "rank %d crashed %s: %s", rank, where, sig);
    } else if (cause == SIM_FAULT_EXIT) {
        snprintf(buf, len, "rank %d called %s(%d) %s: a rank ends by returning from its "
                 "pattern, never by ending the process", rank, f->exit_fn, f->exit_status,
                 where);
    } else {
        snprintf(buf, len, "rank %d failed %s: %s", rank, where, cl_strerror(err));
    }
    if (!f->report[0])
        snprintf(f->report, sizeof f->report, "%s", buf);
    return blame;
}
