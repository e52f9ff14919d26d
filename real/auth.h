/*
 * auth.h - proving a shared secret without sending it: SHA-256 (FIPS 180-4),
 * HMAC-SHA256 (RFC 2104), a constant-time compare, and random bytes.
 *
 * The tcp transport's handshake is a challenge-response: one side sends a
 * fresh random nonce, the other answers with HMAC(secret, label || nonces ||
 * ranks), and the first checks it with auth_equal().  The secret itself is
 * never written to a socket.  Written from the specifications, for this one
 * use: a few kilobytes hashed per connection, so clarity beats speed.
 *
 * Ownership: every context here is caller memory with nothing to release;
 * the caller wipes one that held key material (auth_wipe) when it is done.
 */
#ifndef REAL_AUTH_H
#define REAL_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AUTH_HASH_BYTES 32  /* a SHA-256 digest */
#define AUTH_BLOCK_BYTES 64 /* SHA-256 consumes its input in 64-byte blocks */
#define AUTH_MAC_BYTES 32   /* an HMAC-SHA256 tag */
#define AUTH_KEY_BYTES 32   /* the per-job secret commlab generates */

typedef struct auth_sha256 {
    uint32_t h[8];                        /* the chaining state */
    uint64_t bytes;                       /* message bytes added so far */
    unsigned char buf[AUTH_BLOCK_BYTES];  /* a partial block */
    size_t nbuf;                          /* bytes in buf, < AUTH_BLOCK_BYTES */
} auth_sha256;

typedef struct auth_hmac {
    auth_sha256 inner; /* keyed with key ^ ipad, fed the message */
    auth_sha256 outer; /* keyed with key ^ opad, fed the inner digest */
} auth_hmac;

/* ---- SHA-256: init, add any number of times, finish.  Cannot fail. ---- */

void auth_sha256_init(auth_sha256 *s);
void auth_sha256_add(auth_sha256 *s, const void *data, size_t len);
/* Writes the digest; s must be initialized again before further use. */
void auth_sha256_finish(auth_sha256 *s, unsigned char out[AUTH_HASH_BYTES]);

/* ---- HMAC-SHA256 (any key length; a key above 64 bytes is hashed first,
 * as RFC 2104 says).  Cannot fail. ---- */

void auth_hmac_init(auth_hmac *m, const void *key, size_t keylen);
void auth_hmac_add(auth_hmac *m, const void *data, size_t len);
/* Writes the tag and wipes m. */
void auth_hmac_finish(auth_hmac *m, unsigned char mac[AUTH_MAC_BYTES]);
/* One call: the tag of msg under key. */
void auth_hmac_sha256(const void *key, size_t keylen, const void *msg, size_t len,
                      unsigned char mac[AUTH_MAC_BYTES]);

/* ---- PBKDF2-HMAC-SHA256 (RFC 8018, 5.2), one block: a key from a
 * password, slowed by `rounds` HMACs so each guess of a weak password
 * costs as much.  rounds >= 1.  Cannot fail. ---- */

void auth_pbkdf2_sha256(const void *password, size_t len, const void *salt, size_t saltlen,
                        unsigned rounds, unsigned char out[AUTH_HASH_BYTES]);

/* ---- helpers ---- */

/* Whether a and b hold the same n bytes.  Its time depends on n only,
 * never on where (or whether) they differ: a tag compared with it leaks
 * nothing about how much of a forgery was right.  Cannot fail. */
bool auth_equal(const void *a, const void *b, size_t n);

/* n bytes from the kernel's random generator (getrandom).  Returns 0, or
 * CL_EIO when the kernel gives none (buf is then wiped). */
int auth_random(void *buf, size_t n);

/* Zeroes n bytes in a way the compiler does not drop. */
void auth_wipe(void *buf, size_t n);

#endif
