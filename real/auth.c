/* auth.c - SHA-256, HMAC-SHA256, a constant-time compare, random bytes. */
#include "real/auth.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "commlab.h"

/* FIPS 180-4, 4.2.2: the first 32 bits of the fractional parts of the cube
 * roots of the first 64 primes. */
static const uint32_t round_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2,
};

static uint32_t rotr(uint32_t x, unsigned n)
{
    return x >> n | x << (32 - n);
}

static uint32_t load_be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void store_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* FIPS 180-4, 6.2.2: one 64-byte block into the state. */
static void compress(uint32_t h[8], const unsigned char block[AUTH_BLOCK_BYTES])
{
    uint32_t w[64];
    for (int t = 0; t < 16; t++)
        w[t] = load_be32(block + 4 * t);
    for (int t = 16; t < 64; t++) {
        uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
        uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
        w[t] = s1 + w[t - 7] + s0 + w[t - 16];
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (int t = 0; t < 64; t++) {
        uint32_t big1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
        uint32_t choose = (e & f) ^ (~e & g);
        uint32_t t1 = k + big1 + choose + round_k[t] + w[t];
        uint32_t big0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
        uint32_t majority = (a & b) ^ (a & c) ^ (b & c);
        uint32_t t2 = big0 + majority;
        k = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += k;
    auth_wipe(w, sizeof w);
}

void auth_sha256_init(auth_sha256 *s)
{
    /* FIPS 180-4, 5.3.3: the fractional parts of the square roots of the
     * first 8 primes. */
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, h0, sizeof h0);
    s->bytes = 0;
    s->nbuf = 0;
}

void auth_sha256_add(auth_sha256 *s, const void *data, size_t len)
{
    const unsigned char *p = data;
    s->bytes += len;
    if (s->nbuf) {
        size_t take = AUTH_BLOCK_BYTES - s->nbuf < len ? AUTH_BLOCK_BYTES - s->nbuf : len;
        memcpy(s->buf + s->nbuf, p, take);
        s->nbuf += take;
        p += take;
        len -= take;
        if (s->nbuf < AUTH_BLOCK_BYTES)
            return;
        compress(s->h, s->buf);
        s->nbuf = 0;
    }
    for (; len >= AUTH_BLOCK_BYTES; p += AUTH_BLOCK_BYTES, len -= AUTH_BLOCK_BYTES)
        compress(s->h, p);
    memcpy(s->buf, p, len);
    s->nbuf = len;
}

/* FIPS 180-4, 5.1.1: a one bit, zeros up to 56 bytes into the last block,
 * the message length in bits as a 64-bit big-endian number. */
void auth_sha256_finish(auth_sha256 *s, unsigned char out[AUTH_HASH_BYTES])
{
    uint64_t bits = s->bytes * 8;
    unsigned char pad[AUTH_BLOCK_BYTES + 8] = {0x80};
    size_t zeros = (AUTH_BLOCK_BYTES + 56 - (s->nbuf + 1) % AUTH_BLOCK_BYTES) % AUTH_BLOCK_BYTES;
    unsigned char len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (unsigned char)(bits >> (56 - 8 * i));
    auth_sha256_add(s, pad, 1 + zeros);
    auth_sha256_add(s, len, 8);
    for (int i = 0; i < 8; i++)
        store_be32(out + 4 * i, s->h[i]);
    auth_wipe(s, sizeof *s);
}

/* ---- HMAC (RFC 2104) ---- */

void auth_hmac_init(auth_hmac *m, const void *key, size_t keylen)
{
    unsigned char k[AUTH_BLOCK_BYTES] = {0}, pad[AUTH_BLOCK_BYTES];
    if (keylen > AUTH_BLOCK_BYTES) {
        auth_sha256 s;
        auth_sha256_init(&s);
        auth_sha256_add(&s, key, keylen);
        auth_sha256_finish(&s, k);
    } else if (keylen) {
        memcpy(k, key, keylen);
    }
    for (int i = 0; i < AUTH_BLOCK_BYTES; i++)
        pad[i] = k[i] ^ 0x36;
    auth_sha256_init(&m->inner);
    auth_sha256_add(&m->inner, pad, sizeof pad);
    for (int i = 0; i < AUTH_BLOCK_BYTES; i++)
        pad[i] = k[i] ^ 0x5c;
    auth_sha256_init(&m->outer);
    auth_sha256_add(&m->outer, pad, sizeof pad);
    auth_wipe(k, sizeof k);
    auth_wipe(pad, sizeof pad);
}

void auth_hmac_add(auth_hmac *m, const void *data, size_t len)
{
    auth_sha256_add(&m->inner, data, len);
}

void auth_hmac_finish(auth_hmac *m, unsigned char mac[AUTH_MAC_BYTES])
{
    unsigned char inner[AUTH_HASH_BYTES];
    auth_sha256_finish(&m->inner, inner);
    auth_sha256_add(&m->outer, inner, sizeof inner);
    auth_sha256_finish(&m->outer, mac);
    auth_wipe(inner, sizeof inner);
}

void auth_hmac_sha256(const void *key, size_t keylen, const void *msg, size_t len,
                      unsigned char mac[AUTH_MAC_BYTES])
{
    auth_hmac m;
    auth_hmac_init(&m, key, keylen);
    auth_hmac_add(&m, msg, len);
    auth_hmac_finish(&m, mac);
}

/* ---- PBKDF2 (RFC 8018) ---- */

void auth_pbkdf2_sha256(const void *password, size_t len, const void *salt, size_t saltlen,
                        unsigned rounds, unsigned char out[AUTH_HASH_BYTES])
{
    /* The key's two padded blocks are hashed once; every round starts from
     * a copy of that state. */
    auth_hmac keyed, m;
    auth_hmac_init(&keyed, password, len);
    static const unsigned char block_one[4] = {0, 0, 0, 1}; /* INT(1): the first block */
    unsigned char u[AUTH_MAC_BYTES];
    m = keyed;
    auth_hmac_add(&m, salt, saltlen);
    auth_hmac_add(&m, block_one, sizeof block_one);
    auth_hmac_finish(&m, u);
    memcpy(out, u, AUTH_HASH_BYTES);
    for (unsigned i = 1; i < rounds; i++) {
        m = keyed;
        auth_hmac_add(&m, u, sizeof u);
        auth_hmac_finish(&m, u);
        for (int k = 0; k < AUTH_HASH_BYTES; k++)
            out[k] ^= u[k];
    }
    auth_wipe(&keyed, sizeof keyed);
    auth_wipe(u, sizeof u);
}

/* ---- helpers ---- */

bool auth_equal(const void *a, const void *b, size_t n)
{
    /* Every byte is looked at, whatever the earlier ones held; the volatile
     * accumulator keeps the compiler from turning this into an early exit. */
    const volatile unsigned char *x = a, *y = b;
    volatile unsigned char diff = 0;
    for (size_t i = 0; i < n; i++)
        diff |= x[i] ^ y[i];
    return diff == 0;
}

int auth_random(void *buf, size_t n)
{
    unsigned char *p = buf;
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(p + got, n - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            auth_wipe(buf, n);
            return CL_EIO;
        }
        got += (size_t)r;
    }
    return 0;
}

void auth_wipe(void *buf, size_t n)
{
    volatile unsigned char *p = buf;
    for (size_t i = 0; i < n; i++)
        p[i] = 0;
}
