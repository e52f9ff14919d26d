/* wire.c - the frame format and its codecs; see wire.h. */
#include "real/wire.h"

#include <assert.h>
#include <string.h>

#include "commlab.h"

/* ---- integers ---- */

void wire_put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (24 - 8 * i));
}

uint32_t wire_get32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

void wire_put64(unsigned char *p, uint64_t v)
{
    wire_put32(p, (uint32_t)(v >> 32));
    wire_put32(p + 4, (uint32_t)v);
}

uint64_t wire_get64(const unsigned char *p)
{
    return (uint64_t)wire_get32(p) << 32 | wire_get32(p + 4);
}

/* ---- headers ---- */

void wire_hdr_make(unsigned char *out, uint8_t kind, int src, int tag, uint32_t ctx,
                   uint64_t len, uint64_t a, uint64_t b)
{
    wire_put32(out, WIRE_MAGIC);
    out[4] = WIRE_VERSION;
    out[5] = kind;
    out[6] = out[7] = 0;
    wire_put32(out + 8, (uint32_t)src);
    wire_put32(out + 12, (uint32_t)tag);
    wire_put32(out + 16, ctx);
    wire_put32(out + 20, 0);
    wire_put64(out + 24, len);
    wire_put64(out + 32, a);
    wire_put64(out + 40, b);
}

void wire_hdr_decode(const unsigned char *in, wire_hdr *h)
{
    h->magic = wire_get32(in);
    h->version = in[4];
    h->kind = in[5];
    h->flags = (uint16_t)(in[6] << 8 | in[7]);
    h->src = wire_get32(in + 8);
    h->tag = (int32_t)wire_get32(in + 12);
    h->ctx = wire_get32(in + 16);
    h->zero = wire_get32(in + 20);
    h->len = wire_get64(in + 24);
    h->a = wire_get64(in + 32);
    h->b = wire_get64(in + 40);
}

bool wire_hdr_valid(const wire_hdr *h)
{
    return h->magic == WIRE_MAGIC && h->version == WIRE_VERSION && !h->flags && !h->zero;
}

/* ---- cursors ---- */

void wire_w_init(wire_w *w, void *buf, size_t cap)
{
    *w = (wire_w){.p = buf, .cap = cap};
}

static unsigned char *w_take(wire_w *w, size_t n)
{
    assert(n <= w->cap - w->len); /* the caller sized the body by its kind */
    unsigned char *p = w->p + w->len;
    w->len += n;
    return p;
}

void wire_w_u32(wire_w *w, uint32_t v)
{
    wire_put32(w_take(w, 4), v);
}

void wire_w_u64(wire_w *w, uint64_t v)
{
    wire_put64(w_take(w, 8), v);
}

void wire_w_f64(wire_w *w, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    wire_w_u64(w, u);
}

void wire_w_bytes(wire_w *w, const void *src, size_t n)
{
    if (n)
        memcpy(w_take(w, n), src, n);
}

void wire_r_init(wire_r *r, const void *buf, size_t len)
{
    *r = (wire_r){.p = buf, .len = len};
}

/* The next n bytes, or NULL (and r bad) when the body is shorter. */
static const unsigned char *r_take(wire_r *r, size_t n)
{
    if (r->bad || n > r->len - r->off) {
        r->bad = true;
        return NULL;
    }
    const unsigned char *p = r->p + r->off;
    r->off += n;
    return p;
}

uint32_t wire_r_u32(wire_r *r)
{
    const unsigned char *p = r_take(r, 4);
    return p ? wire_get32(p) : 0;
}

uint64_t wire_r_u64(wire_r *r)
{
    const unsigned char *p = r_take(r, 8);
    return p ? wire_get64(p) : 0;
}

double wire_r_f64(wire_r *r)
{
    uint64_t u = wire_r_u64(r);
    double v;
    memcpy(&v, &u, sizeof v);
    return v;
}

void wire_r_bytes(wire_r *r, void *dst, size_t n)
{
    const unsigned char *p = r_take(r, n);
    if (p)
        memcpy(dst, p, n);
    else
        memset(dst, 0, n);
}

size_t wire_r_left(const wire_r *r)
{
    return r->bad ? 0 : r->len - r->off;
}

bool wire_r_done(const wire_r *r)
{
    return !r->bad && r->off == r->len;
}

/* ---- bodies ---- */

#define HELLO_BYTES (12 + AUTH_HASH_BYTES + WIRE_HOST_MAX)
#define STATE_HEAD 40  /* rank, state, progress, call, npending, nwaiting, iter, outside,
                          returned */
#define PENDING_BYTES 20
#define FAIL_HEAD 8    /* rank, status; the words follow */
#define DONE_HEAD 24

size_t wire_body_max(int kind, int nranks, int iters, size_t rec_cap)
{
    switch (kind) {
    case WIRE_CHALLENGE: return WIRE_NONCE;
    case WIRE_RESPONSE: return WIRE_NONCE + AUTH_MAC_BYTES;
    case WIRE_ACCEPT: return AUTH_MAC_BYTES;
    case WIRE_REJECT:
    case WIRE_FAIL:
    case WIRE_ABORT: return FAIL_HEAD + DIAG_MAX - 1;
    case WIRE_HELLO: return HELLO_BYTES;
    case WIRE_GO: return WIRE_NONCE;
    case WIRE_ADDR: return 8 + JOB_ADDR_MAX;
    case WIRE_TABLE: return (size_t)nranks * (4 + JOB_ADDR_MAX);
    case WIRE_STATE: return STATE_HEAD + JOB_MAX_PENDING * PENDING_BYTES;
    case WIRE_DONE: return DONE_HEAD + (size_t)iters * 8 + rec_cap * WIRE_RECORD_BYTES;
    case WIRE_FINISH: return 4;
    default: return SIZE_MAX;
    }
}

static int done(const wire_r *r)
{
    return wire_r_done(r) ? 0 : CL_EPROTO;
}

void wire_challenge_put(wire_w *w, const wire_challenge *m)
{
    wire_w_bytes(w, m->nonce, sizeof m->nonce);
}

int wire_challenge_get(wire_r *r, wire_challenge *out)
{
    wire_r_bytes(r, out->nonce, sizeof out->nonce);
    return done(r);
}

void wire_response_put(wire_w *w, const wire_response *m)
{
    wire_w_bytes(w, m->nonce, sizeof m->nonce);
    wire_w_bytes(w, m->mac, sizeof m->mac);
}

int wire_response_get(wire_r *r, wire_response *out)
{
    wire_r_bytes(r, out->nonce, sizeof out->nonce);
    wire_r_bytes(r, out->mac, sizeof out->mac);
    return done(r);
}

void wire_accept_put(wire_w *w, const wire_accept *m)
{
    wire_w_bytes(w, m->mac, sizeof m->mac);
}

int wire_accept_get(wire_r *r, wire_accept *out)
{
    wire_r_bytes(r, out->mac, sizeof out->mac);
    return done(r);
}

void wire_hello_put(wire_w *w, const wire_hello *m)
{
    wire_w_u32(w, m->rank);
    wire_w_u32(w, m->size);
    wire_w_u32(w, m->pid);
    wire_w_bytes(w, m->digest, sizeof m->digest);
    wire_w_bytes(w, m->host, sizeof m->host);
}

int wire_hello_get(wire_r *r, wire_hello *out)
{
    out->rank = wire_r_u32(r);
    out->size = wire_r_u32(r);
    out->pid = wire_r_u32(r);
    wire_r_bytes(r, out->digest, sizeof out->digest);
    wire_r_bytes(r, out->host, sizeof out->host);
    out->host[sizeof out->host - 1] = '\0';
    return done(r);
}

void wire_addr_put(wire_w *w, const wire_addr *m)
{
    wire_w_u32(w, m->rank);
    wire_w_u32(w, m->len);
    wire_w_bytes(w, m->bytes, m->len);
}

int wire_addr_get(wire_r *r, wire_addr *out)
{
    out->rank = wire_r_u32(r);
    out->len = wire_r_u32(r);
    if (out->len > JOB_ADDR_MAX)
        return CL_EPROTO;
    wire_r_bytes(r, out->bytes, out->len);
    return done(r);
}

void wire_state_put(wire_w *w, const wire_state *m)
{
    wire_w_u32(w, m->rank);
    wire_w_u32(w, m->state);
    wire_w_u64(w, m->progress);
    wire_w_u32(w, m->wait.call);
    wire_w_u32(w, m->wait.npending);
    wire_w_u32(w, m->wait.nwaiting);
    wire_w_u32(w, (uint32_t)m->wait.iter);
    wire_w_u32(w, m->wait.outside);
    wire_w_u32(w, (uint32_t)m->wait.returned);
    for (uint32_t i = 0; i < m->wait.npending; i++) {
        const wf_pending *p = &m->wait.pending[i];
        wire_w_u32(w, (uint32_t)p->op);
        wire_w_u32(w, (uint32_t)p->peer);
        wire_w_u32(w, (uint32_t)p->tag);
        wire_w_u64(w, p->bytes);
    }
}

int wire_state_get(wire_r *r, wire_state *out)
{
    out->rank = wire_r_u32(r);
    out->state = wire_r_u32(r);
    out->progress = wire_r_u64(r);
    out->wait.call = wire_r_u32(r);
    out->wait.npending = wire_r_u32(r);
    out->wait.nwaiting = wire_r_u32(r);
    out->wait.iter = (int32_t)wire_r_u32(r);
    out->wait.outside = wire_r_u32(r);
    out->wait.returned = (int32_t)wire_r_u32(r);
    if (out->wait.npending > JOB_MAX_PENDING || out->wait.outside > 1)
        return CL_EPROTO;
    for (uint32_t i = 0; i < out->wait.npending; i++) {
        wf_pending *p = &out->wait.pending[i];
        p->op = (wf_op)wire_r_u32(r);
        p->peer = (int)wire_r_u32(r);
        p->tag = (int)wire_r_u32(r);
        p->bytes = wire_r_u64(r);
    }
    return done(r);
}

void wire_fail_put(wire_w *w, const wire_fail *m)
{
    wire_w_u32(w, m->rank);
    wire_w_u32(w, (uint32_t)m->status);
    wire_w_bytes(w, m->why.msg, strnlen(m->why.msg, sizeof m->why.msg - 1));
}

int wire_fail_get(wire_r *r, wire_fail *out)
{
    out->rank = wire_r_u32(r);
    out->status = (int32_t)wire_r_u32(r);
    size_t n = wire_r_left(r);
    if (n > sizeof out->why.msg - 1)
        return CL_EPROTO;
    wire_r_bytes(r, out->why.msg, n);
    out->why.msg[n] = '\0';
    return done(r);
}

void wire_table_put(wire_w *w, const job_addr *addrs, int n)
{
    for (int i = 0; i < n; i++) {
        wire_w_u32(w, addrs[i].len);
        wire_w_bytes(w, addrs[i].bytes, addrs[i].len);
    }
}

int wire_table_get(wire_r *r, job_addr *out, int n)
{
    for (int i = 0; i < n; i++) {
        out[i].len = wire_r_u32(r);
        if (out[i].len > JOB_ADDR_MAX)
            return CL_EPROTO;
        wire_r_bytes(r, out[i].bytes, out[i].len);
    }
    return done(r);
}

void wire_done_put(wire_w *w, const wire_done *m)
{
    wire_w_u32(w, m->rank);
    wire_w_u32(w, m->iters);
    wire_w_u64(w, m->messages);
    wire_w_u64(w, m->nrec);
}

int wire_done_get(wire_r *r, wire_done *out)
{
    out->rank = wire_r_u32(r);
    out->iters = wire_r_u32(r);
    out->messages = wire_r_u64(r);
    out->nrec = wire_r_u64(r);
    return r->bad ? CL_EPROTO : 0;
}

void wire_record_put(wire_w *w, const cl_record *rec)
{
    wire_w_f64(w, rec->posted);
    wire_w_f64(w, rec->started);
    wire_w_f64(w, rec->finished);
    wire_w_u64(w, rec->bytes);
    wire_w_u64(w, rec->msg);
    wire_w_u32(w, (uint32_t)rec->peer);
    wire_w_u32(w, (uint32_t)rec->tag);
    wire_w_u32(w, (uint32_t)rec->iter);
    wire_w_bytes(w, &rec->op, 1);
    wire_w_bytes(w, &rec->blocking, 1);
}

void wire_record_get(wire_r *r, cl_record *out)
{
    out->posted = wire_r_f64(r);
    out->started = wire_r_f64(r);
    out->finished = wire_r_f64(r);
    out->bytes = wire_r_u64(r);
    out->msg = wire_r_u64(r);
    out->peer = (int32_t)wire_r_u32(r);
    out->tag = (int32_t)wire_r_u32(r);
    out->iter = (int32_t)wire_r_u32(r);
    uint8_t op, blocking;
    wire_r_bytes(r, &op, 1);
    wire_r_bytes(r, &blocking, 1);
    out->op = op < REC_OP_COUNT ? op : REC_ITER;
    out->blocking = blocking ? 1 : 0;
}
