/*
 * wire.h - the one frame format of commlab's sockets: the tcp transport's
 * connections (real/tcp.h) and the rendezvous of a run over several hosts
 * (real/boot.h), with their shared handshake (real/handshake.h).
 *
 * Every frame is a 48-byte big-endian header, then `length` body bytes:
 *     0 magic "CLTP"   4 version   5 kind   6 flags (0)   8 source rank
 *    12 tag   16 ctx   20 zero     24 length            32 a   40 b
 * Kinds 1..15 are the tcp transport's (real/tcp.h: tag, ctx, a and b mean
 * what the kind says), 16..18 the handshake's, 32.. the rendezvous's
 * (ctx: the run the frame belongs to).  All processes of a run are the
 * same binary: there is one version, and a frame of another is refused.
 *
 * Reading.  A header is decoded into a wire_hdr without judging it; the
 * reader checks it (wire_hdr_valid, then the kind it expects and the
 * kind's maximum length) before a byte of the body is read.  Bodies are
 * read through a wire_r cursor that never reads past the body: a short
 * body reads as zeros and marks the cursor bad, so a decoder checks once,
 * at the end (wire_r_done), that the body was exactly what it expected.
 * Nothing read is used as a size or an index before it is checked.
 *
 * Writing.  A wire_w cursor writes into a buffer the caller sized by the
 * kind's maximum (wire_body_max); writing past it is a bug (asserted).
 */
#ifndef REAL_WIRE_H
#define REAL_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/diag.h"
#include "core/record.h"
#include "real/auth.h"
#include "real/job.h"

#define WIRE_MAGIC 0x434c5450u /* "CLTP" */
#define WIRE_VERSION 3
#define WIRE_HDR 48            /* bytes of a frame header */
#define WIRE_NONCE 32          /* bytes of a handshake nonce */
#define WIRE_HOST_MAX 64       /* bytes of a hostname in HELLO, its NUL included */
#define WIRE_RECORD_BYTES 54   /* a cl_record on the wire */

enum {
    /* the handshake (real/handshake.h), both users */
    WIRE_CHALLENGE = 16, /* acceptor -> connector: wire_challenge */
    WIRE_RESPONSE,       /* connector -> acceptor: wire_response; b: the
                            acceptor's rank */
    WIRE_ACCEPT,         /* acceptor -> connector: wire_accept */
    /* the rendezvous (real/boot.h) */
    WIRE_REJECT = 32,    /* master: refused: wire_fail (why) */
    WIRE_HELLO,          /* joiner: wire_hello */
    WIRE_GO,             /* master: everyone is here; the job's id (WIRE_NONCE bytes) */
    WIRE_ADDR,           /* agent: wire_addr, its rank's address */
    WIRE_TABLE,          /* master: every rank's address (wire_table_put) */
    WIRE_STATE,          /* agent: wire_state */
    WIRE_FAIL,           /* agent: wire_fail, its rank failed */
    WIRE_ABORT,          /* master: wire_fail, the run failed */
    WIRE_DONE,           /* agent: wire_done, then iteration times and records */
    WIRE_FINISH,         /* master: the run's status (one u32) */
};

typedef struct wire_hdr { /* a decoded header */
    uint32_t magic;   /* WIRE_MAGIC */
    uint8_t version;  /* WIRE_VERSION */
    uint8_t kind;     /* TCP_* or WIRE_* */
    uint16_t flags;   /* 0 */
    uint32_t src;     /* the sender's rank, as it claims */
    int32_t tag;      /* tcp: the message's tag */
    uint32_t ctx;     /* tcp: the message's context; rendezvous: the run */
    uint32_t zero;    /* 0 */
    uint64_t len;     /* body bytes */
    uint64_t a, b;    /* protocol words (see the kinds) */
} wire_hdr;

/* ---- big-endian integers (cannot fail) ---- */

void wire_put32(unsigned char *p, uint32_t v);
uint32_t wire_get32(const unsigned char *p);
void wire_put64(unsigned char *p, uint64_t v);
uint64_t wire_get64(const unsigned char *p);

/* ---- headers (cannot fail) ---- */

/* Writes the WIRE_HDR bytes of a header at out (magic and version set). */
void wire_hdr_make(unsigned char *out, uint8_t kind, int src, int tag, uint32_t ctx,
                   uint64_t len, uint64_t a, uint64_t b);
/* Decodes the WIRE_HDR bytes at in; judges nothing. */
void wire_hdr_decode(const unsigned char *in, wire_hdr *h);
/* Whether the magic, version and the fields that must be 0 are right. */
bool wire_hdr_valid(const wire_hdr *h);

/* ---- body cursors ---- */

typedef struct wire_w {
    unsigned char *p; /* the body */
    size_t cap, len;  /* bytes of room, bytes written */
} wire_w;

typedef struct wire_r {
    const unsigned char *p; /* the body */
    size_t len, off;        /* bytes in it, bytes read */
    bool bad;               /* a read went past the end */
} wire_r;

void wire_w_init(wire_w *w, void *buf, size_t cap);
void wire_w_u32(wire_w *w, uint32_t v);
void wire_w_u64(wire_w *w, uint64_t v);
void wire_w_f64(wire_w *w, double v);
void wire_w_bytes(wire_w *w, const void *src, size_t n);

void wire_r_init(wire_r *r, const void *buf, size_t len);
uint32_t wire_r_u32(wire_r *r);
uint64_t wire_r_u64(wire_r *r);
double wire_r_f64(wire_r *r);
void wire_r_bytes(wire_r *r, void *dst, size_t n);
/* Bytes not read yet. */
size_t wire_r_left(const wire_r *r);
/* Whether every read was in bounds and the whole body was read. */
bool wire_r_done(const wire_r *r);

/* ---- bodies ---- */

typedef struct wire_challenge {
    unsigned char nonce[WIRE_NONCE]; /* the acceptor's, fresh */
} wire_challenge;

typedef struct wire_response {
    unsigned char nonce[WIRE_NONCE];   /* the connector's, fresh */
    unsigned char mac[AUTH_MAC_BYTES]; /* its proof (real/handshake.h) */
} wire_response;

typedef struct wire_accept {
    unsigned char mac[AUTH_MAC_BYTES]; /* the acceptor's proof; on a Unix
                                          rendezvous, the job's secret */
} wire_accept;

typedef struct wire_hello {
    uint32_t rank, size;                      /* the joiner's, as it was started */
    uint32_t pid;                             /* its process */
    unsigned char digest[AUTH_HASH_BYTES];    /* of its run's options */
    char host[WIRE_HOST_MAX];                 /* its hostname, NUL-terminated */
} wire_hello;

typedef struct wire_addr {
    uint32_t rank;                      /* whose address */
    uint32_t len;                       /* bytes in use, <= JOB_ADDR_MAX */
    unsigned char bytes[JOB_ADDR_MAX];
} wire_addr;

typedef struct wire_state {
    uint32_t rank;     /* whose slot */
    uint32_t state;    /* a job_state */
    uint64_t progress; /* the slot's progress counter */
    job_wait wait;     /* the blocking call it is in */
} wire_state;

typedef struct wire_fail {
    uint32_t rank;     /* FAIL: the rank that failed; ABORT, REJECT: 0 */
    int32_t status;    /* a CL_E* */
    cl_diag why;       /* its words (the rest of the body) */
} wire_fail;

typedef struct wire_done { /* followed by iters doubles and nrec-or-fewer records */
    uint32_t rank, iters;
    uint64_t messages; /* pattern messages sent */
    uint64_t nrec;     /* records written (those beyond the room are not sent) */
} wire_done;

/* The most a body of kind may hold (handshake and rendezvous kinds) in a
 * world of nranks whose runs have iters iterations and room for rec_cap
 * records per rank; SIZE_MAX for a kind no such frame has. */
size_t wire_body_max(int kind, int nranks, int iters, size_t rec_cap);

/* Encoders write one body (the cursor sized by wire_body_max); decoders
 * read one and return 0, or CL_EPROTO when it is not exactly one well-formed
 * body of that kind (counts and lengths checked; *out is then undefined). */
void wire_challenge_put(wire_w *w, const wire_challenge *m);
int wire_challenge_get(wire_r *r, wire_challenge *out);
void wire_response_put(wire_w *w, const wire_response *m);
int wire_response_get(wire_r *r, wire_response *out);
void wire_accept_put(wire_w *w, const wire_accept *m);
int wire_accept_get(wire_r *r, wire_accept *out);
void wire_hello_put(wire_w *w, const wire_hello *m);
int wire_hello_get(wire_r *r, wire_hello *out);
void wire_addr_put(wire_w *w, const wire_addr *m);
int wire_addr_get(wire_r *r, wire_addr *out);
void wire_state_put(wire_w *w, const wire_state *m);
int wire_state_get(wire_r *r, wire_state *out);
void wire_fail_put(wire_w *w, const wire_fail *m);
int wire_fail_get(wire_r *r, wire_fail *out);
/* WIRE_TABLE: addrs[0..n), each its length and bytes. */
void wire_table_put(wire_w *w, const job_addr *addrs, int n);
int wire_table_get(wire_r *r, job_addr *out, int n);
/* WIRE_DONE: the head here; then wire_w_f64/wire_r_f64 per iteration and
 * wire_record_put/get per record.  The head's get reads only the head. */
void wire_done_put(wire_w *w, const wire_done *m);
int wire_done_get(wire_r *r, wire_done *out);
void wire_record_put(wire_w *w, const cl_record *rec);
/* The record's rank is not on the wire: the caller sets it. */
void wire_record_get(wire_r *r, cl_record *out);

#endif
