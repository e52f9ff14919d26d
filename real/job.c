/* job.c - the clock, the address slots and the slots' seqlock; see job.h. */
#include "real/job.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commlab.h"

double job_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One debug variable's seconds (or seconds a second) within +-limit;
 * unset or empty leaves *out 0. */
static int clock_var(const char *name, double limit, double *out, cl_diag *d)
{
    const char *v = getenv(name);
    *out = 0;
    if (!v || !*v)
        return 0;
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (*end || errno || !(x >= -limit && x <= limit))
        return diag_set(d, CL_EINVAL, "%s must be a number between %g and %g, got '%s'", name,
                        -limit, limit, v);
    *out = x;
    return 0;
}

int job_clock_debug(double *shift, double *drift, bool *monotonic, cl_diag *d)
{
    int err = clock_var("COMMLAB_CLOCK_SHIFT", 1e6, shift, d);
    if (!err)
        err = clock_var("COMMLAB_CLOCK_DRIFT", 0.1, drift, d);
    if (err)
        return err;
    const char *v = getenv("COMMLAB_CLOCK");
    *monotonic = v && strcmp(v, "monotonic") == 0;
    if (v && *v && !*monotonic && strcmp(v, "tsc") != 0)
        return diag_set(d, CL_EINVAL, "COMMLAB_CLOCK must be monotonic or tsc, got '%s'", v);
    return 0;
}

/* ---- the seqlock: seq is odd while the wait is written ---- */

void job_slot_wait_begin(job_slot *s, wf_op call, int iter, bool outside, int returned)
{
    uint32_t q = atomic_load_explicit(&s->seq, memory_order_relaxed);
    atomic_store_explicit(&s->seq, q + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    s->wait.call = (uint32_t)call;
    s->wait.npending = 0;
    s->wait.nwaiting = 0;
    s->wait.iter = iter;
    s->wait.outside = outside;
    s->wait.returned = returned;
}

void job_slot_wait_add(job_slot *s, const wf_pending *op)
{
    if (s->wait.npending < JOB_MAX_PENDING)
        s->wait.pending[s->wait.npending++] = *op;
    s->wait.nwaiting++;
}

void job_slot_wait_end(job_slot *s)
{
    uint32_t q = atomic_load_explicit(&s->seq, memory_order_relaxed);
    atomic_store_explicit(&s->seq, q + 1, memory_order_release);
}

void job_slot_wait_set(job_slot *s, const job_wait *w)
{
    assert(w->npending <= JOB_MAX_PENDING);
    job_slot_wait_begin(s, (wf_op)w->call, w->iter, w->outside, w->returned);
    s->wait.npending = w->npending;
    s->wait.nwaiting = w->nwaiting;
    memcpy(s->wait.pending, w->pending, w->npending * sizeof *w->pending);
    job_slot_wait_end(s);
}

uint32_t job_slot_wait_read(const job_slot *s, job_wait *copy)
{
    for (;;) {
        uint32_t q = atomic_load_explicit(&s->seq, memory_order_acquire);
        if (q & 1)
            continue;
        copy->call = s->wait.call;
        copy->npending = s->wait.npending < JOB_MAX_PENDING ? s->wait.npending
                                                            : JOB_MAX_PENDING;
        copy->nwaiting = s->wait.nwaiting;
        copy->iter = s->wait.iter;
        copy->outside = s->wait.outside;
        copy->returned = s->wait.returned;
        memcpy(copy->pending, s->wait.pending, copy->npending * sizeof *copy->pending);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&s->seq, memory_order_relaxed) == q)
            return q;
    }
}

/* ---- addresses ---- */

void job_addr_publish(const job *j, int rank, const void *addr, size_t len)
{
    assert(len <= JOB_ADDR_MAX);
    job_addr *a = &j->addrs[rank];
    memcpy(a->bytes, addr, len);
    a->len = (uint32_t)len;
    atomic_store_explicit(&a->ready, 1, memory_order_release);
}

int job_addr_wait(const job *j, int rank, void *out, size_t cap, size_t *len, double deadline)
{
    const job_addr *a = &j->addrs[rank];
    while (!atomic_load_explicit(&a->ready, memory_order_acquire)) {
        if (job_now() > deadline)
            return CL_ETIMEOUT;
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
    }
    if (a->len > cap || a->len > JOB_ADDR_MAX)
        return CL_EPROTO;
    memcpy(out, a->bytes, a->len);
    *len = a->len;
    return 0;
}
