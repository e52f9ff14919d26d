/*
 * handshake.h - proving the per-job secret on a fresh connection, without
 * sending it: the one challenge-response of the tcp transport's
 * connections (real/tcp_conn.c) and of the rendezvous (real/boot.c).
 *
 * The acceptor sends CHALLENGE with a fresh nonce Na; the connector answers
 * RESPONSE with its own nonce Nc and
 *     HMAC-SHA256(secret, purpose || "connect" || Na || Nc || c || a);
 * the acceptor checks it in constant time and answers ACCEPT with
 *     HMAC-SHA256(secret, purpose || "accept" || Nc || Na || a || c),
 * which the connector checks (c, a: the connector's and the acceptor's
 * ranks, 32-bit big-endian; the strings with their NUL).  Both sides prove
 * the secret over fresh nonces (no replay), with a label per direction (no
 * reflection), bound to both ranks and to the purpose (a MAC of the
 * rendezvous never passes on a transport connection).  The acceptor
 * computes nothing keyed before the connector has proven itself.
 *
 * This is the protocol's arithmetic only: the caller moves the bodies
 * (real/wire.h) over its socket, blocking or not.  A handshake is caller
 * memory that points to the secret; wipe it (auth_wipe) when done.
 */
#ifndef REAL_HANDSHAKE_H
#define REAL_HANDSHAKE_H

#include <stdint.h>

#include "real/wire.h"

typedef struct handshake {
    const unsigned char *secret;         /* AUTH_KEY_BYTES: the job's */
    const char *purpose;                 /* "commlab-tcp", "commlab-boot" */
    uint32_t me, peer;                   /* ranks; the acceptor's peer: as claimed */
    unsigned char mine[WIRE_NONCE];      /* this side's nonce */
    unsigned char theirs[WIRE_NONCE];    /* the other side's */
} handshake;

/* Cannot fail.  peer: the acceptor's rank for a connector; for an
 * acceptor the rank the connector claims (set it before handshake_check). */
void handshake_init(handshake *h, const unsigned char *secret, const char *purpose, int me,
                    int peer);
/* Acceptor: a fresh nonce into *out.  0, or CL_EIO with no random bytes. */
int handshake_challenge(handshake *h, wire_challenge *out);
/* Connector: answers the challenge, proving the secret.  0, or CL_EIO with
 * no random bytes. */
int handshake_respond(handshake *h, const wire_challenge *in, wire_response *out);
/* Acceptor: checks the connector's proof and, when it holds, writes its
 * own into *out.  0, or CL_EPROTO for a wrong proof (*out untouched). */
int handshake_check(handshake *h, const wire_response *in, wire_accept *out);
/* Connector: checks the acceptor's proof.  0, or CL_EPROTO. */
int handshake_finish(const handshake *h, const wire_accept *in);

#endif
