/*
 * boot.h - the rendezvous of a run whose ranks were started elsewhere
 * (real/world.h): rank 0's process gathers every other, hands out what the
 * transport needs, and carries each rank's status back so that one
 * watchdog sees the whole world.
 *
 * Shape.  Every process of such a run is a small launcher (an agent) that
 * forks its one rank as in a local run (real/launch.c).  The agents talk
 * over one connection each to rank 0's agent (the master): a star of
 * stream sockets, TCP or a local Unix socket, opened once by boot_open()
 * and used by every run of the command (one per size).  During a run:
 *
 *   agent -> master   ADDR   where its rank can be reached (the job's
 *                            address slot, real/job.h), once per run
 *                     STATE  its rank's state, progress and blocking call,
 *                            whenever they change (the watchdog's input)
 *                     FAIL   its rank failed or died: status and why
 *                     DONE   its rank finished: counters, iteration times
 *                            and records
 *   master -> agents  TABLE  every rank's address, once all are in
 *                     ABORT  the run failed (a deadlock, a dead rank):
 *                            status and why; stop your rank
 *                     FINISH every rank is done: the run's status
 *
 * The master writes what it hears into its own job's slots, so its
 * watchdog (deadlock, dead ranks) and its gathering of results work on the
 * world as they do on a local run.
 *
 * Trust.  Joining proves the secret over TCP (real/handshake.h's
 * challenge-response, the one the tcp transport's connections use) or, on
 * a Unix socket in the user's private folder (real/world.h), the peer's
 * user id (SO_PEERCRED), which each end checks before a byte is said; then
 * the master hands out the job's secret.  The master carries on every
 * joiner's handshake at once, each with BOOT_HANDSHAKE_SECONDS
 * (real/admit.c), so idle strangers delay nobody.  A stranger who fails is
 * refused and logged once.  With GO the master sends a random job id;
 * boot_secret() is the key bound to it, so two jobs given one secret never
 * accept each other's transport connections.  Every frame is real/wire.h's (a 48-byte big-endian header whose
 * ctx is the run, then a body wire.h encodes and decodes); a length is
 * checked against its kind's maximum before a byte of the body is read,
 * and every rank, size and count in a body is checked before use.
 *
 * Files: boot.c joins (boot_open and the handshake), admit.c is the
 * master's side of it, relay.c carries the runs (boot_run_begin ..
 * boot_run_end); boot_impl.h is what they share.
 *
 * Records carry each host's own clock: a trace over several hosts shows
 * each rank's timeline on its own time base.
 */
#ifndef REAL_BOOT_H
#define REAL_BOOT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "core/diag.h"
#include "real/auth.h"
#include "real/job.h"
#include "real/world.h"

typedef struct boot boot;

/* Joins the rendezvous of w: rank 0 listens and waits (up to the join
 * timeout) for every other rank, the others connect, retrying until then.
 * digest sums up the options of the run: processes started with others
 * are refused.  On error d says why and *out is NULL. */
int boot_open(boot **out, const real_world *w, const unsigned char digest[AUTH_HASH_BYTES],
              cl_diag *d);
/* Closes every socket and frees b; b may be NULL. */
void boot_close(boot *b);
/* In a forked rank: closes the inherited sockets (nothing is sent). */
void boot_forget(boot *b);

/* The job's key, shared by every rank after boot_open: the secret bound
 * to the job's id. */
const unsigned char *boot_secret(const boot *b);
/* The numeric address this process's ranks should listen on so the others
 * reach them: the local end of its connection to the master ("127.0.0.1"
 * on a Unix rendezvous). */
const char *boot_listen_addr(const boot *b);
/* This process's rank, and the world's size. */
int boot_rank(const boot *b);
int boot_size(const boot *b);
/* Rank 0: the pid of the process that joined for rank (its agent), when
 * it joined through the Unix rendezvous, so runs on this host (the pid
 * this host's kernel gave the socket's peer); 0 otherwise, and in every
 * other process. */
pid_t boot_local_pid(const boot *b, int rank);

/* ---- a run (real_run), on job j; one run at a time ---- */

void boot_run_begin(boot *b, job *j);
/* Reads what came, sends what changed, waiting up to timeout_ms for
 * something to read.  Cannot fail: a lost peer becomes a failure
 * (boot_failure). */
void boot_pump(boot *b, int timeout_ms);
/* A failure learned from elsewhere, once: CL_E* into *status and why into
 * *why; 0 when there is none (new).  *from_master: the master stopped the
 * run (an agent only reports what it adds). */
int boot_failure(boot *b, int *status, cl_diag *why, bool *from_master);
/* Whether the run is still waiting on other processes: the master until
 * every other rank is done or failed, an agent until the master's FINISH
 * or ABORT (or the master is gone). */
bool boot_waiting(const boot *b);
/* This process's rank failed (or the run was stopped here): an agent tells
 * the master, the master tells every agent.  Returns whether the master
 * will report it (an agent still connected), so that it is said once. */
bool boot_report_failure(boot *b, int status, const char *msg);
/* This process's rank finished well: an agent sends its results. */
void boot_report_done(boot *b);
/* The master ends the run for everyone with status (0 or a CL_E*); an
 * agent's status is the master's, from FINISH or ABORT. */
void boot_run_end(boot *b, int status);
int boot_run_status(const boot *b);

#endif
