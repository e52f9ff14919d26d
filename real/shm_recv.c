/*
 * shm_recv.c - the shm transport's consuming side: the records at the
 * head of each ring, eager messages into a posted receive or an
 * unexpected copy, the rendezvous (single copies, or the ring), and the
 * progress pass (real/shm.c says what the records and protocols are).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "core/comm.h"
#include "real/shm_impl.h"

/* Copies out of a ring at byte offset `at` of it, wrapping at its end. */
static void ring_read(const shm_rank *s, const unsigned char *rg, size_t at, void *dst, size_t len)
{
    at %= s->ring_bytes;
    size_t first = s->ring_bytes - at < len ? s->ring_bytes - at : len;
    memcpy(dst, rg + at, first);
    if (first < len)
        memcpy((char *)dst + first, rg, len - first);
}

/* ---- consuming ---- */

/* Bytes of a rendezvous receive have landed (read by us, written by the
 * sender or streamed); with the last one the sender hears FIN. */
static void recv_advance(shm_rank *s, shm_req *r, uint64_t bytes)
{
    r->off += bytes;
    if (r->off < r->x.total)
        return;
    uint64_t bits;
    memcpy(&bits, &r->x.started, sizeof bits);
    shm__send_ctrl(s, r->x.base.status.source, REC_FIN, 0, 0, r->peer_cookie, bits, 0);
    xfer_finish_recv(&s->x, &r->x, r->x.sum);
}

/* One copy between address spaces: process_vm_readv (read) or _writev. */
static bool cma_copy(shm_rank *s, int peer, void *local, uint64_t remote, uint64_t len,
                     bool read)
{
    uint64_t done = 0;
    while (done < len) {
        struct iovec l = {(char *)local + done, (size_t)(len - done)};
        struct iovec r = {(void *)(uintptr_t)(remote + done), (size_t)(len - done)};
        ssize_t got = read ? process_vm_readv(s->bells[peer].pid, &l, 1, &r, 1, 0)
                           : process_vm_writev(s->bells[peer].pid, &l, 1, &r, 1, 0);
        if (got <= 0)
            return false;
        done += (uint64_t)got;
    }
    return true;
}

/* The kernel refused a single copy: an error with --shm-copy cma, else
 * the staging path from now on. */
static bool cma_refused(shm_rank *s, int peer)
{
    if (s->copy == SHM_COPY_CMA) {
        xfer_fatal(&s->x, CL_EIO, "process_vm_readv/writev with rank %d failed: %s (try "
                   "--shm-copy staging)", peer, strerror(errno));
        return false;
    }
    s->copy = SHM_COPY_STAGING;
    return true;
}

/* Rendezvous: receive r matched the RTS m from src.  Both cores copy: we
 * ask the sender (CTS) to write the second half straight into our buffer
 * and read the first half from its buffer ourselves.  Without single
 * copies the CTS asks for everything through the ring instead. */
void shm__pull(xfer_rank *x, xfer_req *xr, xfer_msg *xm, int src)
{
    shm_rank *s = (shm_rank *)x;
    shm_req *r = (shm_req *)xr;
    shm_msg *m = (shm_msg *)xm;
    r->x.started = s->x.base.tracing ? rank_now(&s->x.base) : 0;
    if (xfer_truncated(x, xr, src, m->x.total)) {
        shm__send_ctrl(s, src, REC_FIN, 0, 0, m->cookie, 0, 0);
        xfer_complete(&s->x, &r->x, CL_ETRUNC);
        xfer_msg_free(x, xm);
        return;
    }
    uint64_t total = m->x.total, addr = m->addr;
    r->x.sum = m->x.sum;
    r->peer_cookie = m->cookie;
    r->off = 0;
    xfer_msg_free(x, xm);
    uint64_t me = (uint64_t)(uintptr_t)r;
    if (total == 0) {
        recv_advance(s, r, 0);
        return;
    }
    if (s->copy == SHM_COPY_STAGING) {
        shm__send_ctrl(s, src, REC_CTS, 0, total, r->peer_cookie, me, 0);
        return;
    }
    uint64_t half = total / 2;
    shm__send_ctrl(s, src, REC_CTS, half, total, r->peer_cookie, me, (uint64_t)(uintptr_t)r->x.buf);
    if (half == 0)
        return;
    if (cma_copy(s, src, r->x.buf, addr, half, true))
        recv_advance(s, r, half);
    else if (cma_refused(s, src))
        shm__send_ctrl(s, src, REC_CTS, 0, half, r->peer_cookie, me, 0);
}

/* The sender's side of a CTS: bytes [from, to) of send r for the receive
 * `cookie` at `addr` of rank dst (0: through the ring). */
static void serve(shm_rank *s, int dst, shm_req *r, uint64_t cookie, uint64_t addr,
                  uint64_t from, uint64_t to)
{
    if (s->x.base.tracing && !r->x.started)
        r->x.started = rank_now(&s->x.base);
    if (from >= to)
        return;
    if (addr && s->copy != SHM_COPY_STAGING) {
        if (cma_copy(s, dst, (char *)(uintptr_t)r->x.sbuf + from, addr + from, to - from, false)) {
            shm__send_ctrl(s, dst, REC_PUTDONE, 0, 0, cookie, to - from, 0);
            return;
        }
        if (!cma_refused(s, dst))
            return;
    }
    shm_req *job = (shm_req *)xfer_req_new(&s->x);
    if (!job) {
        xfer_fatal(&s->x, CL_ENOMEM, "out of memory streaming to rank %d", dst);
        return;
    }
    job->x.kind = XFER_STREAM;
    job->x.sbuf = r->x.sbuf;
    job->off = from;
    job->x.bytes = to;
    job->peer_cookie = cookie;
    shm__enqueue(s, dst, job);
    shm__push(s, dst);
}

/* A new message's envelope from src, of total bytes with checksum sum:
 * matched to a posted receive, or kept. */
static void arrive(shm_rank *s, int src, const shm_hdr *h, bool eager, uint64_t total,
                   uint64_t sum)
{
    shm_in *in = &s->in[src];
    shm_msg *m = (shm_msg *)xfer_msg_new(&s->x);
    if (!m) {
        xfer_fatal(&s->x, CL_ENOMEM, "out of memory for a message from rank %d", src);
        return;
    }
    m->x.eager = eager;
    m->x.total = total;
    m->x.sum = sum;
    m->x.msg_id = rank_msg_id(src, s->me, ++in->nmsg);
    if (!eager) {
        m->addr = h->arg[0];
        m->cookie = h->arg[1];
    }
    xfer_req *r;
    switch (xfer_arrive(&s->x, &m->x, src, h->tag, h->ctx, &r)) {
    case XFER_INTO_RECV:
        in->req = (shm_req *)r;
        break;
    case XFER_INTO_MSG:
        in->msg = m;
        break;
    case XFER_INTO_DROP:
        in->drop = total;
        break;
    }
}

/* Where the next bytes of the current eager message from src go: the
 * posted receive or the unexpected copy, or NULL (dropped, or no buffer). */
static char *eager_dest(shm_rank *s, int src)
{
    shm_in *in = &s->in[src];
    if (in->drop)
        return NULL;
    if (in->req)
        return in->req->x.buf ? (char *)in->req->x.buf + in->req->off : NULL;
    if (in->msg)
        return in->msg->x.data ? (char *)in->msg->x.data + in->msg->x.got : NULL;
    return NULL;
}

/* len more bytes of the current eager message from src are in (or
 * dropped); the last of them completes its receive or its copy. */
static void eager_took(shm_rank *s, int src, uint64_t len)
{
    shm_in *in = &s->in[src];
    if (in->drop) {
        in->drop -= len < in->drop ? len : in->drop;
    } else if (in->req) {
        shm_req *r = in->req;
        r->off += len;
        if (r->off >= r->x.total) {
            in->req = NULL;
            xfer_finish_recv(&s->x, &r->x, r->x.sum);
        }
    } else if (in->msg) {
        shm_msg *m = in->msg;
        m->x.got += len;
        if (m->x.got >= m->x.total) {
            in->msg = NULL;
            if (m->x.waiting)
                xfer_deliver_copy(&s->x, m->x.waiting, &m->x);
        }
    }
}

/* Data of the current eager message from src, at byte `at` of its ring. */
static void eager_data(shm_rank *s, int src, const unsigned char *rg, size_t at, uint64_t len)
{
    char *to = eager_dest(s, src);
    if (to && len)
        ring_read(s, rg, at, to, (size_t)len);
    eager_took(s, src, len);
}

/* A SMALL record's payload, len bytes in n lines from line pos of src's
 * ring (see SMALL_MAX); whole 56-byte pieces copied by constant size. */
static void small_data(shm_rank *s, int src, const unsigned char *rg, uint64_t pos, size_t n,
                       uint64_t len)
{
    char *to = eager_dest(s, src);
    uint64_t lines = s->area->ring_lines;
    if (to) {
        size_t piece, at = shm__small_piece(pos, lines, 0, len, &piece), done = piece;
        memcpy(to, rg + at, piece);
        for (size_t k = 1; k < n; k++, done += piece) {
            at = shm__small_piece(pos, lines, k, len, &piece);
            if (piece == LINE - STAMP)
                memcpy(to + done, rg + at, LINE - STAMP);
            else
                memcpy(to + done, rg + at, piece);
        }
    }
    eager_took(s, src, len);
}

/* Handles the record at the head of src's ring; false when there is none. */
static bool consume(shm_rank *s, int src)
{
    shm_in *in = &s->in[src];
    unsigned char *rg = shm__ring(s, src, s->me);
    uint64_t lines = s->area->ring_lines;
    shm_hdr *h = (shm_hdr *)(rg + (in->pos % lines) * LINE);
    if (atomic_load_explicit(&h->seq, memory_order_acquire) != in->pos + 1)
        return false;
    uint32_t kind = h->kind;
    size_t off = kind == REC_SMALL ? SMALL_OFF : PAYLOAD_OFF;
    size_t at = (size_t)(in->pos % lines) * LINE + off;
    uint64_t len = h->len, n = shm__record_lines(off, len);
    for (uint64_t l = 1; (kind == REC_SMALL || kind == REC_EAGER) && l < n; l++)
        __builtin_prefetch(rg + ((in->pos + l) % lines) * LINE); /* fetched while matching */
    switch (kind) {
    case REC_SMALL:
        arrive(s, src, h, true, len, 0);
        small_data(s, src, rg, in->pos, n, len);
        break;
    case REC_EAGER:
        arrive(s, src, h, true, h->total, h->sum);
        if (h->total == 0) {
            if (in->req) {
                shm_req *r = in->req;
                in->req = NULL;
                xfer_finish_recv(&s->x, &r->x, r->x.sum);
            }
            in->msg = NULL;
        } else {
            eager_data(s, src, rg, at, len);
        }
        break;
    case REC_FRAG:
        eager_data(s, src, rg, at, len);
        break;
    case REC_RTS:
        arrive(s, src, h, false, h->total, h->sum);
        break;
    case REC_CTS:
        serve(s, src, (shm_req *)(uintptr_t)h->arg[0], h->arg[1], h->arg[2], h->total, h->sum);
        break;
    case REC_RDATA: {
        shm_req *r = (shm_req *)(uintptr_t)h->total;
        if (len && r->x.buf)
            ring_read(s, rg, at, (char *)r->x.buf + h->sum, (size_t)len);
        recv_advance(s, r, len);
        break;
    }
    case REC_PUTDONE:
        recv_advance(s, (shm_req *)(uintptr_t)h->arg[0], h->arg[1]);
        break;
    case REC_FIN: {
        shm_req *r = (shm_req *)(uintptr_t)h->arg[0];
        double started;
        memcpy(&started, &h->arg[1], sizeof started);
        if (started > 0)
            r->x.started = started;
        xfer_complete(&s->x, &r->x, 0);
        break;
    }
    default:
        xfer_fatal(&s->x, CL_EPROTO, "a record of unknown kind %u from rank %d", kind, src);
        break;
    }
    if (n <= SHORT_LINES && kind != REC_SMALL) /* no old payload on the next lap */
        for (uint64_t l = 1; l < n; l++)
            atomic_store_explicit(&((shm_hdr *)(rg + ((in->pos + l) % lines) * LINE))->seq, 0,
                                  memory_order_relaxed);
    in->pos += n;
    atomic_store_explicit(&s->consumed[src * s->n + s->me].lines, in->pos,
                          memory_order_release);
    rank_progressed(&s->x.base);
    return true;
}

/* One pass over every ring and every outgoing queue.  Returns how many
 * records were read, or a negative CL_E* after a fatal error. */
int shm__progress(shm_rank *s)
{
    int handled = 0;
    for (int src = 0; src < s->n; src++) {
        int k = 0;
        while (consume(s, src))
            k++;
        if (k) {
            handled += k;
            shm__notify(s, src); /* it may be waiting for room */
        }
    }
    for (int dst = 0; dst < s->n; dst++)
        if (s->out[dst].head)
            shm__push(s, dst);
    return s->x.failed ? s->x.failed : handled;
}

int shm__poll(real_rank *r)
{
    return shm__progress((shm_rank *)r);
}
