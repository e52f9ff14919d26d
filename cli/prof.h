/*
 * prof.h - a sampling profiler for `bench sim --profile`: where the
 * simulator's time goes, by phase (context switches, event queue,
 * matching, flow pricing, the engine's operations, the pattern and the
 * API), with no cost to a run that is not profiled.
 *
 * How.  A POSIX timer on CLOCK_MONOTONIC sends SIGPROF every interval;
 * the handler (on the alternate signal stack when one is set, as
 * sim/fault.h sets during a run) stores the interrupted program counter
 * in a buffer allocated beforehand.  Afterwards each sample is named by
 * the executable's own symbol table (/proc/self/exe, .symtab): a function
 * is put in a phase by its source file (static functions) or its name's
 * prefix (sim_queue_, match_, ...).  A function the compiler inlined
 * counts as its caller; samples outside the executable (libc, libm) are a
 * phase of their own.  Wall-clock sampling: on a loaded machine a sample
 * lands where the process was when it got the processor back, which is
 * still a fair draw of where it runs.
 *
 * One profiler at a time per process (the signal handler finds it
 * through one static pointer: a handler has no other way in).  x86-64 and
 * aarch64 Linux; elsewhere prof_start says it is not built.
 */
#ifndef CLI_PROF_H
#define CLI_PROF_H

#include <stddef.h>

typedef struct prof prof;

/* Starts sampling every interval_s seconds into a buffer of at most
 * max_samples.  CL_ENOSYS where it is not built, CL_EINVAL when another
 * profiler runs, CL_ENOMEM, or CL_EIO (the timer or the handler was
 * refused); on error nothing is left installed and *out is untouched. */
int prof_start(prof **out, double interval_s, size_t max_samples);

/* Stops sampling: the timer is deleted and SIGPROF's handler put back.
 * Cannot fail. */
void prof_stop(prof *p);

/* Writes the breakdown into buf (len bytes, always terminated): samples
 * per phase, then the `top` functions with most samples, each with its
 * share.  p must be stopped.  0, or CL_EIO when the executable's symbols
 * cannot be read (buf then says so). */
int prof_report(const prof *p, int top, char *buf, size_t len);

/* Frees p (stopped first if it runs).  NULL is a no-op. */
void prof_destroy(prof *p);

#endif /* CLI_PROF_H */
