/* prof.c - SIGPROF sampling and naming the samples from the executable's
 * symbol table (see prof.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* REG_RIP, dl_iterate_phdr */
#endif
#include "cli/prof.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "commlab.h"

#if defined(__linux__) && (defined(__x86_64__) || defined(__aarch64__))
#define PROF_BUILT 1
#else
#define PROF_BUILT 0
#endif

struct prof {
    uintptr_t *pc;          /* samples: interrupted program counters */
    size_t cap;             /* slots in pc */
    volatile size_t n;      /* samples taken (written by the handler only) */
    volatile size_t dropped; /* samples past cap */
    timer_t timer;
    struct sigaction old;   /* SIGPROF's handler before */
    bool running;
};

/* The profiler the handler writes to: a signal handler has no argument
 * to be given it. */
static prof *sampling;

#if PROF_BUILT
static void on_prof(int sig, siginfo_t *si, void *ctx)
{
    (void)sig;
    (void)si;
    prof *p = sampling;
    if (!p)
        return;
    const ucontext_t *uc = ctx;
#if defined(__x86_64__)
    uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#else
    uintptr_t pc = (uintptr_t)uc->uc_mcontext.pc;
#endif
    size_t n = p->n;
    if (n < p->cap) {
        p->pc[n] = pc;
        p->n = n + 1;
    } else {
        p->dropped = p->dropped + 1;
    }
}
#endif

int prof_start(prof **out, double interval_s, size_t max_samples)
{
#if !PROF_BUILT
    (void)out;
    (void)interval_s;
    (void)max_samples;
    return CL_ENOSYS;
#else
    if (sampling || !(interval_s > 0) || max_samples == 0)
        return CL_EINVAL;
    prof *p = calloc(1, sizeof *p);
    if (p)
        p->pc = malloc(max_samples * sizeof *p->pc);
    if (!p || !p->pc) {
        if (p)
            free(p);
        return CL_ENOMEM;
    }
    p->cap = max_samples;
    struct sigaction sa = {.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK};
    sa.sa_sigaction = on_prof;
    sigemptyset(&sa.sa_mask);
    struct sigevent ev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGPROF};
    if (sigaction(SIGPROF, &sa, &p->old) != 0) {
        prof_destroy(p);
        return CL_EIO;
    }
    if (timer_create(CLOCK_MONOTONIC, &ev, &p->timer) != 0) {
        sigaction(SIGPROF, &p->old, NULL);
        prof_destroy(p);
        return CL_EIO;
    }
    sampling = p;
    p->running = true;
    long ns = (long)(interval_s * 1e9);
    struct itimerspec its = {.it_interval = {(time_t)(ns / 1000000000L), ns % 1000000000L}};
    its.it_value = its.it_interval;
    if (timer_settime(p->timer, 0, &its, NULL) != 0) {
        prof_stop(p);
        prof_destroy(p);
        return CL_EIO;
    }
    *out = p;
    return 0;
#endif
}

void prof_stop(prof *p)
{
    if (!p || !p->running)
        return;
    timer_delete(p->timer);
    sigaction(SIGPROF, &p->old, NULL);
    sampling = NULL;
    p->running = false;
}

void prof_destroy(prof *p)
{
    if (!p)
        return;
    prof_stop(p);
    free(p->pc);
    free(p);
}

/* ---- naming ---- */

enum { PH_SWITCH, PH_QUEUE, PH_MATCH, PH_FLOW, PH_ENGINE, PH_PATTERN, PH_OUTSIDE, PH_N };

static const char *const phase_name[PH_N] = {
    "context switches (sim/coro)",
    "event queue (sim/queue)",
    "matching (core/match)",
    "flow pricing, solver, routes (sim/flow, net, links)",
    "engine: operations, completions (sim/engine)",
    "pattern code and the cl_* API (chapters, core)",
    "outside the executable (libc, libm)",
};

/* A phase by a static function's source file or a global's prefix;
 * the first rule that fits wins. */
static const struct {
    const char *text;
    bool file;
    int phase;
} rules[] = {
    {"coro.c", true, PH_SWITCH},   {"coro_x86_64.S", true, PH_SWITCH},
    {"coro_aarch64.S", true, PH_SWITCH}, {"sim_coro_", false, PH_SWITCH},
    {"sim_stacks_", false, PH_SWITCH},
    {"sim__coro_", false, PH_SWITCH}, {"sim_sched_", false, PH_SWITCH},
    {"queue.c", true, PH_QUEUE},   {"sim_queue_", false, PH_QUEUE},
    {"match.c", true, PH_MATCH},   {"match_", false, PH_MATCH},
    {"flow.c", true, PH_FLOW},     {"flow_query.c", true, PH_FLOW},
    {"net.c", true, PH_FLOW},      {"net_load.c", true, PH_FLOW},
    {"net__", false, PH_FLOW},
    {"links.c", true, PH_FLOW},    {"sim_flow_", false, PH_FLOW},
    {"sim_net_", false, PH_FLOW},  {"sim_links_", false, PH_FLOW},
    {"engine.c", true, PH_ENGINE}, {"engine_ops.c", true, PH_ENGINE},
    {"engine_price.c", true, PH_ENGINE}, {"engine_proto.c", true, PH_ENGINE},
    {"engine_report.c", true, PH_ENGINE}, {"engine_share.c", true, PH_ENGINE},
    {"fault.c", true, PH_ENGINE}, {"sim_", false, PH_ENGINE}, {"engine__", false, PH_ENGINE},
};

typedef struct func {
    uintptr_t lo, hi;   /* [lo, hi): its code, at run time */
    const char *name;   /* in the mapped string table */
    int phase;
    size_t samples;
} func;

static int phase_of(const char *name, const char *file)
{
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        if (rules[i].file ? file && strcmp(file, rules[i].text) == 0
                          : strncmp(name, rules[i].text, strlen(rules[i].text)) == 0)
            return rules[i].phase;
    }
    return PH_PATTERN;
}

static int by_lo(const void *a, const void *b)
{
    const func *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int by_samples(const void *a, const void *b)
{
    const func *x = a, *y = b;
    return x->samples > y->samples ? -1 : x->samples < y->samples;
}

static int first_object(struct dl_phdr_info *info, size_t size, void *bias)
{
    (void)size;
    *(uintptr_t *)bias = (uintptr_t)info->dlpi_addr;
    return 1; /* the first object is the executable */
}

/* The executable's functions, sorted, into *out (*n of them), named from
 * the mapping *map (map_len bytes), which the caller unmaps. */
static int read_funcs(func **out, size_t *n, void **map, size_t *map_len)
{
    int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || (size_t)st.st_size < sizeof(Elf64_Ehdr)) {
        if (fd >= 0)
            close(fd);
        return CL_EIO;
    }
    size_t len = (size_t)st.st_size;
    char *m = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return CL_EIO;
    *map = m;
    *map_len = len;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)(const void *)m;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shoff == 0 || eh->e_shoff > len ||
        eh->e_shnum > (len - eh->e_shoff) / sizeof(Elf64_Shdr))
        return CL_EIO;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(const void *)(m + eh->e_shoff);
    const Elf64_Shdr *symtab = NULL;
    for (size_t i = 0; i < eh->e_shnum; i++)
        if (sh[i].sh_type == SHT_SYMTAB)
            symtab = &sh[i];
    if (!symtab || symtab->sh_link >= eh->e_shnum || symtab->sh_offset > len ||
        symtab->sh_size > len - symtab->sh_offset)
        return CL_EIO;
    const Elf64_Shdr *strs = &sh[symtab->sh_link];
    if (strs->sh_offset > len || strs->sh_size > len - strs->sh_offset || strs->sh_size == 0)
        return CL_EIO;
    const char *str = m + strs->sh_offset;
    if (str[strs->sh_size - 1] != 0)
        return CL_EIO;
    const Elf64_Sym *sym = (const Elf64_Sym *)(const void *)(m + symtab->sh_offset);
    size_t nsym = symtab->sh_size / sizeof *sym;
    func *f = calloc(nsym ? nsym : 1, sizeof *f);
    if (!f)
        return CL_ENOMEM;
    uintptr_t bias = 0;
    dl_iterate_phdr(first_object, &bias);
    const char *file = NULL;
    size_t k = 0;
    for (size_t i = 0; i < nsym; i++) {
        if (sym[i].st_name >= strs->sh_size)
            continue;
        const char *name = str + sym[i].st_name;
        int type = ELF64_ST_TYPE(sym[i].st_info);
        if (type == STT_FILE)
            file = name;
        if (ELF64_ST_BIND(sym[i].st_info) != STB_LOCAL)
            file = NULL; /* globals follow every local: no file of their own */
        if (type != STT_FUNC || sym[i].st_value == 0)
            continue;
        uintptr_t lo = bias + (uintptr_t)sym[i].st_value;
        f[k++] = (func){.lo = lo, .hi = lo + (sym[i].st_size ? sym[i].st_size : 1),
                        .name = name, .phase = phase_of(name, file)};
    }
    qsort(f, k, sizeof *f, by_lo);
    *out = f;
    *n = k;
    return 0;
}

static func *find_func(func *f, size_t n, uintptr_t pc)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (f[mid].lo <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && pc < f[lo - 1].hi ? &f[lo - 1] : NULL;
}

int prof_report(const prof *p, int top, char *buf, size_t len)
{
    func *f = NULL;
    size_t nf = 0, map_len = 0;
    void *map = NULL;
    int err = read_funcs(&f, &nf, &map, &map_len);
    if (err) {
        snprintf(buf, len, "    (no profile: the executable's symbols cannot be read)\n");
        if (map)
            munmap(map, map_len);
        return CL_EIO;
    }
    size_t phase[PH_N] = {0}, total = p->n, outside = 0;
    for (size_t i = 0; i < total; i++) {
        func *g = find_func(f, nf, p->pc[i]);
        if (g) {
            g->samples++;
            phase[g->phase]++;
        } else {
            outside++;
        }
    }
    phase[PH_OUTSIDE] = outside;
    size_t used = 0;
#define ADD(...)                                                                    \
    do {                                                                            \
        int w_ = snprintf(buf + used, used < len ? len - used : 0, __VA_ARGS__);    \
        used += w_ > 0 ? (size_t)w_ : 0;                                            \
    } while (0)
    ADD("    profile: %zu samples%s\n", total, p->dropped ? " (buffer full: later ones dropped)" : "");
    double d = total ? (double)total : 1;
    for (int i = 0; i < PH_N; i++)
        ADD("    %6.1f%%  %s\n", 100.0 * (double)phase[i] / d, phase_name[i]);
    qsort(f, nf, sizeof *f, by_samples);
    ADD("    top functions (inlined code counts as its caller):\n");
    for (int i = 0; i < top && (size_t)i < nf && f[i].samples; i++)
        ADD("    %6.1f%%  %s\n", 100.0 * (double)f[i].samples / d, f[i].name);
#undef ADD
    if (len)
        buf[used < len ? used : len - 1] = 0;
    free(f);
    munmap(map, map_len);
    return 0;
}
