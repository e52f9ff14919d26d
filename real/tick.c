/* tick.c - the counter's calibration against CLOCK_MONOTONIC (tick.h). */
#include "real/tick.h"

#include <stdio.h>
#include <string.h>

#include "real/job.h"

#define PAIR_TRIES 8 /* readings of both clocks; the narrowest bracket is kept */
#define SANE_HZ_MIN 1e7
#define SANE_HZ_MAX 1e11

/* What the process learned of the counter, once (tick.h): a property of
 * the machine, not of a run, so not a run's state. */
static struct {
    bool looked;     /* usable is known */
    bool usable;     /* the kernel's CLOCK_MONOTONIC runs on the counter */
    double per_tick; /* seconds a tick; 0: not measured yet */
} counter;

/* Whether the kernel's CLOCK_MONOTONIC runs on the counter tick_read
 * reads: then it is synchronized between cores and runs at one rate. */
static bool counter_is_clock(void)
{
    if (counter.looked)
        return counter.usable;
    counter.looked = true;
    FILE *f = TICK_HAVE_COUNTER
                  ? fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r")
                  : NULL;
    if (!f)
        return false;
    char name[32] = "";
    bool ok = fgets(name, sizeof name, f) != NULL;
    fclose(f);
    name[strcspn(name, "\n")] = '\0';
    counter.usable = ok && strcmp(name, TICK_COUNTER) == 0;
    return counter.usable;
}

/* Both clocks at once: the monotonic reading and the counter halfway
 * between two readings around it, from the try whose two readings were
 * closest (a try the scheduler cut into is not kept).  Returns the
 * monotonic reading. */
static double read_both(uint64_t *tick)
{
    uint64_t narrowest = UINT64_MAX;
    double mono = 0;
    for (int i = 0; i < PAIR_TRIES; i++) {
        uint64_t a = tick_read();
        double m = job_now();
        uint64_t b = tick_read();
        if (b - a < narrowest) {
            narrowest = b - a;
            *tick = a + (b - a) / 2;
            mono = m;
        }
    }
    return mono;
}

double tick_begin(tick_clock *k, bool use)
{
    *k = (tick_clock){0};
    if (!use || !counter_is_clock()) {
        k->base_s = job_now();
        return k->base_s;
    }
    k->base_s = read_both(&k->base);
    k->calibrating = true;
    return k->base_s;
}

void tick_end(tick_clock *k)
{
    if (!k->calibrating)
        return;
    k->calibrating = false;
    if (counter.per_tick == 0) {
        while (job_now() - k->base_s < TICK_CALIBRATION)
            ;
        uint64_t t = 0;
        double s = read_both(&t) - k->base_s;
        double hz = (double)(t - k->base) / s;
        /* A counter that went backwards or ran at no plausible rate (a
         * migration between hosts, say) leaves the kernel's clock in use
         * for the process. */
        if (t > k->base && hz >= SANE_HZ_MIN && hz <= SANE_HZ_MAX)
            counter.per_tick = 1 / hz;
        else
            counter.usable = false;
    }
    k->per_tick = counter.usable ? counter.per_tick : 0;
}

const char *tick_name(const tick_clock *k)
{
    return k->per_tick > 0 ? TICK_COUNTER : "monotonic";
}
