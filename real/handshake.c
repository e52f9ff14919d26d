/* handshake.c - the challenge-response over the job's secret; see handshake.h. */
#include "real/handshake.h"

#include <string.h>

#include "commlab.h"

static const char CONNECT[] = "connect";
static const char ACCEPT[] = "accept";

static void mac(const handshake *h, const char *label, const unsigned char *n1,
                const unsigned char *n2, uint32_t r1, uint32_t r2,
                unsigned char out[AUTH_MAC_BYTES])
{
    unsigned char ranks[8];
    wire_put32(ranks, r1);
    wire_put32(ranks + 4, r2);
    auth_hmac m;
    auth_hmac_init(&m, h->secret, AUTH_KEY_BYTES);
    auth_hmac_add(&m, h->purpose, strlen(h->purpose) + 1);
    auth_hmac_add(&m, label, strlen(label) + 1);
    auth_hmac_add(&m, n1, WIRE_NONCE);
    auth_hmac_add(&m, n2, WIRE_NONCE);
    auth_hmac_add(&m, ranks, sizeof ranks);
    auth_hmac_finish(&m, out);
}

void handshake_init(handshake *h, const unsigned char *secret, const char *purpose, int me,
                    int peer)
{
    memset(h, 0, sizeof *h);
    h->secret = secret;
    h->purpose = purpose;
    h->me = (uint32_t)me;
    h->peer = (uint32_t)peer;
}

int handshake_challenge(handshake *h, wire_challenge *out)
{
    if (auth_random(h->mine, WIRE_NONCE))
        return CL_EIO;
    memcpy(out->nonce, h->mine, WIRE_NONCE);
    return 0;
}

int handshake_respond(handshake *h, const wire_challenge *in, wire_response *out)
{
    memcpy(h->theirs, in->nonce, WIRE_NONCE);
    if (auth_random(h->mine, WIRE_NONCE))
        return CL_EIO;
    memcpy(out->nonce, h->mine, WIRE_NONCE);
    mac(h, CONNECT, h->theirs, h->mine, h->me, h->peer, out->mac);
    return 0;
}

int handshake_check(handshake *h, const wire_response *in, wire_accept *out)
{
    unsigned char want[AUTH_MAC_BYTES];
    mac(h, CONNECT, h->mine, in->nonce, h->peer, h->me, want);
    bool ok = auth_equal(want, in->mac, AUTH_MAC_BYTES);
    auth_wipe(want, sizeof want);
    if (!ok)
        return CL_EPROTO;
    memcpy(h->theirs, in->nonce, WIRE_NONCE);
    mac(h, ACCEPT, h->theirs, h->mine, h->me, h->peer, out->mac);
    return 0;
}

int handshake_finish(const handshake *h, const wire_accept *in)
{
    unsigned char want[AUTH_MAC_BYTES];
    mac(h, ACCEPT, h->mine, h->theirs, h->peer, h->me, want);
    bool ok = auth_equal(want, in->mac, AUTH_MAC_BYTES);
    auth_wipe(want, sizeof want);
    return ok ? 0 : CL_EPROTO;
}
