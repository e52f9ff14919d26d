/* test_auth.c - SHA-256, HMAC-SHA256 and PBKDF2-HMAC-SHA256 against their
 * published test vectors, and the behaviour of the constant-time compare. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "real/auth.h"
#include "tests/testutil.h"

static void hex(char *out, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", p[i]);
}

#define assert_digest(got, n, want)                                                    \
    do {                                                                               \
        char h_[2 * AUTH_HASH_BYTES + 1];                                              \
        hex(h_, (got), (n));                                                           \
        if (strcmp(h_, (want)) != 0)                                                   \
            fail_msg("got %s, want %s", h_, (want));                                   \
    } while (0)

static void sha256_of(const void *msg, size_t len, unsigned char out[AUTH_HASH_BYTES])
{
    auth_sha256 s;
    auth_sha256_init(&s);
    auth_sha256_add(&s, msg, len);
    auth_sha256_finish(&s, out);
}

/* FIPS 180-2, appendix B (and the NIST example values): "abc", the 448-bit
 * two-block message, a million 'a'; the empty message's well-known digest. */
static void test_sha256_vectors(void **state)
{
    (void)state;
    unsigned char d[AUTH_HASH_BYTES];
    sha256_of("abc", 3, d);
    assert_digest(d, 32, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    sha256_of("", 0, d);
    assert_digest(d, 32, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    sha256_of(two, strlen(two), d);
    assert_digest(d, 32, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    const char *four = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
                       "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
    sha256_of(four, strlen(four), d);
    assert_digest(d, 32, "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");

    /* A million 'a', fed in uneven pieces so every partial-block path runs. */
    char chunk[1000];
    memset(chunk, 'a', sizeof chunk);
    auth_sha256 s;
    auth_sha256_init(&s);
    size_t left = 1000000, step = 1;
    while (left) {
        size_t n = step < left ? step : left;
        auth_sha256_add(&s, chunk, n);
        left -= n;
        step = step % 983 + 13; /* stays below sizeof chunk */
    }
    auth_sha256_finish(&s, d);
    assert_digest(d, 32, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

/* Messages of every length around the block and padding boundaries hash
 * the same whole and byte by byte. */
static void test_sha256_pieces(void **state)
{
    (void)state;
    unsigned char msg[200], whole[AUTH_HASH_BYTES], bytewise[AUTH_HASH_BYTES];
    for (size_t i = 0; i < sizeof msg; i++)
        msg[i] = (unsigned char)(i * 7 + 3);
    for (size_t len = 0; len <= sizeof msg; len++) {
        sha256_of(msg, len, whole);
        auth_sha256 s;
        auth_sha256_init(&s);
        for (size_t i = 0; i < len; i++)
            auth_sha256_add(&s, msg + i, 1);
        auth_sha256_finish(&s, bytewise);
        if (memcmp(whole, bytewise, sizeof whole) != 0)
            fail_msg("length %zu: whole and byte-by-byte digests differ", len);
    }
}

/* RFC 4231, section 4: the HMAC-SHA-256 test cases 1 to 7 (case 5 is
 * truncated to 128 bits by the RFC). */
static void test_hmac_rfc4231(void **state)
{
    (void)state;
    unsigned char k20[20], k25[25], k131[131], d50[50];
    unsigned char mac[AUTH_MAC_BYTES];

    memset(k20, 0x0b, sizeof k20);
    auth_hmac_sha256(k20, 20, "Hi There", 8, mac);
    assert_digest(mac, 32, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");

    const char *jefe = "what do ya want for nothing?";
    auth_hmac_sha256("Jefe", 4, jefe, strlen(jefe), mac);
    assert_digest(mac, 32, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");

    memset(k20, 0xaa, sizeof k20);
    memset(d50, 0xdd, sizeof d50);
    auth_hmac_sha256(k20, 20, d50, 50, mac);
    assert_digest(mac, 32, "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");

    for (int i = 0; i < 25; i++)
        k25[i] = (unsigned char)(i + 1);
    memset(d50, 0xcd, sizeof d50);
    auth_hmac_sha256(k25, 25, d50, 50, mac);
    assert_digest(mac, 32, "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");

    memset(k20, 0x0c, sizeof k20);
    auth_hmac_sha256(k20, 20, "Test With Truncation", 20, mac);
    assert_digest(mac, 16, "a3b6167473100ee06e0c796c2955552b");

    memset(k131, 0xaa, sizeof k131);
    const char *big_key = "Test Using Larger Than Block-Size Key - Hash Key First";
    auth_hmac_sha256(k131, 131, big_key, strlen(big_key), mac);
    assert_digest(mac, 32, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");

    const char *big_both = "This is a test using a larger than block-size key and a larger "
                           "than block-size data. The key needs to be hashed before being "
                           "used by the HMAC algorithm.";
    auth_hmac_sha256(k131, 131, big_both, strlen(big_both), mac);
    assert_digest(mac, 32, "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");

    /* The same case fed in pieces through the incremental calls. */
    auth_hmac m;
    auth_hmac_init(&m, k131, 131);
    for (size_t i = 0, n = strlen(big_both); i < n; i += 11)
        auth_hmac_add(&m, big_both + i, n - i < 11 ? n - i : 11);
    auth_hmac_finish(&m, mac);
    assert_digest(mac, 32, "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

/* A different key or a different message gives a different tag. */
static void test_hmac_sensitivity(void **state)
{
    (void)state;
    unsigned char key[AUTH_KEY_BYTES], a[AUTH_MAC_BYTES], b[AUTH_MAC_BYTES];
    memset(key, 0x42, sizeof key);
    auth_hmac_sha256(key, sizeof key, "nonce-1", 7, a);
    auth_hmac_sha256(key, sizeof key, "nonce-2", 7, b);
    assert_false(auth_equal(a, b, sizeof a));
    key[31] ^= 1;
    auth_hmac_sha256(key, sizeof key, "nonce-1", 7, b);
    assert_false(auth_equal(a, b, sizeof a));
}

/* auth_equal answers like memcmp() == 0 wherever the difference is, one
 * flipped bit included, and looks at nothing past n. */
/* RFC 7914, section 11 (PBKDF2-HMAC-SHA256 test vectors): the first 32
 * bytes of each 64-byte key, one block. */
static void test_pbkdf2_rfc7914(void **state)
{
    (void)state;
    unsigned char k[AUTH_HASH_BYTES];
    auth_pbkdf2_sha256("passwd", 6, "salt", 4, 1, k);
    assert_digest(k, 32, "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc");
    auth_pbkdf2_sha256("Password", 8, "NaCl", 4, 80000, k);
    assert_digest(k, 32, "4ddcd8f60b98be21830cee5ef22701f9641a4418d04c0414aeff08876b34ab56");
}

static void test_equal(void **state)
{
    (void)state;
    unsigned char a[AUTH_MAC_BYTES], b[AUTH_MAC_BYTES];
    for (size_t i = 0; i < sizeof a; i++)
        a[i] = b[i] = (unsigned char)(0xa5 ^ i);
    assert_true(auth_equal(a, b, sizeof a));
    assert_true(auth_equal(a, b, 0));
    for (size_t i = 0; i < sizeof a; i++)
        for (int bit = 0; bit < 8; bit++) {
            b[i] ^= (unsigned char)(1u << bit);
            if (auth_equal(a, b, sizeof a))
                fail_msg("byte %zu bit %d flipped: still equal", i, bit);
            if (!auth_equal(a, b, i))
                fail_msg("byte %zu differs: the first %zu bytes should be equal", i, i);
            b[i] ^= (unsigned char)(1u << bit);
        }
    assert_true(auth_equal(a, b, sizeof a));
    memset(b, 0, sizeof b);
    assert_false(auth_equal(a, b, sizeof a));
}

static void test_random(void **state)
{
    (void)state;
    unsigned char a[AUTH_KEY_BYTES], b[AUTH_KEY_BYTES], zero[AUTH_KEY_BYTES] = {0};
    assert_int_equal(auth_random(a, sizeof a), 0);
    assert_int_equal(auth_random(b, sizeof b), 0);
    /* 2^-256 chances of a false failure. */
    assert_false(auth_equal(a, b, sizeof a));
    assert_false(auth_equal(a, zero, sizeof a));
    auth_wipe(a, sizeof a);
    assert_true(auth_equal(a, zero, sizeof a));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sha256_vectors), cmocka_unit_test(test_sha256_pieces),
        cmocka_unit_test(test_hmac_rfc4231),   cmocka_unit_test(test_hmac_sensitivity),
        cmocka_unit_test(test_pbkdf2_rfc7914), cmocka_unit_test(test_equal),
        cmocka_unit_test(test_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
