/*
 * debug.h - `--debug`: misuse of a buffer made visible, on every backend.
 *
 * A buffer handed to a send or a receive belongs to the operation until the
 * wait (or test) that completes it returns (include/commlab.h).  Breaking
 * that rule mostly goes unseen: what arrives depends on when the bytes
 * really moved.  With the checks on for a rank (debug_attach), core/comm.c
 * routes its point-to-point calls through here:
 *
 *   - a non-blocking send hashes its buffer when it is posted and again
 *     when it completes; a difference is reported: the program modified the
 *     buffer before the send completed;
 *   - a non-blocking receive hands the transport a buffer of its own (a
 *     shadow) and fills the program's buffer with DEBUG_POISON.  When the
 *     receive completes, the program's buffer must still hold nothing but
 *     the poison (else the program wrote it: reported), and the shadow -
 *     the message, and past its end the bytes the buffer held at the post -
 *     is copied in.  A read before completion sees the poison; cl_verify
 *     says so when the bytes it finds wrong are poison;
 *   - a call whose buffer overlaps that of a pending non-blocking receive,
 *     or a receive whose buffer overlaps that of a pending non-blocking
 *     send, is reported and fails before anything is posted.  One buffer
 *     sent to several ranks at once is legal: nobody writes it.
 *
 * Blocking calls (cl_send, cl_recv) take part in the overlap checks only:
 * between their post and their completion the program runs nothing.  The
 * barrier and other traffic commlab makes itself are not checked.
 *
 * A report goes through the backend's misuse hook ("rank 0: misuse: ...")
 * and the call returns CL_ECHECK: the run ends as a failed data check does
 * (exit status 1), since the data the program goes on with is wrong, or
 * may be on another transport.  A call is named by its kind and its number
 * among the calls of that kind its rank made in the running iteration
 * ("isend #2"); a buffer from cl_alloc by the number of that cl_alloc call
 * and the offset ("cl_alloc #1 + 512"), which the same program gives on
 * every run and every backend (a raw address changes from run to run), any
 * other buffer by its address.
 *
 * Ownership.  The state hangs off the rank's world communicator from
 * debug_attach until debug_detach (or debug_destroy of the pointer taken
 * from it).  Shadows come from a pool that lives as long, so a transport
 * that remembers a buffer's address (a registration) never meets one that
 * went back to malloc.  A request never completed keeps its entry until
 * then.
 *
 * Cost when on: two hashes per non-blocking send, a fill and two copies per
 * non-blocking receive, a scan of the rank's pending operations per call.
 * When off, core/comm.c tests one pointer per call and does nothing else.
 */
#ifndef CL_DEBUG_H
#define CL_DEBUG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/comm.h"

/* What a pending non-blocking receive's buffer holds until it completes:
 * 0xdb reads as no plausible count, size or float (0xdbdbdbdb is -1.2e17
 * as a float, 0xdbdb... a large negative integer). */
#define DEBUG_POISON 0xdb

/* ---- life (called by the backends) ---- */

/* Turns the checks on for the rank of world communicator c.  0, or
 * CL_ENOMEM with nothing changed. */
int debug_attach(cl_comm *c);
/* Turns them off and frees what they hold; nothing when off.  The
 * transport must be done writing pending receives' shadows. */
void debug_detach(cl_comm *c);
/* Frees a state taken from a communicator (c->debug) that is already gone;
 * NULL is ignored. */
void debug_destroy(debug_state *d);
/* A new iteration of the pattern begins on this rank: calls and cl_alloc
 * blocks are numbered from 1 again.  Nothing when off; cannot fail. */
void debug_iteration(cl_comm *c);

/* ---- the calls (core/comm.c, only when c->world->debug is set) ---- */

/* cl_isend / cl_irecv after their argument checks, with the same contract
 * (blocking calls pass through here too: c->world->blocking_call).  Also
 * CL_ECHECK for a misuse (reported) and CL_ENOMEM; on any error nothing is
 * posted and the program's buffer is as it was. */
int debug_isend(cl_comm *c, const void *buf, size_t bytes, int dst, int tag, cl_request **req);
int debug_irecv(cl_comm *c, void *buf, size_t bytes, int src, int tag, cl_request **req);
/* req is done and about to be released: checks it and, for a receive,
 * moves the message into the program's buffer.  0 or CL_ECHECK
 * (reported); either way req is no longer tracked. */
int debug_complete(cl_comm *c, cl_request *req);
/* cl_alloc handed out p (bytes): buffers in it are named after it. */
void debug_alloc_note(cl_comm *c, const void *p, size_t bytes);
/* For cl_verify's message: at points to the first wrong byte of a buffer,
 * left bytes from there to its end.  Returns an explanation to append when
 * the checks are on and the wrong bytes are poison, else "".  Never NULL. */
const char *debug_verify_hint(const cl_comm *c, const void *at, size_t left);

/* ---- the pieces, for tests ---- */

/* A 64-bit hash of bytes (8 at a time): a change within one aligned 8-byte
 * word always changes it, any other change (bytes, the order of words) but
 * for a chance of about 2^-64.  Cannot fail. */
uint64_t debug_hash(const void *buf, size_t bytes);
/* Index of the first byte of buf that is not DEBUG_POISON; bytes if all
 * are. */
size_t debug_first_written(const void *buf, size_t bytes);

#endif
