/* row_real_line.c - the floor under every shared-memory message: one cache
 * line handed from one core to the other and back.
 *
 * Two processes, bound to the cores the shm transport binds ranks 0 and 1
 * to, share two lines, one per direction (as a transport has one ring per
 * direction).  Process 0 writes round i into its line; process 1 waits for
 * it and writes i into its own; process 0 waits for that: one round trip,
 * and each way is one line leaving the writer's cache for the reader's.  No
 * transport can deliver a message in less, so a transport's one-way time
 * less this floor is what its software costs, and the floor itself says
 * which regime the machine is in (where two cores share a cache the hand-off
 * is tens of nanoseconds, across dies or sockets hundreds).
 *
 * Waiting spins on the line with nothing between loads ("spin"), or with
 * the CPU's pause hint between them as rank_wait() does ("pause"): the
 * difference is what the hint costs a hand-off.
 *
 * A process that finds nothing for LINE_TIMEOUT_S gives up (its peer died),
 * so a failed measurement never hangs. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/bench.h"
#include "cli/cli.h"
#include "real/bind.h"

#define LINE_ROUNDS 1000 /* round trips per sample, as bench shm's latency */
#define LINE_TIMEOUT_S 5.0

typedef struct line {
    _Alignas(64) _Atomic uint64_t round;
} line;

/* The shared mapping: a line each way and process 0's sample times. */
typedef struct line_area {
    line to[2];        /* to[r]: written by process 1 - r, read by r */
    double sample[LINE_SAMPLES_MAX + 1];
} line_area;

static inline void relax(bool pause)
{
    if (!pause)
        return;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

/* Waits until l holds `round`; false when LINE_TIMEOUT_S pass first. */
static bool await(line *l, uint64_t round, bool pause)
{
    double deadline = 0;
    for (unsigned spins = 1;; spins++) {
        if (atomic_load_explicit(&l->round, memory_order_acquire) == round)
            return true;
        relax(pause);
        if ((spins & 0xfffff) == 0) {
            double t = cli_now();
            if (deadline == 0)
                deadline = t + LINE_TIMEOUT_S;
            else if (t > deadline)
                return false;
        }
    }
}

/* Process `me` of the two: samples + 1 runs of LINE_ROUNDS round trips,
 * process 0 timing each (the first is the warm-up).  Exits 0 or 1. */
static void play(line_area *a, int me, int samples, bool pause)
{
    uint64_t round = 0;
    for (int s = 0; s <= samples; s++) {
        double t0 = cli_now();
        for (int i = 0; i < LINE_ROUNDS; i++) {
            round++;
            if (me == 0) {
                atomic_store_explicit(&a->to[1].round, round, memory_order_release);
                if (!await(&a->to[0], round, pause))
                    _exit(1);
            } else {
                if (!await(&a->to[1], round, pause))
                    _exit(1);
                atomic_store_explicit(&a->to[0].round, round, memory_order_release);
            }
        }
        if (me == 0)
            a->sample[s] = cli_now() - t0;
    }
    _exit(0);
}

int bench_line_floor(int samples, bool pause, cl_stats *out)
{
    if (samples < 1 || samples > LINE_SAMPLES_MAX)
        return CL_EINVAL;
    real_binder *b;
    if (real_binder_create(&b, 2, true, NULL))
        return CL_EIO;
    line_area *a = mmap(NULL, sizeof *a, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                        -1, 0);
    if (a == MAP_FAILED) {
        real_binder_destroy(b);
        return CL_ENOMEM;
    }
    pid_t pid[2] = {-1, -1};
    pid_t parent = getpid();
    int err = 0;
    for (int r = 0; r < 2 && !err; r++) {
        fflush(NULL);
        pid[r] = fork();
        if (pid[r] < 0) {
            err = CL_EIO;
        } else if (pid[r] == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent || real_binder_apply(b, r, NULL))
                _exit(1);
            play(a, r, samples, pause);
        }
    }
    for (int r = 0; r < 2; r++) {
        int st;
        if (pid[r] <= 0)
            continue;
        if (err)
            kill(pid[r], SIGKILL);
        while (waitpid(pid[r], &st, 0) < 0 && errno == EINTR)
            ;
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            err = CL_EIO;
    }
    if (!err) {
        for (int s = 1; s <= samples; s++)
            a->sample[s] /= 2.0 * LINE_ROUNDS;
        err = stats_compute(a->sample + 1, (size_t)samples, out);
    }
    munmap(a, sizeof *a);
    real_binder_destroy(b);
    return err;
}
