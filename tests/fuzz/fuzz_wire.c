/* fuzz_wire.c - the frame decoders of the tcp transport's connections and
 * of the rendezvous (real/wire.h) on any bytes: a header, judged as the
 * readers judge it (valid, body length within the kind's maximum), then
 * the body through the decoder of its kind, DONE's iteration times and
 * records included, as the master reads them. */
#include "tests/fuzz/fuzz.h"

#include "commlab.h"
#include "real/wire.h"

enum { NRANKS = 8, ITERS = 4, REC_CAP = 16 };

static void decode_body(int kind, uint64_t a, wire_r *r)
{
    union {
        wire_challenge challenge;
        wire_response response;
        wire_accept accept;
        wire_hello hello;
        wire_addr addr;
        wire_state state;
        wire_fail fail;
        wire_done done;
    } m;
    static job_addr table[NRANKS];
    switch (kind) {
    case WIRE_CHALLENGE: (void)wire_challenge_get(r, &m.challenge); break;
    case WIRE_RESPONSE: (void)wire_response_get(r, &m.response); break;
    case WIRE_ACCEPT: (void)wire_accept_get(r, &m.accept); break;
    case WIRE_HELLO:
        if (wire_hello_get(r, &m.hello) == 0)
            FUZZ_CHECK(memchr(m.hello.host, 0, sizeof m.hello.host) != NULL);
        break;
    case WIRE_ADDR:
        if (wire_addr_get(r, &m.addr) == 0)
            FUZZ_CHECK(m.addr.len <= JOB_ADDR_MAX);
        break;
    case WIRE_STATE:
        if (wire_state_get(r, &m.state) == 0)
            FUZZ_CHECK(m.state.wait.npending <= JOB_MAX_PENDING);
        break;
    case WIRE_REJECT:
    case WIRE_FAIL:
    case WIRE_ABORT:
        if (wire_fail_get(r, &m.fail) == 0)
            FUZZ_CHECK(memchr(m.fail.why.msg, 0, sizeof m.fail.why.msg) != NULL);
        break;
    case WIRE_TABLE:
        if (wire_table_get(r, table, (int)(a % NRANKS) + 1) == 0)
            for (int i = 0; i <= (int)(a % NRANKS); i++)
                FUZZ_CHECK(table[i].len <= JOB_ADDR_MAX);
        break;
    case WIRE_DONE:
        if (wire_done_get(r, &m.done) == 0 && m.done.iters == ITERS) {
            uint64_t keep = m.done.nrec < REC_CAP ? m.done.nrec : REC_CAP;
            if (wire_r_left(r) != (size_t)ITERS * 8 + keep * WIRE_RECORD_BYTES)
                break;
            for (int i = 0; i < ITERS; i++)
                (void)wire_r_f64(r);
            for (uint64_t k = 0; k < keep; k++) {
                cl_record rec;
                wire_record_get(r, &rec);
            }
            FUZZ_CHECK(wire_r_done(r));
        }
        break;
    default: break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < WIRE_HDR)
        return 0;
    wire_hdr h;
    wire_hdr_decode(data, &h);
    if (!wire_hdr_valid(&h) || h.len != size - WIRE_HDR)
        return 0;
    size_t max = wire_body_max(h.kind, NRANKS, ITERS, REC_CAP);
    if (max == SIZE_MAX || h.len > max)
        return 0;
    wire_r r;
    wire_r_init(&r, data + WIRE_HDR, (size_t)h.len);
    decode_body(h.kind, h.a, &r);
    return 0;
}
