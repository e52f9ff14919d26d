/*
 * fault.h - a simulated rank that crashes, ends the process or never
 * yields becomes a reported failure of its run, not the end of the tool.
 *
 * Ranks are coroutines inside the tool's own process (sim/coro.h), so what
 * a rank's C code does to the process happens to the tool: a segfault or
 * abort() would kill it without a word, exit(3) would end it with the
 * status that means deadlock, and a rank that loops without calling
 * commlab would never give the scheduler its turn back.  While a run is
 * guarded (sim_fault_begin .. sim_fault_end) on this thread:
 *
 *   - Fatal signals (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP,
 *     SIGSYS) are caught on an alternate signal stack (a rank that ran off
 *     its stack has no stack left to run a handler on).  One that hits
 *     while a rank runs ends that rank where it stands (sim_sched_abandon)
 *     and its sim_coro_resume returns CL_EPEER, or CL_ESTACK when the fault
 *     is the rank running off its stack (sim_coro_overflowed).  A rank
 *     that blocks may pop the next event and hand the CPU to its rank
 *     itself (the engine's engine__block): a fault in those few lines is
 *     taken as that rank's, as the rank running.
 *   - exit(), _exit() and _Exit() called while a rank runs do the same
 *     (CL_EPEER).  A student's pattern is a shared object linked with
 *     `-Wl,--wrap=exit,--wrap=_exit,--wrap=_Exit,--wrap=fork`
 *     (cli/student.c): its calls go to this file's __wrap_exit and the
 *     like, resolved from the tool (linked with -rdynamic), which pass the
 *     call on to libc's when no rank is running.  Only those calls are
 *     caught: the rest of the binary (the launcher's forked children
 *     among them) calls libc's own, so nothing outside sim/ depends on
 *     this file.  A test binary whose own patterns call exit() is linked
 *     with the same flags.  An atexit() handler would not do: by the time
 *     it runs, libc's exit is under way and cannot be called off (glibc
 *     has run the handlers registered after it, musl holds its exit lock
 *     for good); a call caught at the symbol never enters libc.
 *   - fork() called while a rank runs (caught the same way; other calls
 *     pass on to libc's) puts the child in a process group
 *     of its own, which dies with the tool (PR_SET_PDEATHSIG), and
 *     remembers it.  When the run ends (sim_fault_end) every such group
 *     still holding a process is killed and the children are reaped, as
 *     the measured backends kill each rank's group: what a rank forks ends
 *     with the run (unless it leaves its group with setsid).  How many
 *     were left, and the first few, stay in the struct for the report.  A
 *     child made without fork() (posix_spawn, system, popen, vfork) is
 *     not seen.
 *   - A wall-clock limit (timeout): a POSIX timer signals this thread
 *     (SIGALRM).  At the limit the scheduler is asked to stop
 *     (sim_sched_stop: its next resume returns CL_ETIMEOUT).  A rank still
 *     running a grace period later, not having yielded since, loops in its
 *     own code: it is abandoned (CL_ETIMEOUT).
 *
 * Why recover in the process rather than run the simulation in a child
 * process: a rank ended where it stands holds nothing the engine needs
 * (its memory is the engine's to free), the run then fails and the other
 * ranks unwind as after a deadlock, and the tool reports, writes its
 * timeline and exits 4, with no results, records and output to ship back
 * from a child.  What recovery cannot vouch for is libc's state after a
 * crash inside it (a corrupted heap found by malloc), so the last resort
 * stays: a fatal signal in the scheduler's own code after a rank failed,
 * or a scheduler that does not stop within SIM_FAULT_GIVE_UP seconds of
 * the limit, writes what is known on stderr (async-signal-safe) and ends
 * the process with status 4.  A fatal signal in the scheduler's own code
 * while no rank has failed is a bug of commlab: it goes to the handler
 * that was there before (by default the process dies of it).
 *
 * State.  Signal handlers and the exit functions get no argument, so the
 * guarded run is found through one thread-local pointer: the innermost
 * guarded run of this thread (runs nest).  sim_fault_begin installs the
 * handlers and the alternate stack, sim_fault_end restores what was there.
 */
#ifndef SIM_FAULT_H
#define SIM_FAULT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#include "core/diag.h"
#include "sim/coro.h"

#define SIM_FAULT_GRACE 0.5    /* seconds a rank may keep running after the limit */
#define SIM_FAULT_GIVE_UP 10.0 /* seconds after the limit the process ends anyway */
#define SIM_FAULT_NSIG 8       /* signals handled: seven fatal ones and SIGALRM */
#define SIM_FAULT_SHOWN 4      /* forked processes left running that are named */

/* What ended a rank, for sim_fault_why. */
typedef enum sim_fault_cause {
    SIM_FAULT_NONE,
    SIM_FAULT_SIGNAL, /* a fatal signal */
    SIM_FAULT_EXIT,   /* exit(), _exit() or _Exit() */
    SIM_FAULT_SPIN,   /* ran past the limit without yielding */
    SIM_FAULT_LIMIT,  /* the limit stopped the scheduler between ranks */
} sim_fault_cause;

/* A process a rank forked. */
typedef struct sim_fault_child {
    pid_t pid;           /* it leads a process group of that id */
    const sim_coro *co;  /* the rank that forked it */
} sim_fault_child;

/* One guarded run.  Caller memory; fields are private to fault.c, but
 * for the children left running at the end. */
typedef struct sim_fault {
    sim_sched *sched;          /* the run's scheduler (borrowed) */
    struct sim_fault *outer;   /* the guarded run this one is nested in */
    pid_t pid;                 /* the process running it: a child a rank forked is
                                  not guarded (its exit() is its own) */
    double timeout;            /* seconds; 0: no limit */
    double grace;              /* seconds between checks after the limit */
    /* what happened, written by the handlers */
    volatile sig_atomic_t cause; /* a sim_fault_cause */
    volatile sig_atomic_t ticks; /* timer expiries after the limit */
    int sig, code;             /* SIGNAL: the signal and its si_code */
    void *addr;                /* SIGNAL: the fault address */
    int exit_status;           /* EXIT: the status asked for */
    const char *exit_fn;       /* EXIT: "exit", "_exit" or "_Exit" */
    const sim_coro *spinner;   /* the coroutine running at the last check */
    uint64_t resumes;          /* the scheduler's resumes at the last check */
    char report[256];          /* the failure, for the last resort */
    sim_fault_child *children; /* what ranks forked, malloc'd */
    size_t nchildren, children_cap;
    /* after sim_fault_end: */
    size_t left;               /* children whose group still ran a process: killed */
    sim_fault_child shown[SIM_FAULT_SHOWN]; /* the first of them */
    bool shown_running[SIM_FAULT_SHOWN];    /* each was itself still running (else
                                               only what it forked in turn) */
    /* what was there before */
    timer_t timer;
    bool has_timer;
    void *altstack;            /* our alternate signal stack (mmap'd) */
    size_t altstack_bytes;
    stack_t old_stack;
    sigset_t mask;             /* the thread's mask when the run began */
    struct sigaction old[SIM_FAULT_NSIG];
} sim_fault;

/* Guards the run of s on this thread; timeout in seconds (0: none).
 * Returns 0, or CL_ENOMEM / CL_EIO with d saying why; on error nothing is
 * installed.  Must be paired with sim_fault_end on this thread, nested
 * runs ending first. */
int sim_fault_begin(sim_fault *f, sim_sched *s, double timeout, cl_diag *d);

/* Stops the timer and restores the handlers and the alternate stack that
 * were there before; kills what the ranks forked and left running (left,
 * shown and shown_running say what).  Cannot fail. */
void sim_fault_end(sim_fault *f);

/* The address whose access ended the last rank (a SIGSEGV or SIGBUS), or
 * NULL when it ended otherwise.  Read it before sim_fault_why, which
 * forgets the cause.  Cannot fail. */
const void *sim_fault_addr(const sim_fault *f);

/* Why sim_coro_resume returned err (not 0) for rank `rank`, doing `where`
 * ("in cl_recv", "in its own code"): one sentence into buf, also kept for
 * the last resort.  Returns true when the rank is the cause (it crashed,
 * overflowed, called exit, looped past the limit), false when the limit
 * stopped the run at its turn (buf: "the run took longer than --timeout
 * 1 s", for the caller to go on: the scheduler was still running events,
 * so the ranks were making progress).  Cannot fail. */
bool sim_fault_why(sim_fault *f, int err, int rank, size_t stack_bytes, const char *where,
                   char *buf, size_t len);

/* The targets of a pattern object's --wrap (above): exit, _exit, _Exit
 * and fork as a rank must see them.  The names are the linker's. */
void __wrap_exit(int status);
void __wrap__exit(int status);
void __wrap__Exit(int status);
pid_t __wrap_fork(void);

#endif
