/* comm.c - the public cl_* calls, once for every backend. */
#include "core/comm.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/debug.h"
#include "core/reduce.h"
#include "core/run.h"

void comm_world_init(cl_comm *c, const comm_ops *ops, void *backend, int rank, int size,
                     bool payload)
{
    memset(c, 0, sizeof *c);
    c->ops = ops;
    c->backend = backend;
    c->world = c;
    c->rank = rank;
    c->size = size;
    c->payload = payload;
    c->checking = true;
}

int cl_rank(const cl_comm *c) { return c->rank; }
int cl_size(const cl_comm *c) { return c->size; }
unsigned long long cl_sent_bytes(const cl_comm *c) { return c->sent; }
bool cl_payload(const cl_comm *c) { return c->payload; }
bool cl_checking(const cl_comm *c) { return c->world->checking; }
double cl_now(const cl_comm *c) { return c->ops->now(c); }

/* The communicator rank of world rank w; -1 if not a member.  O(size) for
 * groups: groups are small in the course, the world needs no search. */
static int local_rank(const cl_comm *c, int w)
{
    if (!c->members)
        return w;
    for (int i = 0; i < c->size; i++)
        if (c->members[i] == w)
            return i;
    return -1;
}

/* The public call a rank is in, kept for the report of a rank that
 * crashes or stops making progress inside it (sim/fault.h); a call made
 * by another keeps the outer one's name.  Returns what call_leave puts
 * back. */
static const char *call_enter(cl_comm *c, const char *name)
{
    const char *outer = c->world->call.name;
    if (!outer)
        c->world->call.name = name;
    return outer;
}

static int call_leave(cl_comm *c, const char *outer, int rc)
{
    c->world->call.name = outer;
    return rc;
}

/* Refuses a call's arguments: CL_EINVAL, and why, kept on the world
 * communicator for the rank's failure report (core/run.c). */
__attribute__((format(printf, 2, 3))) static int refuse(cl_comm *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->world->refused, sizeof c->world->refused, fmt, ap);
    va_end(ap);
    return CL_EINVAL;
}

/* The arguments of a send to peer (a receive, any: from peer, which may
 * be CL_ANY_SOURCE) in c.  The test that passes is inline; what is wrong,
 * and the name of the call, are found out of line. */
static int refuse_args(cl_comm *c, int peer, bool any, int tag, const void *buf, size_t bytes);

static inline int check_args(cl_comm *c, int peer, bool any, int tag, const void *buf,
                             size_t bytes)
{
    if (((unsigned)peer < (unsigned)c->size || (any && peer == CL_ANY_SOURCE)) &&
        tag >= (any ? CL_ANY_TAG : 0) && (buf || !bytes || !c->payload))
        return 0;
    return refuse_args(c, peer, any, tag, buf, bytes);
}

static int refuse_args(cl_comm *c, int peer, bool any, int tag, const void *buf, size_t bytes)
{
    bool blocking = c->world->blocking_call;
    const char *call = any ? (blocking ? "cl_recv" : "cl_irecv")
                           : (blocking ? "cl_send" : "cl_isend");
    const char *dir = any ? "from" : "to";
    if ((peer < 0 || peer >= c->size) && !(any && peer == CL_ANY_SOURCE))
        return refuse(c, "%s %s rank %d: the %s has ranks 0..%d (%d ranks)", call, dir, peer,
                      c->members ? "group" : "world", c->size - 1, c->size);
    if (tag < (any ? CL_ANY_TAG : 0))
        return refuse(c, "%s with tag %d: tags are 0 or more", call, tag);
    if (c->payload && bytes > 0 && !buf)
        return refuse(c, "%s of %zu bytes with a NULL buffer", call, bytes);
    return 0;
}

static int isend_call(cl_comm *c, const void *buf, size_t bytes, int dst, int tag,
                      cl_request **req)
{
    *req = NULL;
    if (check_args(c, dst, false, tag, buf, bytes))
        return CL_EINVAL;
    int err = c->world->debug ? debug_isend(c, buf, bytes, dst, tag, req)
                              : c->ops->isend(c, buf, bytes, comm_world_rank(c, dst), tag,
                                              c->ctx, req);
    if (!err)
        c->sent += bytes;
    return err;
}

int cl_isend(cl_comm *c, const void *buf, size_t bytes, int dst, int tag, cl_request **req)
{
    const char *outer = call_enter(c, "cl_isend");
    return call_leave(c, outer, isend_call(c, buf, bytes, dst, tag, req));
}

static int irecv_call(cl_comm *c, void *buf, size_t bytes, int src, int tag,
                      cl_request **req)
{
    *req = NULL;
    if (check_args(c, src, true, tag, buf, bytes))
        return CL_EINVAL;
    if (c->world->debug)
        return debug_irecv(c, buf, bytes, src, tag, req);
    int wsrc = src == CL_ANY_SOURCE ? CL_ANY_SOURCE : comm_world_rank(c, src);
    return c->ops->irecv(c, buf, bytes, wsrc, tag, c->ctx, req);
}

int cl_irecv(cl_comm *c, void *buf, size_t bytes, int src, int tag, cl_request **req)
{
    const char *outer = call_enter(c, "cl_irecv");
    return call_leave(c, outer, irecv_call(c, buf, bytes, src, tag, req));
}

/* A done request's status (source in c's ranks). */
static void status_of(cl_comm *c, const cl_request *r, cl_status *st)
{
    *st = r->status;
    if (!r->is_send)
        st->source = local_rank(c, r->status.source);
}

/* Copies a done request's status out, frees it.  Inline: it runs once per
 * request of every wait, and what it does without --debug is a few
 * loads. */
static inline int finish(cl_comm *c, cl_request **req, cl_status *st)
{
    cl_request *r = *req;
    int err = r->err;
    if (st)
        status_of(c, r, st);
    if (c->world->debug) {
        int e = debug_complete(c, r);
        if (!err)
            err = e;
    }
    c->ops->release(c, r);
    *req = NULL;
    return err;
}

/* The rank is in a blocking call: what it is.  Left open when the
 * backend's wait fails (the call never completed), closed otherwise.  A
 * few stores and no clock read: measured latencies are hundreds of
 * nanoseconds. */
static void call_open(cl_comm *c, rec_op op, int peer, int tag, uint64_t bytes)
{
    comm_call *call = &c->world->call;
    *call = (comm_call){.name = call->name, .open = true, .op = (uint8_t)op, .peer = peer,
                        .tag = tag, .bytes = bytes};
}

static int wait_call(cl_comm *c, cl_request **req, cl_status *st)
{
    if (!*req)
        return 0;
    wf_op call = (*req)->blocking ? ((*req)->is_send ? WF_SEND : WF_RECV) : WF_WAIT;
    if (call == WF_WAIT)
        call_open(c, REC_WAIT, -1, -1, 0);
    int err = c->ops->wait(c, 1, req, call);
    if (err)
        return err;
    c->world->call.open = false;
    return finish(c, req, st);
}

int cl_wait(cl_comm *c, cl_request **req, cl_status *st)
{
    const char *outer = call_enter(c, "cl_wait");
    return call_leave(c, outer, wait_call(c, req, st));
}

static int waitall_call(cl_comm *c, int n, cl_request **reqs, cl_status *sts)
{
    if (n < 0)
        return CL_EINVAL;
    call_open(c, REC_WAIT, -1, -1, 0);
    int err = c->ops->wait(c, n, reqs, WF_WAITALL);
    if (err)
        return err;
    c->world->call.open = false;
    for (int i = 0; i < n; i++) {
        if (!reqs[i])
            continue;
        int e = finish(c, &reqs[i], sts ? &sts[i] : NULL);
        if (e && !err)
            err = e;
    }
    return err;
}

int cl_waitall(cl_comm *c, int n, cl_request **reqs, cl_status *sts)
{
    const char *outer = call_enter(c, "cl_waitall");
    return call_leave(c, outer, waitall_call(c, n, reqs, sts));
}

static int test_call(cl_comm *c, cl_request **req, bool *done, cl_status *st)
{
    *done = false;
    if (!*req) {
        *done = true;
        return 0;
    }
    int err = c->ops->test(c, *req, done);
    if (err || !*done)
        return err;
    return finish(c, req, st);
}

int cl_test(cl_comm *c, cl_request **req, bool *done, cl_status *st)
{
    const char *outer = call_enter(c, "cl_test");
    return call_leave(c, outer, test_call(c, req, done, st));
}

static int send_call(cl_comm *c, const void *buf, size_t bytes, int dst, int tag)
{
    cl_request *r;
    c->world->blocking_call = true;
    int err = cl_isend(c, buf, bytes, dst, tag, &r);
    c->world->blocking_call = false;
    if (err)
        return err;
    r->blocking = true;
    call_open(c, REC_SEND, comm_world_rank(c, dst), tag, bytes);
    return cl_wait(c, &r, NULL);
}

int cl_send(cl_comm *c, const void *buf, size_t bytes, int dst, int tag)
{
    const char *outer = call_enter(c, "cl_send");
    return call_leave(c, outer, send_call(c, buf, bytes, dst, tag));
}

static int recv_call(cl_comm *c, void *buf, size_t bytes, int src, int tag, cl_status *st)
{
    cl_request *r;
    c->world->blocking_call = true;
    int err = cl_irecv(c, buf, bytes, src, tag, &r);
    c->world->blocking_call = false;
    if (err)
        return err;
    r->blocking = true;
    call_open(c, REC_RECV, src == CL_ANY_SOURCE ? -1 : comm_world_rank(c, src), tag, bytes);
    return cl_wait(c, &r, st);
}

int cl_recv(cl_comm *c, void *buf, size_t bytes, int src, int tag, cl_status *st)
{
    const char *outer = call_enter(c, "cl_recv");
    return call_leave(c, outer, recv_call(c, buf, bytes, src, tag, st));
}

/* Dissemination barrier: in round k each rank signals rank + 2^k and hears
 * from rank - 2^k; after ceil(log2(size)) rounds everyone has heard,
 * transitively, from everyone.  With n > 0 values each signal carries v,
 * and v becomes the element-wise max of the two: a maximum taken twice is
 * still the maximum, so every rank ends with the maximum over all ranks
 * even when size is not a power of two.  The values' messages use tags of
 * their own (COMM_TAG_MAX + round), so they never match a plain barrier's. */
static int barrier_call(cl_comm *c, double *v, int n)
{
    double start = c->ops->now(c);
    double got[COMM_MAX_VALUES];
    size_t bytes = (size_t)n * sizeof *v;
    int tag0 = n ? COMM_TAG_MAX : 0;
    call_open(c, REC_BARRIER, -1, -1, 0);
    int round = 0;
    for (int k = 1; k < c->size; k <<= 1, round++) {
        cl_request *r[2] = {NULL, NULL};
        int to = comm_world_rank(c, (c->rank + k) % c->size);
        int from = comm_world_rank(c, (c->rank - k % c->size + c->size) % c->size);
        int err = c->ops->irecv(c, n ? got : NULL, bytes, from, tag0 + round, c->ctx + 1, &r[0]);
        if (!err)
            err = c->ops->isend(c, n ? v : NULL, bytes, to, tag0 + round, c->ctx + 1, &r[1]);
        if (!err)
            err = c->ops->wait(c, 2, r, WF_BARRIER);
        for (int i = 0; i < 2; i++)
            if (r[i] && r[i]->done)
                c->ops->release(c, r[i]);
        if (err)
            return err;
        for (int i = 0; i < n; i++)
            if (got[i] > v[i])
                v[i] = got[i];
    }
    c->world->call.open = false;
    if (c->ops->span)
        c->ops->span(c, REC_BARRIER, start, c->ops->now(c));
    return 0;
}

int cl_barrier(cl_comm *c)
{
    const char *outer = call_enter(c, "cl_barrier");
    return call_leave(c, outer, barrier_call(c, NULL, 0));
}

int comm_barrier_max(cl_comm *c, double *v, int n)
{
    assert(n >= 1 && n <= COMM_MAX_VALUES);
    const char *outer = call_enter(c, "cl_barrier");
    return call_leave(c, outer, barrier_call(c, v, n));
}

/* splitmix64's finalizer: spreads (parent ctx, group number) over the
 * 32-bit id space so sibling and nested groups do not collide in practice. */
static uint32_t child_ctx(uint32_t parent, uint32_t n)
{
    uint64_t z = ((uint64_t)parent << 32 | n) + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    uint32_t id = (uint32_t)z & ~1u;
    return id ? id : 2;
}

int cl_group(cl_comm *c, const int *ranks, int n, cl_comm **out)
{
    *out = NULL;
    if (n <= 0 || n > c->size)
        return CL_EINVAL;
    int me = -1;
    for (int i = 0; i < n; i++) {
        if (ranks[i] < 0 || ranks[i] >= c->size)
            return CL_EINVAL;
        for (int j = 0; j < i; j++)
            if (ranks[j] == ranks[i])
                return CL_EINVAL;
        if (ranks[i] == c->rank)
            me = i;
    }
    uint32_t ctx = child_ctx(c->ctx, ++c->ngroups);
    int err = c->ops->group ? c->ops->group(c, ctx, me) : 0;
    if (err || me < 0)
        return err;
    cl_comm *g = malloc(sizeof *g);
    int *members = malloc((size_t)n * sizeof *members);
    if (!g || !members) {
        free(g);
        free(members);
        if (c->ops->group_free)
            c->ops->group_free(c, ctx);
        return CL_ENOMEM;
    }
    for (int i = 0; i < n; i++)
        members[i] = comm_world_rank(c, ranks[i]);
    *g = *c;
    g->members = members;
    g->rank = me;
    g->size = n;
    g->ctx = ctx;
    g->ngroups = 0;
    g->sent = 0;
    *out = g;
    return 0;
}

void cl_group_free(cl_comm *group)
{
    if (!group || group == group->world)
        return;
    if (group->ops->group_free)
        group->ops->group_free(group, group->ctx);
    free(group->members);
    free(group);
}

static int compute_call(cl_comm *c, double seconds)
{
    if (!(seconds >= 0))
        return CL_EINVAL;
    return c->ops->compute(c, seconds);
}

int cl_compute(cl_comm *c, double seconds)
{
    const char *outer = call_enter(c, "cl_compute");
    return call_leave(c, outer, compute_call(c, seconds));
}

/* What cl_reduce_local and cl_reduce_finish refuse, and their modeled
 * cost.  Alignment is checked because the loops read whole elements. */
static int reduce_args(cl_comm *c, const char *call, const void *dst, const void *src,
                       size_t count, cl_dtype t, cl_op op)
{
    char why[96];
    if (reduce_valid(t, op, why, sizeof why))
        return refuse(c, "%s: %s", call, why);
    if (c->payload && count && (!dst || !src))
        return refuse(c, "%s of %zu elements with a NULL buffer", call, count);
    size_t size = cl_dtype_size(t);
    if ((uintptr_t)dst % size || (uintptr_t)src % size)
        return refuse(c, "%s: %s is not on a boundary of its %s elements (%zu bytes)", call,
                      (uintptr_t)dst % size ? "dst" : "src", cl_dtype_name(t), size);
    return 0;
}

static int reduce_cost(cl_comm *c, size_t count, cl_dtype t)
{
    if (!c->ops->reduce_time)
        return 0;
    double s = c->ops->reduce_time(c, count * cl_dtype_size(t), t);
    return s > 0 ? c->ops->compute(c, s) : 0;
}

static int reduce_call(cl_comm *c, void *dst, const void *src, size_t count, cl_dtype t,
                       cl_op op)
{
    CL_TRY(reduce_args(c, "cl_reduce_local", dst, src, count, t, op));
    if (dst && src && c->payload)
        reduce_apply(dst, src, count, t, op);
    return reduce_cost(c, count, t);
}

int cl_reduce_local(cl_comm *c, void *dst, const void *src, size_t count, cl_dtype t, cl_op op)
{
    const char *outer = call_enter(c, "cl_reduce_local");
    return call_leave(c, outer, reduce_call(c, dst, src, count, t, op));
}

static int finish_call(cl_comm *c, void *buf, size_t count, cl_dtype t, cl_op op, int n)
{
    CL_TRY(reduce_args(c, "cl_reduce_finish", buf, buf, count, t, op));
    if (n < 1)
        return refuse(c, "cl_reduce_finish over %d ranks: at least 1", n);
    if (op != CL_OP_AVG)
        return 0;
    if (buf && c->payload)
        reduce_divide(buf, count, t, n);
    return reduce_cost(c, count, t);
}

int cl_reduce_finish(cl_comm *c, void *buf, size_t count, cl_dtype t, cl_op op, int n)
{
    const char *outer = call_enter(c, "cl_reduce_finish");
    return call_leave(c, outer, finish_call(c, buf, count, t, op, n));
}

void *cl_alloc(cl_comm *c, size_t bytes)
{
    if (!c->payload)
        return NULL;
    const char *outer = call_enter(c, "cl_alloc");
    void *p = c->ops->alloc(c, bytes);
    if (p && c->world->debug)
        debug_alloc_note(c, p, bytes);
    call_leave(c, outer, 0);
    return p;
}

void *cl_array(cl_comm *c, size_t count, size_t size)
{
    if (size && count > SIZE_MAX / size)
        return NULL;
    const char *outer = call_enter(c, "cl_array");
    void *p = c->ops->alloc(c, count * size);
    call_leave(c, outer, 0);
    return p;
}

void cl_printf(cl_comm *c, const char *fmt, ...)
{
    if (!c->world->printing)
        return;
    double t0 = c->ops->now(c);
    const char *outer = call_enter(c, "cl_printf");
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    /* Each line of the text is a line of this rank's, "rank N: " and all,
     * so no rank can print a line that reads as another's; other control
     * characters (a carriage return over the prefix) print as '?'. */
    for (char *line = text, *next; line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = 0;
        if (next && !*next) /* a final newline ends the last line */
            next = NULL;
        for (char *p = line; *p; p++)
            if ((unsigned char)*p < 0x20 && *p != '\t')
                *p = '?';
        if (c->world->held)
            run_lines_add(c->world->held, line);
        else
            c->ops->print(c, line);
    }
    call_leave(c, outer, 0);
    c->world->printed += c->ops->now(c) - t0;
}

int cl_fail(cl_comm *c, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    c->ops->fail(c, msg);
    return CL_ECHECK;
}

/* xorshift-style byte stream: byte i depends on (seed, i / 8) only, so a
 * chunk of a buffer checks on its own. */
static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static uint64_t fill_word(unsigned long long seed, size_t word)
{
    return mix(seed * 0x9e3779b97f4a7c15ULL + word);
}

void cl_fill(const cl_comm *c, void *buf, size_t bytes, unsigned long long seed)
{
    uint8_t *p = buf;
    if (!p || !c->world->checking)
        return;
    for (size_t i = 0; i < bytes; i += 8) {
        uint64_t w = fill_word(seed, i / 8);
        for (size_t k = 0; k < 8 && i + k < bytes; k++)
            p[i + k] = (uint8_t)(w >> (8 * k));
    }
}

int cl_verify(cl_comm *c, const void *buf, size_t bytes, unsigned long long seed,
              const char *what)
{
    const uint8_t *p = buf;
    if (!p || !c->world->checking)
        return 0;
    for (size_t i = 0; i < bytes; i += 8) {
        uint64_t w = fill_word(seed, i / 8);
        for (size_t k = 0; k < 8 && i + k < bytes; k++) {
            uint8_t want = (uint8_t)(w >> (8 * k));
            if (p[i + k] != want)
                return cl_fail(c, "%s: byte %zu of %zu is 0x%02x, expected 0x%02x%s", what,
                               i + k, bytes, p[i + k], want,
                               debug_verify_hint(c, p + i + k, bytes - i - k));
        }
    }
    return 0;
}
