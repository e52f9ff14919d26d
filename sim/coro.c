/*
 * coro.c - coroutine ranks: the stack mapping, the canary, and the three
 * switches (scheduler -> coroutine, coroutine -> scheduler, and the last one
 * when fn returns).
 *
 * The switch itself is sim__coro_switch in coro_x86_64.S / coro_aarch64.S:
 * it pushes the callee-saved registers (and the FP control words) on the
 * current stack, stores the stack pointer through its first argument, loads
 * the second one as the new stack pointer, pops and returns there, handing
 * its third argument over as its return value.  A new coroutine's stack is
 * given a frame that "returns" into sim__coro_boot, which moves the values
 * planted in callee-saved registers into argument registers and calls
 * sim__coro_main(sched, co, fn, arg).  Elsewhere, ucontext does the same
 * job, about 20 times slower (swapcontext makes a sigprocmask system call).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* MAP_NORESERVE, MAP_STACK, MADV_* */
#endif
#include "sim/coro.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "commlab.h"

#if !defined(SIM_CORO_UCONTEXT) && defined(__ELF__) && \
    (defined(__x86_64__) || defined(__aarch64__))
#define CORO_ASM 1
#else
#define CORO_ASM 0
#include <ucontext.h>
#endif

#if defined(__SANITIZE_ADDRESS__)
#define CORO_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CORO_ASAN 1
#endif
#endif
#ifndef CORO_ASAN
#define CORO_ASAN 0
#endif

#if CORO_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define NO_ASAN __attribute__((no_sanitize_address))
#else
#define NO_ASAN
#endif

#define HIDDEN __attribute__((visibility("hidden")))

/* What sim_stacks_prefetch fetches of a suspended rank's stack, around
 * where the last coroutine to switch back had yielded: with more than
 * PREFETCH_DEEP_ABOVE stacks, whose hot parts no longer fit the caches,
 * PREFETCH_BELOW bytes under that point (the frames of the calls it makes
 * next: lines it would otherwise miss writing) and everything above it up
 * to the top (its saved registers, then the frames it returns through), at
 * most PREFETCH_FRAMES bytes in all; with fewer stacks, the PREFETCH_SHALLOW
 * bytes of its saved registers only, the rest being likely cached (so a
 * deep prefetch there is work that saves no miss).  Below the yield point
 * too, since the calls a resumed rank makes first write frames there, each
 * a miss if not fetched; 256 bytes, as a deeper prefetch was tried and
 * saved nothing more. */
#define PREFETCH_BELOW 256
#define PREFETCH_FRAMES 1280
#define PREFETCH_SHALLOW 128
#define PREFETCH_DEEP_ABOVE 2048u

struct sim_stacks {
    char *map;        /* the whole mapping: a guard page, then the stacks */
    size_t map_bytes; /* its length */
    char *base;       /* low end of stack 0 */
    size_t bytes;     /* usable bytes per stack, a multiple of the page size */
    size_t stride;    /* from one stack's low end to the next one's: bytes,
                         and the next one's guard page when guarded */
    size_t count;     /* number of stacks */
    size_t page;      /* page size, bytes */
    bool guarded;     /* a guard page below every stack (else below stack 0) */
    size_t yielded;   /* bytes from the top of a stack down to the saved
                         stack pointer of the last coroutine to switch back:
                         where the next one to resume likely stands */
};

/* Called from sim__coro_boot on a new coroutine's stack; never returns. */
HIDDEN void sim__coro_main(sim_sched *s, sim_coro *co, sim_coro_fn fn,
                           void *arg);

#if CORO_ASM
/* Save callee-saved state on the current stack and *from_sp = its stack
 * pointer; continue on to_sp; return `transfer` on the other side. */
HIDDEN void *sim__coro_switch(void **from_sp, void *to_sp, void *transfer);
/* First instruction of every coroutine (see the .S files). */
HIDDEN void sim__coro_boot(void);
#endif

/* ---- stacks ---- */

int sim_stacks_create(sim_stacks **out, size_t count, size_t stack_bytes)
{
    long pg = sysconf(_SC_PAGESIZE);
    size_t page = pg > 0 ? (size_t)pg : 4096;
    size_t bytes = stack_bytes ? stack_bytes : SIM_CORO_STACK_DEFAULT;
    if (bytes < SIM_CORO_STACK_MIN)
        bytes = SIM_CORO_STACK_MIN;
    if (count == 0 || count > UINT32_MAX || bytes > SIZE_MAX - 2 * page)
        return CL_EINVAL;
    bytes = (bytes + page - 1) / page * page;

    bool guarded = count <= SIM_CORO_GUARDED_MAX;
    size_t stride = bytes + (guarded ? page : 0);
    if (count > (SIZE_MAX - page) / stride)
        return CL_EINVAL;

    sim_stacks *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return CL_ENOMEM;
    s->page = page;
    s->guarded = guarded;
    s->bytes = bytes;
    s->stride = stride;
    s->count = count;
    s->map_bytes = page + count * stride;
    int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
#ifdef MAP_STACK
    flags |= MAP_STACK;
#endif
    void *m = mmap(NULL, s->map_bytes, PROT_READ | PROT_WRITE, flags, -1, 0);
    if (m == MAP_FAILED) {
        free(s);
        return CL_ENOMEM;
    }
    s->map = m;
    s->base = s->map + page;
    /* Stack k's guard page is the page below its low end: for stack 0 the
     * mapping's first page, for the others the last page of their stride
     * (guarded) or nothing (stack k overflows into stack k - 1, where only
     * the canary notices). */
    for (size_t k = 0; k < (guarded ? count : 1); k++) {
        if (mprotect(s->base + k * stride - page, page, PROT_NONE) != 0) {
            munmap(s->map, s->map_bytes);
            free(s);
            return CL_ENOMEM;
        }
    }
#ifdef MADV_NOHUGEPAGE
    /* With THP "always", touching one page of a stack could fault in a
     * 2 MiB huge page covering 32 stacks: a million ranks would then cost
     * their whole stack size.  Failure (a kernel without THP) is fine. */
    (void)madvise(s->base, count * stride, MADV_NOHUGEPAGE);
#endif
    *out = s;
    return 0;
}

void sim_stacks_destroy(sim_stacks *s)
{
    if (s == NULL)
        return;
#if CORO_ASAN
    /* A rank ended where it stood left its frames' redzones poisoned; the
     * next mapping at these addresses (a cl_alloc block, sim/blocks.h)
     * would trip on them. */
    ASAN_UNPOISON_MEMORY_REGION(s->map, s->map_bytes);
#endif
    munmap(s->map, s->map_bytes);
    free(s);
}

size_t sim_stacks_stack_bytes(const sim_stacks *s)
{
    return s->bytes;
}

static inline char *stack_low(const sim_coro *co)
{
    return co->stacks->base + (size_t)co->index * co->stacks->stride;
}

/* The canary is read without ASan instrumentation: after an overflow ASan
 * may have poisoned those bytes as part of some frame's redzone. */
static NO_ASAN bool canary_intact(const sim_coro *co)
{
    const uint64_t *w = (const uint64_t *)(const void *)stack_low(co);
    uint64_t acc = 0;
    for (size_t i = 0; i < SIM_CORO_CANARY_BYTES / sizeof(*w); i++)
        acc |= w[i];
    return acc == 0;
}

/* ---- the three switches, per implementation ---- */

#if CORO_ASM

static inline void switch_to_coro(sim_sched *s, sim_coro *co)
{
    sim__coro_switch(&s->sp, co->sp, s);
}

/* The value handed back (the resuming sched) is not checked against s:
 * a coroutine is resumed only by the scheduler of its run, so the check
 * could not fail, and it would add a compare-and-branch to every round
 * trip, right after the switch, where the pipeline is refilling. */
static inline void switch_to_sched(sim_sched *s, sim_coro *co)
{
    (void)sim__coro_switch(&co->sp, s->sp, NULL);
}

/* The resuming sched rides along as the transfer, which a coroutine that
 * starts here takes (sim__coro_boot) and one that yielded ignores. */
static inline void switch_to_other(sim_sched *s, sim_coro *from, sim_coro *to)
{
    (void)sim__coro_switch(&from->sp, to->sp, s);
}

static _Noreturn void switch_final(sim_sched *s)
{
    void *dead;
    sim__coro_switch(&dead, s->sp, NULL);
    abort(); /* the scheduler never resumes a finished coroutine */
}

/* Plant the frame sim__coro_switch pops, so its `ret` enters boot. */
static void *make_frame(char *top, sim_coro *co, sim_coro_fn fn, void *arg)
{
#if defined(__x86_64__)
    /* low to high: mxcsr|x87 cw, r15, r14, r13, r12, rbx, rbp, ret, pad */
    uint64_t *f = (uint64_t *)(void *)(top - 9 * 8);
    f[0] = 0x1F80u | ((uint64_t)0x037Fu << 32); /* defaults: nearest, masked */
    f[1] = 0;                                   /* r15 */
    f[2] = (uint64_t)(uintptr_t)arg;            /* r14 */
    f[3] = (uint64_t)(uintptr_t)fn;             /* r13 */
    f[4] = (uint64_t)(uintptr_t)co;             /* r12 */
    f[5] = 0;                                   /* rbx */
    f[6] = 0;                                   /* rbp: ends frame chains */
    f[7] = (uint64_t)(uintptr_t)sim__coro_boot; /* where `ret` goes */
    f[8] = 0;
#else
    /* x19..x28, x29, x30, d8..d15, fpcr, pad: 22 words */
    uint64_t *f = (uint64_t *)(void *)(top - 22 * 8);
    memset(f, 0, 22 * 8);
    f[0] = (uint64_t)(uintptr_t)co;              /* x19 */
    f[1] = (uint64_t)(uintptr_t)fn;              /* x20 */
    f[2] = (uint64_t)(uintptr_t)arg;             /* x21 */
    f[11] = (uint64_t)(uintptr_t)sim__coro_boot; /* x30 */
#endif
    return f;
}

#else /* ucontext */

/* Lives at the top of each coroutine's stack; co->sp points to it. */
struct uc_block {
    ucontext_t uc;   /* the coroutine's saved context */
    sim_sched *s;    /* the sched resuming it (set by every resume) */
    sim_coro *co;    /* the coroutine */
    sim_coro_fn fn;  /* its function */
    void *arg;       /* fn's argument */
};

static void uc_boot(unsigned hi, unsigned lo)
{
    uintptr_t p = ((uintptr_t)hi << 16 << 16) | (uintptr_t)lo;
    struct uc_block *b = (struct uc_block *)p;
    sim__coro_main(b->s, b->co, b->fn, b->arg);
}

static inline void switch_to_coro(sim_sched *s, sim_coro *co)
{
    ucontext_t here;
    struct uc_block *b = co->sp;
    b->s = s;
    s->sp = &here;
    swapcontext(&here, &b->uc);
}

static inline void switch_to_sched(sim_sched *s, sim_coro *co)
{
    struct uc_block *b = co->sp;
    assert(b->s == s && "a coroutine must always be resumed by one sched");
    swapcontext(&b->uc, s->sp);
}

static inline void switch_to_other(sim_sched *s, sim_coro *from, sim_coro *to)
{
    struct uc_block *f = from->sp, *t = to->sp;
    t->s = s;
    swapcontext(&f->uc, &t->uc);
}

static _Noreturn void switch_final(sim_sched *s)
{
    setcontext(s->sp);
    abort();
}

static void *make_frame(char *top, sim_coro *co, sim_coro_fn fn, void *arg)
{
    size_t sz = (sizeof(struct uc_block) + 63) & ~(size_t)63;
    struct uc_block *b = (struct uc_block *)(void *)(top - sz);
    memset(b, 0, sizeof(*b));
    b->co = co;
    b->fn = fn;
    b->arg = arg;
    if (getcontext(&b->uc) != 0)
        abort(); /* cannot fail on Linux; no sane way to go on */
    b->uc.uc_stack.ss_sp = stack_low(co);
    b->uc.uc_stack.ss_size = (size_t)((char *)b - stack_low(co));
    b->uc.uc_link = NULL;
    uintptr_t p = (uintptr_t)b;
    /* makecontext passes int arguments only, hence the pointer in halves
     * and the cast of uc_boot that its interface requires. */
    makecontext(&b->uc, (void (*)(void))uc_boot, 2,
                (unsigned)(p >> 16 >> 16), (unsigned)(p & 0xFFFFFFFFu));
    return b;
}

#endif /* CORO_ASM */

/* ---- coroutines ---- */

void sim_sched_init(sim_sched *s)
{
    memset(s, 0, sizeof(*s));
}

sim_coro *sim_sched_current(const sim_sched *s)
{
    return s->current;
}

sim_coro *sim_sched_last(const sim_sched *s)
{
    return s->last;
}

int sim_coro_init(sim_coro *co, sim_stacks *s, size_t index, sim_coro_fn fn,
                  void *arg)
{
    if (s == NULL || fn == NULL || index >= s->count)
        return CL_EINVAL;
    co->stacks = s;
    co->index = (uint32_t)index;
    co->state = SIM_CORO_READY;
    char *top = stack_low(co) + s->bytes;
#if CORO_ASAN
    /* A coroutine that finished here left its last frames poisoned. */
    ASAN_UNPOISON_MEMORY_REGION(top - s->page, s->page);
#endif
    co->sp = make_frame(top, co, fn, arg);
    return 0;
}

void sim__coro_main(sim_sched *s, sim_coro *co, sim_coro_fn fn, void *arg)
{
#if CORO_ASAN
    /* The stack switched from is the scheduler's for the first coroutine
     * to start; a later one may start from a coroutine passing to it. */
    if (s->stack_bottom)
        __sanitizer_finish_switch_fiber(NULL, NULL, NULL);
    else
        __sanitizer_finish_switch_fiber(NULL, &s->stack_bottom, &s->stack_size);
#endif
    fn(arg);
    co->state = SIM_CORO_DONE;
#if CORO_ASAN
    /* NULL: this fiber is gone, ASan may drop its fake stack. */
    __sanitizer_start_switch_fiber(NULL, s->stack_bottom, s->stack_size);
#endif
    switch_final(s);
}

int sim_coro_resume(sim_sched *s, sim_coro *co)
{
    assert(co->state == SIM_CORO_READY && "resume of a running/done coro");
    assert(s->current == NULL && "resume from inside a coroutine");
    if (s->stop) {
        int err = s->stop;
        s->stop = 0;
        s->last = NULL;
        return err;
    }
    co->state = SIM_CORO_RUNNING;
    s->current = co;
    s->resumes++;
#if CORO_ASAN
    void *fake = NULL;
    __sanitizer_start_switch_fiber(&fake, stack_low(co), co->stacks->bytes);
#endif
    switch_to_coro(s, co);
#if CORO_ASAN
    __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#endif
    co = s->last = s->current; /* co, or the last it passed the CPU to */
    s->current = NULL;
    co->stacks->yielded = (size_t)(stack_low(co) + co->stacks->bytes - (char *)co->sp);
    /* One branch on the way back, taken only when something went wrong:
     * the canary, or a coroutine that never came back by itself.  Under a
     * guard page the canary is not read: a frame that ran into it either
     * went on into the guard page, which faulted, or stopped inside its own
     * stack, where it harmed nothing (sim/coro.h). */
    bool broken = !co->stacks->guarded && !canary_intact(co);
    if (broken | (co->state == SIM_CORO_ABANDONED)) {
#if CORO_ASAN
        /* Its frames never returned: their redzones stay poisoned, where
         * the next user of this memory would trip on them. */
        ASAN_UNPOISON_MEMORY_REGION(stack_low(co), co->stacks->bytes);
#endif
        if (co->state == SIM_CORO_ABANDONED)
            return s->abandoned;
        co->state = SIM_CORO_BROKEN;
        return CL_ESTACK;
    }
    return 0;
}

void sim_coro_yield(sim_sched *s, sim_coro *co)
{
    assert(co->state == SIM_CORO_RUNNING && s->current == co);
    co->state = SIM_CORO_READY;
#if CORO_ASAN
    void *fake = NULL;
    __sanitizer_start_switch_fiber(&fake, s->stack_bottom, s->stack_size);
#endif
    switch_to_sched(s, co);
#if CORO_ASAN
    /* Back from the scheduler or from a coroutine passing to this one. */
    __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#endif
}

void sim_coro_pass(sim_sched *s, sim_coro *from, sim_coro *to)
{
    assert(from->state == SIM_CORO_RUNNING && s->current == from && "pass from a running coro");
    assert(to->state == SIM_CORO_READY && to != from && "pass to a ready coro");
    from->state = SIM_CORO_READY;
    to->state = SIM_CORO_RUNNING;
    s->current = to;
    s->resumes++;
#if CORO_ASAN
    void *fake = NULL;
    __sanitizer_start_switch_fiber(&fake, stack_low(to), to->stacks->bytes);
#endif
    switch_to_other(s, from, to);
#if CORO_ASAN
    __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#endif
}

bool sim_coro_may_pass(const sim_coro *co)
{
    return co->stacks->guarded || canary_intact(co);
}

bool sim_coro_done(const sim_coro *co)
{
    return co->state == SIM_CORO_DONE || co->state == SIM_CORO_BROKEN ||
           co->state == SIM_CORO_ABANDONED;
}

void sim_sched_stop(sim_sched *s, int err)
{
    s->stop = err;
}

void sim_sched_abandon(sim_sched *s, int err)
{
    sim_coro *co = s->current;
    assert(co && "abandon with no coroutine running");
    co->state = SIM_CORO_ABANDONED;
    s->abandoned = err;
    s->stop = 0;
#if CORO_ASAN
    __sanitizer_start_switch_fiber(NULL, s->stack_bottom, s->stack_size);
#endif
    switch_final(s);
}

bool sim_coro_overflowed(const sim_coro *co, const void *addr, const void *sp)
{
    const sim_stacks *st = co->stacks;
    uintptr_t low = (uintptr_t)stack_low(co), a = (uintptr_t)addr;
    uintptr_t map = (uintptr_t)st->map, end = map + st->map_bytes;
    /* Inside the mapping only a guard page faults. */
    return (uintptr_t)sp < low || (a < low && a >= low - st->page) || (a >= map && a < end);
}

bool sim_stacks_cold(const sim_stacks *s)
{
    return s->count > PREFETCH_DEEP_ABOVE;
}

void sim_stacks_prefetch(const sim_stacks *s, size_t index)
{
    const char *low = s->base + index * s->stride, *top = low + s->bytes;
    size_t from = s->yielded, span = PREFETCH_SHALLOW;
    if (sim_stacks_cold(s)) {
        from += PREFETCH_BELOW;
        span = PREFETCH_FRAMES;
    }
    if (from > s->bytes)
        from = s->bytes;
    const char *end = from > span ? top - from + span : top;
    for (const char *p = top - from; p < end; p += 64)
        __builtin_prefetch(p);
    if (!s->guarded)
        __builtin_prefetch(low); /* the canary, read when it switches back */
}

void sim_coro_release(sim_coro *co)
{
    assert(sim_coro_done(co) && "release of a suspended coroutine");
    (void)madvise(stack_low(co), co->stacks->bytes, MADV_DONTNEED);
}
