/* seed_wire.c - writes one frame of every handshake and rendezvous kind,
 * made by the real encoders, into the folder named by argv[1]: the seeds
 * of fuzz_wire.  Built and run by `make fuzz`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commlab.h"
#include "real/wire.h"

static int save(const char *dir, int kind, uint64_t a, const unsigned char *body, size_t len)
{
    static unsigned char frame[1 << 16];
    if (len > sizeof frame - WIRE_HDR)
        return 1;
    wire_hdr_make(frame, (uint8_t)kind, 1, 0, 7, len, a, 0);
    memcpy(frame + WIRE_HDR, body, len);
    char path[4096];
    snprintf(path, sizeof path, "%s/kind-%d", dir, kind);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(frame, 1, WIRE_HDR + len, f) != WIRE_HDR + len || fclose(f) != 0) {
        perror(path);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: seed_wire DIR\n");
        return 2;
    }
    static unsigned char body[1 << 15];
    wire_w w;
    int bad = 0;
#define FRAME(kind, a, put, msg)                                                  \
    do {                                                                          \
        wire_w_init(&w, body, sizeof body);                                       \
        put(&w, msg);                                                             \
        bad |= save(argv[1], kind, a, body, w.len);                               \
    } while (0)
    wire_challenge ch = {{1, 2, 3}};
    wire_response re = {{4, 5}, {6, 7}};
    wire_accept ac = {{8, 9}};
    wire_hello he = {.rank = 1, .size = 2, .pid = 4242, .host = "node7"};
    wire_addr ad = {.rank = 1, .len = 4, .bytes = {127, 0, 0, 1}};
    wire_state st = {.rank = 1, .state = 2, .progress = 9, .wait = {.call = 1, .iter = 3}};
    wire_fail fa = {.rank = 1, .status = CL_EDEADLOCK, .why = {"rank 1: stuck in recv"}};
    FRAME(WIRE_CHALLENGE, 0, wire_challenge_put, &ch);
    FRAME(WIRE_RESPONSE, 0, wire_response_put, &re);
    FRAME(WIRE_ACCEPT, 0, wire_accept_put, &ac);
    FRAME(WIRE_HELLO, 0, wire_hello_put, &he);
    FRAME(WIRE_ADDR, 0, wire_addr_put, &ad);
    FRAME(WIRE_STATE, 0, wire_state_put, &st);
    FRAME(WIRE_FAIL, 0, wire_fail_put, &fa);
    static job_addr table[2] = {{.len = 4, .bytes = {10, 0, 0, 1}}, {.len = 2, .bytes = {1, 2}}};
    wire_w_init(&w, body, sizeof body);
    wire_table_put(&w, table, 2);
    bad |= save(argv[1], WIRE_TABLE, 1, body, w.len);
    wire_done dn = {.rank = 1, .iters = 4, .messages = 2, .nrec = 1};
    cl_record rec = {.op = REC_SEND, .peer = 0, .bytes = 8, .tag = 3};
    wire_w_init(&w, body, sizeof body);
    wire_done_put(&w, &dn);
    for (int i = 0; i < 4; i++)
        wire_w_f64(&w, 1e-6 * (i + 1));
    wire_record_put(&w, &rec);
    bad |= save(argv[1], WIRE_DONE, 0, body, w.len);
    bad |= save(argv[1], WIRE_GO, 0, body, 0);
    return bad;
}
