/*
 * relay.c - a run over several hosts: the agents report their rank's
 * address, state, failure and results to the master, which writes them
 * into its own job's slots and answers with the address table, an abort or
 * the end.  See boot.h for the frames, boot_impl.h for the state.
 *
 * Everything here is non-blocking (boot_pump), except the master's last
 * flush at the end of a run.  A connection that breaks, or sends what a
 * rank's process never sends, is a lost rank (or a lost master): a
 * failure of the run, never a stall.
 */
#include "real/boot_impl.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

/* ---- the connections' buffers ---- */

static int grow(unsigned char **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 4096;
    while (c < need)
        c *= 2;
    unsigned char *p = realloc(*buf, c);
    if (!p)
        return CL_ENOMEM;
    *buf = p;
    *cap = c;
    return 0;
}

/* Queues a frame of kind with the len bytes of body; they go out in flush(). */
static void queue(boot *b, boot_conn *c, int kind, const void *body, size_t len)
{
    if (c->fd < 0)
        return;
    if (grow(&c->out, &c->out_cap, c->out_len + WIRE_HDR + len)) {
        boot__conn_drop(c); /* cannot keep up: the other side will see it gone */
        return;
    }
    unsigned char *p = c->out + c->out_len;
    wire_hdr_make(p, (uint8_t)kind, b->w.rank, 0, b->run, len, 0, 0);
    if (len)
        memcpy(p + WIRE_HDR, body, len);
    c->out_len += WIRE_HDR + len;
}

/* Writes what it can without blocking.  false: the connection is lost. */
static bool flush(boot_conn *c)
{
    size_t off = 0;
    while (c->fd >= 0 && off < c->out_len) {
        ssize_t k = send(c->fd, c->out + off, c->out_len - off, MSG_NOSIGNAL);
        if (k > 0) {
            off += (size_t)k;
            continue;
        }
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        return false;
    }
    memmove(c->out, c->out + off, c->out_len - off);
    c->out_len -= off;
    return true;
}

/* ---- a run ---- */

void boot_run_begin(boot *b, job *j)
{
    b->j = j;
    b->run++;
    b->table_sent = false;
    b->finished = false;
    b->remote_left = b->w.rank == 0 ? b->w.size - 1 : 0;
    b->status = 0;
    b->fail_status = 0;
    b->fail_new = false;
    b->state_sent = false;
    for (int i = 0; i < b->nconns; i++) {
        b->conns[i].done = false;
        b->conns[i].addr_sent = false;
    }
}

/* A failure heard of: the first one is handed to the launcher. */
static void learn_failure(boot *b, int status, const char *msg, bool from_master)
{
    if (b->fail_status)
        return;
    b->fail_status = status ? status : CL_EPEER;
    b->fail_from_master = from_master;
    b->fail_new = true;
    diag_set(&b->fail, 0, "%s", msg);
}

static void lost(boot *b, boot_conn *c)
{
    boot__conn_drop(c);
    cl_diag why;
    if (b->w.rank == 0) {
        if (c->done)
            return;
        c->done = true;
        b->remote_left--;
        diag_set(&why, 0, "rank %d went away: its process (pid %u on %s) closed its "
                 "connection to the rendezvous", c->rank, c->pid, c->host);
        learn_failure(b, CL_EPEER, why.msg, false);
    } else if (!b->finished) {
        b->finished = true;
        diag_set(&why, 0, "rank %d: lost the connection to rank 0: its process is gone",
                 b->w.rank);
        learn_failure(b, CL_EPEER, why.msg, false);
    }
}

/* The master hears of a remote rank's slot. */
static void take_state(boot *b, const wire_state *m)
{
    job_slot *s = &b->j->slots[m->rank];
    job_slot_wait_set(s, &m->wait);
    if (m->state <= JOB_BLOCKED)
        atomic_store_explicit(&s->state, m->state, memory_order_release);
    atomic_store_explicit(&s->progress, m->progress, memory_order_relaxed);
}

/* The master takes a remote rank's results into its job. */
static bool take_done(boot *b, boot_conn *c, wire_r *in)
{
    job *j = b->j;
    wire_done m;
    if (wire_done_get(in, &m))
        return false;
    uint64_t keep = m.nrec < j->rec_cap ? m.nrec : j->rec_cap;
    if ((int)m.rank != c->rank || m.iters != (uint32_t)j->iters ||
        wire_r_left(in) != (size_t)m.iters * 8 + keep * WIRE_RECORD_BYTES)
        return false;
    int rank = c->rank;
    job_slot *s = &j->slots[rank];
    s->messages = m.messages;
    for (uint32_t i = 0; i < m.iters; i++)
        j->iter_time[(size_t)rank * m.iters + i] = wire_r_f64(in);
    for (uint64_t k = 0; k < keep; k++) {
        cl_record *r = &j->recs[(size_t)rank * j->rec_cap + k];
        wire_record_get(in, r);
        r->rank = rank;
    }
    atomic_store(&s->nrec, m.nrec);
    atomic_store(&s->state, JOB_DONE);
    return true;
}

static void send_table(boot *b)
{
    size_t cap = boot__body_max(b, WIRE_TABLE);
    unsigned char *t = malloc(cap);
    if (!t) {
        learn_failure(b, CL_ENOMEM, "rank 0: out of memory", false);
        return;
    }
    wire_w w;
    wire_w_init(&w, t, cap);
    wire_table_put(&w, b->j->addrs, b->w.size);
    for (int r = 1; r < b->w.size; r++)
        queue(b, &b->conns[r], WIRE_TABLE, t, w.len);
    free(t);
    b->table_sent = true;
}

static void take_table(boot *b, wire_r *in)
{
    job_addr *a = malloc((size_t)b->w.size * sizeof *a);
    if (a && !wire_table_get(in, a, b->w.size))
        for (int r = 0; r < b->w.size; r++)
            if (r != b->w.rank)
                job_addr_publish(b->j, r, a[r].bytes, a[r].len);
    free(a);
}

/* The master: a frame from the agent of c. */
static void master_handle(boot *b, boot_conn *c, int kind, wire_r *in)
{
    switch (kind) {
    case WIRE_ADDR: {
        wire_addr m;
        if (!wire_addr_get(in, &m) && (int)m.rank == c->rank)
            job_addr_publish(b->j, c->rank, m.bytes, m.len);
        return;
    }
    case WIRE_STATE: {
        wire_state m;
        if (!wire_state_get(in, &m) && (int)m.rank == c->rank)
            take_state(b, &m);
        return;
    }
    case WIRE_FAIL: {
        wire_fail m;
        if (!wire_fail_get(in, &m) && !c->done) {
            c->done = true;
            b->remote_left--;
            learn_failure(b, m.status, m.why.msg, false);
        }
        return;
    }
    case WIRE_DONE:
        if (!c->done) {
            if (!take_done(b, c, in)) {
                cl_diag why;
                diag_set(&why, 0, "rank %d sent malformed results", c->rank);
                learn_failure(b, CL_EPROTO, why.msg, false);
            }
            c->done = true;
            b->remote_left--;
        }
        return;
    }
}

/* An agent: a frame from the master. */
static void agent_handle(boot *b, int kind, wire_r *in)
{
    switch (kind) {
    case WIRE_TABLE:
        take_table(b, in);
        return;
    case WIRE_ABORT: {
        wire_fail m;
        if (!wire_fail_get(in, &m)) {
            b->status = m.status;
            learn_failure(b, b->status, m.why.msg, true);
            b->finished = true;
        }
        return;
    }
    case WIRE_FINISH: {
        int status = (int)wire_r_u32(in);
        if (wire_r_done(in)) {
            b->status = status;
            b->finished = true;
        }
        return;
    }
    }
}

/* Reads what c has; frames of the current run are handled. */
static void drain(boot *b, boot_conn *c)
{
    bool gone = false; /* the frames that came before the end still count */
    while (!gone) {
        if (grow(&c->in, &c->in_cap, c->in_len + 65536)) {
            lost(b, c);
            return;
        }
        ssize_t k = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
        if (k > 0)
            c->in_len += (size_t)k;
        else if (k < 0 && errno == EINTR)
            continue;
        else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        else
            gone = true;
    }
    size_t off = 0;
    while (c->in_len - off >= WIRE_HDR) {
        wire_hdr h;
        wire_hdr_decode(c->in + off, &h);
        size_t max = boot__body_max(b, h.kind);
        if (!wire_hdr_valid(&h) || max == SIZE_MAX || h.len > max) {
            lost(b, c); /* a rank's process does not send that: treat it as gone */
            return;
        }
        if (c->in_len - off < WIRE_HDR + h.len)
            break;
        if (h.ctx == b->run) {
            wire_r in;
            wire_r_init(&in, c->in + off + WIRE_HDR, (size_t)h.len);
            if (b->w.rank == 0)
                master_handle(b, c, h.kind, &in);
            else
                agent_handle(b, h.kind, &in);
        }
        off += WIRE_HDR + (size_t)h.len;
        if (c->fd < 0)
            return;
    }
    memmove(c->in, c->in + off, c->in_len - off);
    c->in_len -= off;
    if (gone)
        lost(b, c);
}

/* An agent reports its rank's address and slot when they change. */
static void agent_publish(boot *b)
{
    boot_conn *m = &b->conns[0];
    int me = b->w.rank;
    const job_addr *a = &b->j->addrs[me];
    unsigned char body[8 + JOB_ADDR_MAX + 32 + JOB_MAX_PENDING * 20]; /* ADDR or STATE */
    wire_w w;
    if (!m->addr_sent && atomic_load_explicit(&a->ready, memory_order_acquire)) {
        wire_addr msg = {.rank = (uint32_t)me, .len = a->len};
        memcpy(msg.bytes, a->bytes, a->len);
        wire_w_init(&w, body, sizeof body);
        wire_addr_put(&w, &msg);
        queue(b, m, WIRE_ADDR, body, w.len);
        m->addr_sent = true;
    }
    const job_slot *s = &b->j->slots[me];
    wire_state st = {.rank = (uint32_t)me};
    st.state = atomic_load_explicit(&s->state, memory_order_acquire);
    st.progress = atomic_load_explicit(&s->progress, memory_order_relaxed);
    uint32_t q = job_slot_wait_read(s, &st.wait);
    if (b->state_sent && q == b->sent_seq && st.state == b->sent_state &&
        st.progress == b->sent_progress)
        return;
    if (st.state == JOB_DONE || st.state == JOB_FAILED)
        return; /* DONE and FAIL say that */
    wire_w_init(&w, body, sizeof body);
    wire_state_put(&w, &st);
    queue(b, m, WIRE_STATE, body, w.len);
    b->state_sent = true;
    b->sent_seq = q;
    b->sent_state = st.state;
    b->sent_progress = st.progress;
}

void boot_pump(boot *b, int timeout_ms)
{
    if (b->w.rank != 0 && !b->finished)
        agent_publish(b);
    if (b->w.rank == 0 && !b->table_sent && !b->fail_status) {
        bool all = true;
        for (int r = 0; r < b->w.size && all; r++)
            all = atomic_load_explicit(&b->j->addrs[r].ready, memory_order_acquire);
        if (all)
            send_table(b);
    }
    struct pollfd *pfd = b->pfd;
    int *idx = b->pidx, n = 0;
    for (int i = 0; i < b->nconns; i++) {
        boot_conn *c = &b->conns[i];
        if (c->fd >= 0 && c->out_len && !flush(c))
            lost(b, c);
        if (c->fd < 0)
            continue;
        pfd[n].fd = c->fd;
        pfd[n].events = (short)(POLLIN | (c->out_len ? POLLOUT : 0));
        idx[n++] = i;
    }
    if (n == 0) {
        if (timeout_ms > 0) {
            struct timespec ts = {0, (long)timeout_ms * 1000000L};
            nanosleep(&ts, NULL);
        }
        return;
    }
    if (poll(pfd, (nfds_t)n, timeout_ms) <= 0)
        return;
    for (int k = 0; k < n; k++) {
        boot_conn *c = &b->conns[idx[k]];
        if (c->fd >= 0 && (pfd[k].revents & (POLLIN | POLLHUP | POLLERR)))
            drain(b, c);
        if (c->fd >= 0 && (pfd[k].revents & POLLOUT) && !flush(c))
            lost(b, c);
    }
}

int boot_failure(boot *b, int *status, cl_diag *why, bool *from_master)
{
    if (!b->fail_new)
        return 0;
    b->fail_new = false;
    *status = b->fail_status;
    *from_master = b->fail_from_master;
    *why = b->fail;
    return 1;
}

bool boot_waiting(const boot *b)
{
    return b->w.rank == 0 ? b->remote_left > 0 : !b->finished;
}

bool boot_report_failure(boot *b, int status, const char *msg)
{
    wire_fail m = {.rank = (uint32_t)b->w.rank, .status = status};
    diag_set(&m.why, 0, "%s", msg);
    unsigned char body[8 + DIAG_MAX];
    wire_w w;
    wire_w_init(&w, body, sizeof body);
    wire_fail_put(&w, &m);
    if (b->w.rank == 0) {
        b->status = status;
        for (int r = 1; r < b->w.size; r++) {
            queue(b, &b->conns[r], WIRE_ABORT, body, w.len);
            flush(&b->conns[r]);
        }
        /* The others stop now: the master does not wait for their word. */
        for (int r = 1; r < b->w.size; r++)
            b->conns[r].done = true;
        b->remote_left = 0;
        return false;
    }
    if (b->fail_from_master)
        return true; /* the master knows: it told us */
    if (b->conns[0].fd < 0)
        return false;
    queue(b, &b->conns[0], WIRE_FAIL, body, w.len);
    return flush(&b->conns[0]);
}

void boot_report_done(boot *b)
{
    if (b->w.rank == 0)
        return;
    job *j = b->j;
    int me = b->w.rank;
    const job_slot *s = &j->slots[me];
    wire_done m = {.rank = (uint32_t)me, .iters = (uint32_t)j->iters,
                   .messages = s->messages, .nrec = atomic_load(&s->nrec)};
    uint64_t keep = m.nrec < j->rec_cap ? m.nrec : j->rec_cap;
    size_t cap = boot__body_max(b, WIRE_DONE);
    unsigned char *p = malloc(cap);
    if (!p) {
        boot_report_failure(b, CL_ENOMEM, "out of memory sending results");
        return;
    }
    wire_w w;
    wire_w_init(&w, p, cap);
    wire_done_put(&w, &m);
    for (int i = 0; i < j->iters; i++)
        wire_w_f64(&w, j->iter_time[(size_t)me * (size_t)j->iters + (size_t)i]);
    for (uint64_t k = 0; k < keep; k++)
        wire_record_put(&w, &j->recs[(size_t)me * j->rec_cap + k]);
    queue(b, &b->conns[0], WIRE_DONE, p, w.len);
    free(p);
    flush(&b->conns[0]);
}

void boot_run_end(boot *b, int status)
{
    if (b->w.rank != 0)
        return;
    unsigned char body[4];
    wire_put32(body, (uint32_t)status);
    if (status == 0 && b->status == 0)
        for (int r = 1; r < b->w.size; r++)
            queue(b, &b->conns[r], WIRE_FINISH, body, sizeof body);
    b->status = b->status ? b->status : status;
    /* Everything queued goes out before the next run (or the exit). */
    double deadline = job_now() + BOOT_HANDSHAKE_SECONDS;
    for (int r = 1; r < b->w.size; r++) {
        boot_conn *c = &b->conns[r];
        while (c->fd >= 0 && c->out_len && job_now() < deadline) {
            if (!flush(c)) {
                boot__conn_drop(c);
                break;
            }
            if (c->out_len)
                boot__wait_fd(c->fd, POLLOUT, deadline);
        }
    }
}

int boot_run_status(const boot *b)
{
    return b->status;
}
