/*
 * tick.h - the ranks' clock read as the processor's time-stamp counter.
 *
 * A measured iteration is timed by two readings of the rank's clock, and
 * the window way (core/sync.h) starts it by spinning on that clock, so a
 * reading's cost is in every figure: the later a rank sees the start, and
 * the longer its last reading takes to return, the longer the iteration
 * looks.  clock_gettime(CLOCK_MONOTONIC) costs 30-35 ns here; the counter
 * itself (rdtsc) 12 ns.  Where the kernel keeps CLOCK_MONOTONIC on that
 * counter (its clocksource is "tsc": the counter runs at one rate and is
 * synchronized between cores), the launcher reads both clocks together
 * when a run starts, and every rank it forks turns ticks into seconds from
 * there with one rate: the ranks still read one clock, and the empty
 * pattern's window-way time falls from 70 to 20-25 ns.  The rate is the
 * counter's, the same for every run of the process, so it is measured
 * once a process (both clocks read again TICK_CALIBRATION seconds after
 * the first run's reading) and kept, with whether the counter is the
 * kernel's clock at all: a command that launches hundreds of runs
 * (validate, a calibration) pays that millisecond and the look at
 * /sys once.
 *
 * The mapping's rate is the monotonic clock's to within the two readings'
 * error over the calibration (about 1e-5): every time is off by that
 * fraction at most.  Runs whose ranks were not all forked by one launcher
 * (several hosts, mpirun's processes) keep CLOCK_MONOTONIC: two launchers'
 * mappings differ in rate, and their offsets are estimated on the clock
 * the kernel keeps.  Elsewhere (another clocksource, another processor)
 * tick_begin leaves the clock off.
 */
#ifndef REAL_TICK_H
#define REAL_TICK_H

#include <stdbool.h>
#include <stdint.h>

#define TICK_CALIBRATION 1e-3 /* seconds between the two readings of both clocks */

typedef struct tick_clock {
    uint64_t base;    /* the counter when the monotonic clock read base_s */
    double base_s;    /* CLOCK_MONOTONIC seconds */
    double per_tick;  /* seconds a tick; 0: the clock is off (CLOCK_MONOTONIC is read) */
    bool calibrating; /* between tick_begin and tick_end, where the counter is read */
} tick_clock;

#if defined(__x86_64__)
#include <x86intrin.h>
/* The counter, not ordered against loads and stores around it: a reading
 * may move by a few instructions, well within its own 12 ns. */
static inline uint64_t tick_read(void)
{
    return __rdtsc();
}
#define TICK_COUNTER "tsc" /* the kernel's name of the clocksource on it */
#define TICK_HAVE_COUNTER 1
#else
static inline uint64_t tick_read(void)
{
    return 0;
}
#define TICK_COUNTER "none"
#define TICK_HAVE_COUNTER 0 /* no counter read here: the clock stays off */
#endif

/* Seconds since k->base_s at the counter reading t (k on). */
static inline double tick_seconds(const tick_clock *k, uint64_t t)
{
    return (double)(int64_t)(t - k->base) * k->per_tick;
}

/* The counter reading at seconds s since k->base_s (k on; the base
 * itself for s <= 0). */
static inline uint64_t tick_at(const tick_clock *k, double s)
{
    return s > 0 ? k->base + (uint64_t)(s / k->per_tick) : k->base;
}

/* Reads both clocks together into k (the clock stays off until tick_end)
 * and returns the monotonic reading, or only reads CLOCK_MONOTONIC where
 * the counter is not the kernel's clock or use is false (COMMLAB_CLOCK is
 * "monotonic", real/job.h; or the ranks have launchers of their own).
 * Cannot fail. */
double tick_begin(tick_clock *k, bool use);

/* Turns the clock tick_begin read on, with the process's rate: measured
 * the first time (both clocks read again once TICK_CALIBRATION seconds
 * have passed since tick_begin, spinning out what is left), kept after.
 * A no-op unless tick_begin read the counter. */
void tick_end(tick_clock *k);

/* "tsc" or "monotonic": the clock k reads, for reports. */
const char *tick_name(const tick_clock *k);

#endif
