/* test_wire.c - the frame codec and the handshake shared by the tcp
 * transport and the rendezvous: round trips, short and long bodies
 * refused, and a handshake that passes only with the same secret. */
#include <string.h>

#include "commlab.h"
#include "real/handshake.h"
#include "real/wire.h"
#include "tests/testutil.h"

static void test_header(void **state)
{
    (void)state;
    unsigned char raw[WIRE_HDR];
    wire_hdr_make(raw, WIRE_STATE, 3, -7, 42, 123, 5, 6);
    assert_memory_equal(raw, "CLTP", 4);
    wire_hdr h;
    wire_hdr_decode(raw, &h);
    assert_true(wire_hdr_valid(&h));
    assert_int_equal(h.kind, WIRE_STATE);
    assert_int_equal(h.src, 3);
    assert_int_equal(h.tag, -7);
    assert_int_equal(h.ctx, 42);
    assert_int_equal(h.len, 123);
    assert_int_equal(h.a, 5);
    assert_int_equal(h.b, 6);
    raw[6] = 1; /* flags must be 0 */
    wire_hdr_decode(raw, &h);
    assert_false(wire_hdr_valid(&h));
}

static void test_state_round_trip(void **state)
{
    (void)state;
    wire_state in = {.rank = 2, .state = JOB_BLOCKED, .progress = 1ULL << 40,
                     .wait = {.call = 1, .npending = 2, .nwaiting = 9, .iter = -1,
                              .outside = 1, .returned = -2}};
    in.wait.pending[0] = (wf_pending){.op = WF_RECV, .peer = 1, .tag = -3, .bytes = 4096};
    in.wait.pending[1] = (wf_pending){.op = WF_SEND, .peer = 0, .tag = 7, .bytes = 1};
    unsigned char body[1024];
    wire_w w;
    wire_w_init(&w, body, wire_body_max(WIRE_STATE, 4, 0, 0));
    wire_state_put(&w, &in);
    wire_r r;
    wire_state out;
    wire_r_init(&r, body, w.len);
    assert_int_equal(wire_state_get(&r, &out), 0);
    assert_int_equal(out.rank, 2);
    assert_int_equal(out.progress, 1ULL << 40);
    assert_int_equal(out.wait.npending, 2);
    assert_int_equal(out.wait.nwaiting, 9);
    assert_int_equal(out.wait.iter, -1);
    assert_int_equal(out.wait.outside, 1); /* in the barrier between iterations */
    assert_int_equal(out.wait.returned, -2);
    assert_int_equal(out.wait.pending[0].tag, -3);
    assert_int_equal(out.wait.pending[1].bytes, 1);
    /* One byte short, one byte long: refused. */
    wire_r_init(&r, body, w.len - 1);
    assert_int_equal(wire_state_get(&r, &out), CL_EPROTO);
    wire_r_init(&r, body, w.len + 1);
    assert_int_equal(wire_state_get(&r, &out), CL_EPROTO);
    /* A count above the room is refused before it is used; so is an
     * `outside` that is neither 0 nor 1. */
    wire_put32(body + 20, JOB_MAX_PENDING + 1);
    wire_r_init(&r, body, w.len);
    assert_int_equal(wire_state_get(&r, &out), CL_EPROTO);
    wire_put32(body + 20, 2);
    wire_put32(body + 32, 2);
    wire_r_init(&r, body, w.len);
    assert_int_equal(wire_state_get(&r, &out), CL_EPROTO);
}

static void test_fail_keeps_whole_message(void **state)
{
    (void)state;
    wire_fail in = {.rank = 1, .status = CL_EPEER};
    memset(in.why.msg, 'x', sizeof in.why.msg - 1); /* the longest a cl_diag holds */
    unsigned char body[8 + DIAG_MAX];
    wire_w w;
    wire_w_init(&w, body, wire_body_max(WIRE_FAIL, 2, 0, 0));
    wire_fail_put(&w, &in);
    wire_r r;
    wire_fail out;
    wire_r_init(&r, body, w.len);
    assert_int_equal(wire_fail_get(&r, &out), 0);
    assert_int_equal(out.status, CL_EPEER);
    assert_string_equal(out.why.msg, in.why.msg);
}

static void test_handshake(void **state)
{
    (void)state;
    unsigned char key[AUTH_KEY_BYTES], other[AUTH_KEY_BYTES];
    memset(key, 1, sizeof key);
    memset(other, 2, sizeof other);
    for (int same = 0; same < 2; same++) {
        handshake acc, con;
        handshake_init(&acc, key, "commlab-test", 1, 0);
        handshake_init(&con, same ? key : other, "commlab-test", 0, 1);
        wire_challenge ch;
        wire_response resp;
        wire_accept ok;
        assert_int_equal(handshake_challenge(&acc, &ch), 0);
        assert_int_equal(handshake_respond(&con, &ch, &resp), 0);
        assert_int_equal(handshake_check(&acc, &resp, &ok), same ? 0 : CL_EPROTO);
        if (same)
            assert_int_equal(handshake_finish(&con, &ok), 0);
    }
    /* Another purpose's MAC does not pass. */
    handshake acc, con;
    handshake_init(&acc, key, "commlab-tcp", 1, 0);
    handshake_init(&con, key, "commlab-boot", 0, 1);
    wire_challenge ch;
    wire_response resp;
    wire_accept ok;
    assert_int_equal(handshake_challenge(&acc, &ch), 0);
    assert_int_equal(handshake_respond(&con, &ch, &resp), 0);
    assert_int_equal(handshake_check(&acc, &resp, &ok), CL_EPROTO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header),
        cmocka_unit_test(test_state_round_trip),
        cmocka_unit_test(test_fail_keeps_whole_message),
        cmocka_unit_test(test_handshake),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
