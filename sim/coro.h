/*
 * coro.h - coroutine ranks: each simulated rank runs its pattern function on
 * its own small stack; a scheduler resumes one coroutine at a time and it
 * runs until it yields back (from any call depth) or its function returns,
 * or hands the CPU straight to another coroutine (sim_coro_pass), which
 * then runs in its place: one switch where going through the scheduler
 * takes two.
 *
 * Stacks.  One sim_stacks is ONE anonymous mapping (MAP_NORESERVE) cut into
 * `count` stacks of a fixed size.  Only touched pages cost memory (a rank
 * that stays shallow costs one or two pages).  Up to SIM_CORO_GUARDED_MAX
 * stacks, each has a guard page below it (PROT_NONE): a rank that runs off
 * its stack faults there at once, before it writes over another stack, and
 * sim/fault.h turns the fault into a report (sim_coro_overflowed tells it
 * from other faults).  A guard page splits the mapping, and Linux allows
 * 65,530 mappings per process, so above that count there is one guard page
 * below stack 0 only, and a stack overflows into the stack below it.  There
 * the lowest SIM_CORO_CANARY_BYTES of each stack are a canary that must
 * stay zero (zero so that it costs no memory: an untouched anonymous page
 * reads as zero without being allocated); it is checked every time a
 * coroutine switches back to the scheduler, and a broken canary makes
 * sim_coro_resume return CL_ESTACK.  Under guard pages it is not checked:
 * an overflow faults in the guard page, and a frame that stops short of it
 * harmed nothing (reading it cost every yield a second cache line and page
 * of the stack: 7 % of the 1,000-rank ring).  Limits of the canary, honestly:
 * an overflow is found after it happened, and without guard pages it may
 * already have written over the top of the stack below it (index - 1), so
 * after CL_ESTACK the run must stop; a frame that jumps over the canary
 * without writing to it (a large, unwritten local array) is not caught; a
 * write of zeros exactly over the canary is not caught.  A frame larger
 * than a page can jump over a guard page too, unless its code probes the
 * stack page by page (-fstack-clash-protection, which cli/student.c gives
 * the student's file).
 *
 * Stopping.  A coroutine that crashed or never yields is ended from a
 * signal handler that interrupted it: sim_sched_abandon switches straight
 * back to the scheduler, and the coroutine is never resumed (whatever it
 * held on its stack is lost; the caller owns the consequences).  A handler
 * that interrupted the scheduler instead asks it to stop with
 * sim_sched_stop: the next resume returns at once.
 *
 * Ownership.  The caller owns sim_sched and sim_coro structs (init, no
 * destroy; release gives stack pages back); sim_stacks is created and
 * destroyed here, and must outlive every coroutine using it.  A stack
 * index is used by at most one live coroutine at a time.  A coroutine is
 * always resumed by the same sched (the one its fn returns to; unchecked).
 * Nothing here is global: independent schedulers, each with its own
 * coroutines, work in one process, even nested (a coroutine of one sched
 * may be the scheduler of another); not from two threads at once on the
 * same sched or coroutine.
 *
 * Switching is hand-written assembly on x86-64 and aarch64 (ELF), and
 * ucontext elsewhere (or with -DSIM_CORO_UCONTEXT).  Under AddressSanitizer
 * every switch is announced with __sanitizer_{start,finish}_switch_fiber.
 * A new coroutine starts with the default floating-point environment
 * (round to nearest, exceptions masked); each coroutine then keeps its own.
 */
#ifndef SIM_CORO_H
#define SIM_CORO_H

#include <stdbool.h>
#include <stddef.h>
#include <signal.h>
#include <stdint.h>

#define SIM_CORO_STACK_DEFAULT (64u * 1024) /* bytes, when 0 is asked */
#define SIM_CORO_STACK_MIN (16u * 1024)     /* bytes, smaller asks grow to it */
#define SIM_CORO_CANARY_BYTES 64u           /* zero bytes at each stack's low end */
#define SIM_CORO_GUARDED_MAX 4096u          /* up to this many stacks, a guard page each */

/* ---- stacks ---- */

typedef struct sim_stacks sim_stacks; /* one mapping holding every stack */

/* Reserve `count` stacks of stack_bytes each (0: SIM_CORO_STACK_DEFAULT;
 * rounded up to whole pages, at least SIM_CORO_STACK_MIN).  Costs address
 * space, not memory.  CL_EINVAL for count 0, count above UINT32_MAX or a
 * size that overflows; CL_ENOMEM if the mapping is refused (e.g. with
 * vm.overcommit_memory=2).  On error *out is untouched. */
int sim_stacks_create(sim_stacks **out, size_t count, size_t stack_bytes);
/* Unmap every stack.  No coroutine on them may be resumed again.  NULL ok. */
void sim_stacks_destroy(sim_stacks *s);
/* Usable bytes per stack after rounding (guard pages not counted).
 * Cannot fail. */
size_t sim_stacks_stack_bytes(const sim_stacks *s);

/* ---- coroutines ---- */

typedef void (*sim_coro_fn)(void *arg);

typedef enum sim_coro_state {
    SIM_CORO_READY = 0, /* initialized or yielded: may be resumed */
    SIM_CORO_RUNNING,   /* on the CPU, between resume and yield */
    SIM_CORO_DONE,      /* fn returned */
    SIM_CORO_BROKEN,    /* its canary was found broken (CL_ESTACK) */
    SIM_CORO_ABANDONED, /* ended where it stood by sim_sched_abandon */
} sim_coro_state;

/* One per rank; keep it small.  Fields are private to coro.c. */
typedef struct sim_coro {
    void *sp;           /* saved stack pointer while not running */
    sim_stacks *stacks; /* the mapping its stack is in */
    uint32_t index;     /* which stack of `stacks` */
    uint32_t state;     /* a sim_coro_state */
} sim_coro;

/* The scheduler's side of the switches.  Fields are private to coro.c; the
 * sanitizer ones are always present so that the layout does not depend on
 * the build flags. */
typedef struct sim_sched {
    void *sp;                 /* scheduler's saved stack pointer */
    sim_coro *current;        /* running coroutine, or NULL */
    sim_coro *last;           /* the coroutine that switched back last, or NULL */
    uint64_t resumes;         /* sim_coro_resume calls that ran a coroutine */
    volatile sig_atomic_t stop; /* sim_sched_stop's error, 0: none asked */
    int abandoned;            /* sim_sched_abandon's error for the resume */
    const void *stack_bottom; /* ASan: the scheduler's stack, low end */
    size_t stack_size;        /* ASan: its size, bytes */
} sim_sched;

/* Prepare s; no coroutine is running.  Cannot fail. */
void sim_sched_init(sim_sched *s);

/* Prepare co to run fn(arg) on stack `index` of s (pages left over from a
 * previous coroutine there should first be released).  co starts at its
 * first sim_coro_resume.  CL_EINVAL if index >= count or fn is NULL; on
 * error co is untouched. */
int sim_coro_init(sim_coro *co, sim_stacks *s, size_t index, sim_coro_fn fn,
                  void *arg);

/* Run co, from the scheduler's stack, until it yields or fn returns, or
 * until a coroutine it passed the CPU to (sim_coro_pass, from one to the
 * next) does: sim_sched_last then says which came back, and the states
 * and errors below are that coroutine's.  co must be SIM_CORO_READY.
 * Returns 0; CL_ESTACK if the canary of the coroutine coming back was
 * found broken: it is then SIM_CORO_BROKEN and must not run again, and the
 * stack below its own may be corrupted too; the error given to
 * sim_sched_abandon (it is then SIM_CORO_ABANDONED); or the error given
 * to sim_sched_stop, without running co (co stays READY, and
 * sim_sched_last is NULL). */
int sim_coro_resume(sim_sched *s, sim_coro *co);

/* Called on from's stack, at any depth, while s runs from: hand the CPU
 * straight to `to` (SIM_CORO_READY, another coroutine of s, started
 * or not), which runs in from's place until it yields, returns or passes
 * on.  from becomes READY; this returns when s resumes from again or a
 * coroutine passes back to it.  Only when sim_coro_may_pass(from): its
 * canary is not checked on the way.  Cannot fail. */
void sim_coro_pass(sim_sched *s, sim_coro *from, sim_coro *to);

/* Whether co may pass the CPU on (sim_coro_pass): its canary is intact,
 * or its stack has a guard page of its own.  Otherwise it must yield, so
 * that the scheduler finds the broken canary. */
bool sim_coro_may_pass(const sim_coro *co);

/* The coroutine whose switch back to s ended the last sim_coro_resume: the
 * one resumed or one it passed to; NULL when that resume ran none. */
sim_coro *sim_sched_last(const sim_sched *s);

/* Called on co's stack, at any depth, while s runs co: switch back to the
 * scheduler; returns when s resumes co again.  Cannot fail. */
void sim_coro_yield(sim_sched *s, sim_coro *co);

/* True once co can never run again: fn returned, its canary broke or it was
 * abandoned. */
bool sim_coro_done(const sim_coro *co);

/* ---- stopping (async-signal-safe: for signal handlers) ---- */

/* Asks s to stop: its next sim_coro_resume returns err (a CL_E* code)
 * without running anything, once; later resumes run as before.  For a
 * handler that interrupted the scheduler's own code. */
void sim_sched_stop(sim_sched *s, int err);

/* Ends the coroutine running on s where it stands: it becomes
 * SIM_CORO_ABANDONED, and the sim_coro_resume that ran it returns err (a
 * CL_E* code).  Called on its behalf: from its own code or from a signal
 * handler that interrupted it (on any stack).  Drops a pending
 * sim_sched_stop (this is the answer to it).  Never returns; what co held
 * on its stack is never released. */
_Noreturn void sim_sched_abandon(sim_sched *s, int err);

/* Whether a memory fault at addr, taken with the stack pointer at sp while
 * co ran, is co running off its stack: sp below its lowest byte, or addr in
 * the guard page below it or anywhere in the stack mapping that is not a
 * stack (a guard page).  Cannot fail. */
bool sim_coro_overflowed(const sim_coro *co, const void *addr, const void *sp);

/* The coroutine running on s, or NULL when s is in the scheduler. */
sim_coro *sim_sched_current(const sim_sched *s);

/* A hint, cannot fail: start loading the memory that resuming the
 * coroutine on stack `index` of s will touch (its saved registers and the
 * frames above them, taken to stand where the last coroutine to switch
 * back had yielded, and its canary), without reading its sim_coro, which
 * may be cold itself: a load would stall where a prefetch does not.  With
 * many ranks every resume misses the caches and the TLB; prefetching the
 * next rank while one runs overlaps those misses with that rank's work
 * instead of stalling the resume on them (README, beside `bench sim`'s
 * figures, has what it measured). */
void sim_stacks_prefetch(const sim_stacks *s, size_t index);

/* Whether s holds more stacks than the caches keep warm: then every
 * resume misses unless prefetched early (sim_stacks_prefetch fetches more
 * of each stack, and the engine looks further ahead). */
bool sim_stacks_cold(const sim_stacks *s);

/* Give co's stack pages back to the kernel (madvise MADV_DONTNEED); the
 * stack reads as zero afterwards and may be given to sim_coro_init again.
 * co must be done (not suspended mid-function).  Cannot fail: if the kernel
 * refuses, the pages simply stay. */
void sim_coro_release(sim_coro *co);

#endif /* SIM_CORO_H */
