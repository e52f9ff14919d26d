/* mpib.c - the mpi transport: cl_* calls as MPI's non-blocking calls,
 * polled by the rank so the watchdog always sees it (see mpib.h). */
#ifdef CL_HAVE_MPI
#include "real/mpi/mpib.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/units.h"
#include "real/mpi/mpib_impl.h"
#include "real/rank.h"

#define BLOCK_SLEEP_NS 100000L /* a blocked rank polls MPI this often: MPI makes
                                  progress only inside its calls */

/* One context of core/comm.h: its three communicators (mpib.h). */
typedef struct mpib_ctx {
    uint32_t ctx;     /* even id of its user traffic */
    MPI_Comm user;    /* the pattern's messages */
    MPI_Comm inner;   /* the barrier's, ctx + 1 */
    MPI_Comm sums;    /* --check's checksums */
    MPI_Group group;  /* user's group, to translate ranks to and from the world's */
    bool owned;       /* made by cl_group (freed here); else the world's */
} mpib_ctx;

/* Messages counted per (peer, context, tag), so that a send's record and its
 * receive's get the same id: MPI matches one source's messages of one tag
 * in the order they were sent and receives in the order they were posted. */
typedef struct mpib_count {
    int peer, tag;
    uint32_t ctx;
    uint64_t out, in; /* sends to peer, receives from peer */
} mpib_count;

typedef struct mpib_req {
    struct cl_request base;  /* first: core/comm reads it */
    struct mpib_req *next;   /* in the rank's list of requests not done */
    MPI_Request data;        /* the message */
    MPI_Request check;       /* --check: its checksum's message (MPI_REQUEST_NULL: none) */
    uint64_t sum;            /* the checksum sent, or received */
    const void *buf;         /* send: source; receive: destination */
    uint64_t bytes;          /* send: size; receive: capacity */
    uint64_t msg_id;         /* pairs the records; 0: given when matched */
    double posted;           /* seconds (rank_now) */
    int32_t peer;            /* world rank; CL_ANY_SOURCE in a receive */
    int32_t tag;             /* as posted (CL_ANY_TAG in a receive) */
    uint32_t ctx;
    mpib_ctx *cx;
    bool data_done;          /* the message moved; the checksum may still be on its way */
} mpib_req;

typedef struct mpib_rank {
    real_rank base;          /* first */
    mpib_ctx *ctxs;          /* contexts: [0] is the world's */
    size_t nctx, ctx_cap;
    mpib_count *counts;
    size_t ncount, count_cap;
    mpib_req *pending;       /* requests not done, in posting order ... */
    mpib_req **tail;         /* ... and where the next one goes */
    MPI_Group world_group;
    bool check;              /* --check: checksums */
    int failed;              /* a fatal error (CL_E*), first one wins */
} mpib_rank;

static mpib_rank *rank_of(const cl_comm *c)
{
    return c->world->backend;
}

static void fatal(mpib_rank *t, int err, const char *what, int mpi_err)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(mpi_err, msg, &len) != MPI_SUCCESS)
        len = 0;
    msg[len] = 0;
    rank_detail(&t->base, "%s: %s", what, len ? msg : "MPI error");
    if (!t->failed)
        t->failed = err;
}

/* ---- contexts ---- */

static mpib_ctx *ctx_find(mpib_rank *t, uint32_t ctx)
{
    for (size_t i = 0; i < t->nctx; i++)
        if (t->ctxs[i].ctx == (ctx & ~1u))
            return &t->ctxs[i];
    return NULL;
}

/* Adds context ctx on user, duplicating it for the barrier and the
 * checksums.  On error nothing is kept (user is the caller's). */
static int ctx_add(mpib_rank *t, uint32_t ctx, MPI_Comm user)
{
    if (t->nctx == t->ctx_cap) {
        size_t cap = t->ctx_cap ? 2 * t->ctx_cap : 4;
        mpib_ctx *v = realloc(t->ctxs, cap * sizeof *v);
        if (!v)
            return CL_ENOMEM;
        t->ctxs = v;
        t->ctx_cap = cap;
    }
    mpib_ctx *cx = &t->ctxs[t->nctx];
    *cx = (mpib_ctx){.ctx = ctx, .user = user, .owned = true};
    int e = MPI_Comm_dup(user, &cx->inner);
    if (e == MPI_SUCCESS && (e = MPI_Comm_dup(user, &cx->sums)) != MPI_SUCCESS)
        MPI_Comm_free(&cx->inner);
    if (e == MPI_SUCCESS)
        MPI_Comm_group(user, &cx->group);
    if (e != MPI_SUCCESS) {
        fatal(t, CL_EIO, "MPI_Comm_dup", e);
        return CL_EIO;
    }
    t->nctx++;
    return 0;
}

static void ctx_free(mpib_ctx *cx)
{
    MPI_Group_free(&cx->group);
    if (!cx->owned)
        return;
    MPI_Comm_free(&cx->user);
    MPI_Comm_free(&cx->inner);
    MPI_Comm_free(&cx->sums);
}

/* World rank w as a rank of cx's communicators, and back. */
static int to_local(mpib_rank *t, const mpib_ctx *cx, int w)
{
    int out = w;
    if (cx != &t->ctxs[0])
        MPI_Group_translate_ranks(t->world_group, 1, &w, cx->group, &out);
    return out;
}

static int to_world(mpib_rank *t, const mpib_ctx *cx, int local)
{
    int out = local;
    if (cx != &t->ctxs[0])
        MPI_Group_translate_ranks(cx->group, 1, &local, t->world_group, &out);
    return out;
}

/* ---- message ids, for the records ---- */

static mpib_count *count_of(mpib_rank *t, int peer, uint32_t ctx, int tag)
{
    for (size_t i = 0; i < t->ncount; i++) {
        mpib_count *k = &t->counts[i];
        if (k->peer == peer && k->ctx == ctx && k->tag == tag)
            return k;
    }
    if (t->ncount == t->count_cap) {
        size_t cap = t->count_cap ? 2 * t->count_cap : 16;
        mpib_count *v = realloc(t->counts, cap * sizeof *v);
        if (!v)
            return NULL;
        t->counts = v;
        t->count_cap = cap;
    }
    mpib_count *k = &t->counts[t->ncount++];
    *k = (mpib_count){.peer = peer, .tag = tag, .ctx = ctx};
    return k;
}

/* The id of the n-th message from src to dst with (ctx, tag): both sides
 * compute the same one. */
static uint64_t msg_id(int src, int dst, uint32_t ctx, int tag, uint64_t n)
{
    return rank_msg_id(src, dst, n * 0x10001u + (uint64_t)(uint32_t)tag * 0x9e37u + ctx);
}

/* ---- completion ---- */

static void push_pending(mpib_rank *t, mpib_req *r)
{
    r->next = NULL;
    *t->tail = r;
    t->tail = &r->next;
}

static void unlink_pending(mpib_rank *t, mpib_req *r)
{
    for (mpib_req **p = &t->pending; *p; p = &(*p)->next)
        if (*p == r) {
            *p = r->next;
            if (t->tail == &r->next)
                t->tail = p;
            return;
        }
}

static void complete(mpib_rank *t, mpib_req *r, int err)
{
    r->base.err = err;
    r->base.done = true;
    unlink_pending(t, r);
    rank_progressed(&t->base);
    if (!t->base.tracing || !rank_user_ctx(r->ctx))
        return; /* the barrier's own messages show as its span */
    double now = rank_now(&t->base);
    if (r->base.is_send) {
        rank_record(&t->base, REC_SEND, r->peer, r->tag, r->bytes, r->msg_id, r->posted,
                    r->posted, now, r->base.blocking);
        return;
    }
    const cl_status *st = &r->base.status;
    if (!r->msg_id && !err) {
        mpib_count *k = count_of(t, st->source, r->ctx, st->tag);
        r->msg_id = k ? msg_id(st->source, t->base.rank, r->ctx, st->tag, ++k->in) : 0;
    }
    rank_record(&t->base, REC_RECV, st->source, st->tag, st->bytes, r->msg_id, r->posted,
                r->posted, now, r->base.blocking);
}

/* --check: receive r's checksum, from its source's rank in r->cx. */
static int post_sum_recv(mpib_rank *t, mpib_req *r, int from, int tag)
{
    int e = MPI_Irecv(&r->sum, 1, MPI_UINT64_T, from, tag, r->cx->sums, &r->check);
    if (e != MPI_SUCCESS)
        fatal(t, CL_EIO, "MPI_Irecv of a checksum", e);
    return e == MPI_SUCCESS ? 0 : CL_EIO;
}

/* The message of receive r arrived with status st.  A wildcard receive's
 * checksum is asked for only now, from the source and tag it matched:
 * right as long as two wildcard receives matching one source and tag
 * complete in the order they matched (the poll looks at them in posting
 * order). */
static int received(mpib_rank *t, mpib_req *r, const MPI_Status *st)
{
    int count = 0;
    MPI_Get_count(st, MPI_BYTE, &count);
    r->base.status.source = to_world(t, r->cx, st->MPI_SOURCE);
    r->base.status.tag = st->MPI_TAG;
    r->base.status.bytes = (size_t)count;
    if (!t->check || !rank_user_ctx(r->ctx) || r->check != MPI_REQUEST_NULL)
        return 0;
    return post_sum_recv(t, r, st->MPI_SOURCE, st->MPI_TAG);
}

/* The words for a receive MPI failed with error e. */
static int recv_error(mpib_rank *t, mpib_req *r, int e)
{
    int cls = 0;
    MPI_Error_class(e, &cls);
    if (cls != MPI_ERR_TRUNCATE) {
        fatal(t, CL_EIO, "a receive failed", e);
        return CL_EIO;
    }
    char b[UNITS_BUF];
    rank_detail(&t->base, "a message from %s%d (tag %d) does not fit the %s receive buffer "
                "of rank %d", r->peer == CL_ANY_SOURCE ? "any rank, matched by rank " : "rank ",
                r->peer == CL_ANY_SOURCE ? -1 : r->peer, r->tag,
                units_size_str(b, r->bytes), t->base.rank);
    return CL_ETRUNC;
}

/* One look at r; true when it completed. */
static bool progress(mpib_rank *t, mpib_req *r)
{
    int flag = 0;
    MPI_Status st;
    if (!r->data_done) {
        int e = MPI_Test(&r->data, &flag, &st);
        if (e != MPI_SUCCESS) {
            int err = r->base.is_send ? CL_EIO : recv_error(t, r, e);
            if (err == CL_EIO && r->base.is_send)
                fatal(t, CL_EIO, "a send failed", e);
            complete(t, r, err);
            return true;
        }
        if (!flag)
            return false;
        r->data_done = true;
        if (!r->base.is_send && received(t, r, &st)) {
            complete(t, r, CL_EIO);
            return true;
        }
    }
    if (r->check != MPI_REQUEST_NULL) {
        if (MPI_Test(&r->check, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS || !flag)
            return false;
        if (!r->base.is_send && r->buf &&
            rank_checksum(r->buf, r->base.status.bytes) != r->sum) {
            char a[UNITS_BUF];
            rank_detail(&t->base, "the %s message from rank %d (tag %d) arrived corrupted "
                        "(checksum mismatch)", units_size_str(a, r->base.status.bytes),
                        r->base.status.source, r->base.status.tag);
            complete(t, r, CL_ECHECK);
            return true;
        }
    }
    complete(t, r, 0);
    return true;
}

/* real_rank.poll: every pending request looked at once. */
static int mpib_poll(real_rank *base)
{
    mpib_rank *t = (mpib_rank *)base;
    mpib__own_process(base->rank, "a wait");
    int stop = atomic_load_explicit(&base->job->stop, memory_order_relaxed);
    if (stop)
        return stop;
    if (t->failed)
        return t->failed;
    int handled = 0;
    for (mpib_req *r = t->pending, *next; r; r = next) {
        next = r->next;
        handled += progress(t, r);
    }
    return t->failed ? t->failed : handled;
}

/* real_rank.block: publish the wait, then let the core go for a moment. */
static void mpib_block(real_rank *base, cl_request **reqs, int n, wf_op call)
{
    rank_publish_stale(base, reqs, n, call);
    struct timespec ts = {0, BLOCK_SLEEP_NS};
    nanosleep(&ts, NULL);
}

static void mpib_describe(const cl_request *req, wf_pending *out)
{
    const mpib_req *r = (const mpib_req *)req;
    *out = (wf_pending){.op = r->base.is_send ? WF_SEND : WF_RECV, .peer = r->peer,
                        .tag = r->tag, .bytes = r->bytes};
}

/* ---- comm_ops ---- */

/* A new request, or an error with nothing changed. */
static int req_new(mpib_rank *t, size_t bytes, uint32_t ctx, mpib_req **out)
{
    mpib__own_process(t->base.rank, "a send or receive");
    if (t->failed)
        return t->failed;
    if (bytes > INT_MAX) {
        char b[UNITS_BUF];
        rank_detail(&t->base, "a %s message: MPI counts bytes in an int (at most 2 GiB - 1)",
                    units_size_str(b, bytes));
        return CL_ERANGE;
    }
    mpib_ctx *cx = ctx_find(t, ctx);
    mpib_req *r = cx ? calloc(1, sizeof *r) : NULL;
    if (!r)
        return cx ? CL_ENOMEM : CL_EINVAL;
    r->data = MPI_REQUEST_NULL;
    r->check = MPI_REQUEST_NULL;
    r->bytes = bytes;
    r->ctx = ctx;
    r->cx = cx;
    r->base.blocking = t->base.comm.blocking_call;
    if (t->base.tracing)
        r->posted = rank_now(&t->base);
    rank_active(&t->base);
    *out = r;
    return 0;
}

static int mpib_isend(cl_comm *c, const void *buf, size_t bytes, int dst, int tag,
                      uint32_t ctx, cl_request **out)
{
    mpib_rank *t = rank_of(c);
    mpib_req *r;
    int err = req_new(t, bytes, ctx, &r);
    if (err)
        return err;
    r->base.is_send = true;
    r->buf = buf;
    r->peer = dst;
    r->tag = tag;
    int to = to_local(t, r->cx, dst);
    MPI_Comm comm = ctx & 1 ? r->cx->inner : r->cx->user;
    int e = MPI_Isend(buf, (int)bytes, MPI_BYTE, to, tag, comm, &r->data);
    if (e == MPI_SUCCESS && t->check && rank_user_ctx(ctx)) {
        r->sum = buf ? rank_checksum(buf, bytes) : 0;
        if ((e = MPI_Isend(&r->sum, 1, MPI_UINT64_T, to, tag, r->cx->sums, &r->check)) !=
            MPI_SUCCESS)
            MPI_Request_free(&r->data); /* the message goes on; the pattern never sees it */
    }
    if (e != MPI_SUCCESS) {
        free(r);
        fatal(t, CL_EIO, "MPI_Isend", e);
        return CL_EIO;
    }
    if (rank_user_ctx(ctx)) {
        t->base.messages++;
        mpib_count *k = t->base.tracing ? count_of(t, dst, ctx, tag) : NULL;
        if (k)
            r->msg_id = msg_id(t->base.rank, dst, ctx, tag, ++k->out);
    }
    push_pending(t, r);
    *out = &r->base;
    return 0;
}

static int mpib_irecv(cl_comm *c, void *buf, size_t bytes, int src, int tag, uint32_t ctx,
                      cl_request **out)
{
    mpib_rank *t = rank_of(c);
    mpib_req *r;
    int err = req_new(t, bytes, ctx, &r);
    if (err)
        return err;
    r->buf = buf;
    r->peer = src;
    r->tag = tag;
    int from = src == CL_ANY_SOURCE ? MPI_ANY_SOURCE : to_local(t, r->cx, src);
    MPI_Comm comm = ctx & 1 ? r->cx->inner : r->cx->user;
    int e = MPI_Irecv(buf, (int)bytes, MPI_BYTE, from, tag == CL_ANY_TAG ? MPI_ANY_TAG : tag,
                      comm, &r->data);
    if (e != MPI_SUCCESS) {
        free(r);
        fatal(t, CL_EIO, "MPI_Irecv", e);
        return CL_EIO;
    }
    /* --check: a receive that names its source and tag takes its checksum in
     * the same order as its message. */
    if (t->check && rank_user_ctx(ctx) && src != CL_ANY_SOURCE && tag != CL_ANY_TAG &&
        post_sum_recv(t, r, from, tag)) {
        MPI_Cancel(&r->data);
        MPI_Request_free(&r->data);
        free(r);
        return CL_EIO;
    }
    /* A receive that names its source and tag is matched in posting order. */
    if (t->base.tracing && rank_user_ctx(ctx) && src != CL_ANY_SOURCE && tag != CL_ANY_TAG) {
        mpib_count *k = count_of(t, src, ctx, tag);
        if (k)
            r->msg_id = msg_id(src, t->base.rank, ctx, tag, ++k->in);
    }
    push_pending(t, r);
    *out = &r->base;
    return 0;
}

static void mpib_release(cl_comm *c, cl_request *req)
{
    (void)c;
    free(req);
}

/* cl_group: MPI_Comm_split of the parent's communicator, collective over
 * it like cl_group itself. */
static int mpib_group(cl_comm *c, uint32_t ctx, int me)
{
    mpib_rank *t = rank_of(c);
    mpib__own_process(t->base.rank, "cl_group");
    mpib_ctx *parent = ctx_find(t, c->ctx);
    if (!parent)
        return CL_EINVAL;
    MPI_Comm nc;
    int e = MPI_Comm_split(parent->user, me >= 0 ? 0 : MPI_UNDEFINED, me, &nc);
    if (e != MPI_SUCCESS) {
        fatal(t, CL_EIO, "MPI_Comm_split", e);
        return CL_EIO;
    }
    if (me < 0)
        return 0;
    int err = ctx_add(t, ctx, nc);
    if (err)
        MPI_Comm_free(&nc);
    return err;
}

static void mpib_group_free(cl_comm *c, uint32_t ctx)
{
    mpib_rank *t = rank_of(c);
    mpib_ctx *cx = ctx_find(t, ctx);
    if (!cx || !cx->owned)
        return;
    ctx_free(cx);
    *cx = t->ctxs[--t->nctx];
}

static const comm_ops mpib_ops = {
    .isend = mpib_isend, .irecv = mpib_irecv, .wait = rank_op_wait, .test = rank_op_test,
    .release = mpib_release, .compute = rank_op_compute, .now = rank_op_now,
    .wait_until = rank_op_wait_until, .alloc = rank_op_alloc, .print = rank_op_print, .fail = rank_op_fail,
    .misuse = rank_op_misuse, .span = rank_op_span, .group = mpib_group,
    .group_free = mpib_group_free,
};

MPI_Comm mpib__comm(const cl_comm *c)
{
    if (c->ops != &mpib_ops)
        return MPI_COMM_NULL;
    mpib_ctx *cx = ctx_find(rank_of(c), c->ctx);
    return cx ? cx->user : MPI_COMM_NULL;
}

/* ---- the transport ---- */

static void mpib_rank_close(real_rank *base);

static int mpib_rank_open(real_rank **out, const job *j, int rank, const real_opts *o,
                          cl_diag *d)
{
    int err = mpib_init(rank, j->nranks, d);
    if (err)
        return err;
    mpib_rank *t = calloc(1, sizeof *t);
    if (!t)
        return diag_set(d, CL_ENOMEM, "rank %d: out of memory", rank);
    rank_init(&t->base, &mpib_ops, j, rank, o->job.check);
    t->base.poll = mpib_poll;
    t->base.block = mpib_block;
    t->base.describe = mpib_describe;
    t->check = o->job.check;
    t->tail = &t->pending;
    t->world_group = MPI_GROUP_NULL;
    /* The world's context: the communicators MPI was started with. */
    if (!(t->ctxs = calloc(4, sizeof *t->ctxs))) {
        mpib_rank_close(&t->base);
        return diag_set(d, CL_ENOMEM, "rank %d: out of memory", rank);
    }
    t->ctx_cap = 4;
    t->nctx = 1;
    t->ctxs[0] = (mpib_ctx){.ctx = 0};
    mpib__world(&t->ctxs[0].user, &t->ctxs[0].inner, &t->ctxs[0].sums);
    MPI_Comm_group(t->ctxs[0].user, &t->ctxs[0].group);
    MPI_Comm_group(MPI_COMM_WORLD, &t->world_group);
    *out = &t->base;
    return 0;
}

/* What a failed run left posted: receives are cancelled, sends let go. */
static void drop_pending(mpib_rank *t)
{
    while (t->pending) {
        mpib_req *r = t->pending;
        t->pending = r->next;
        MPI_Request *q[2] = {&r->data, &r->check};
        for (int i = 0; i < 2; i++) {
            if (*q[i] == MPI_REQUEST_NULL)
                continue;
            if (!r->base.is_send)
                MPI_Cancel(q[i]);
            MPI_Request_free(q[i]);
        }
    }
}

static void mpib_rank_close(real_rank *base)
{
    mpib_rank *t = (mpib_rank *)base;
    mpib__own_process(base->rank, "the end of the run");
    bool clean = !t->failed && !t->pending &&
                 atomic_load_explicit(&base->slot->state, memory_order_acquire) == JOB_DONE;
    if (!clean)
        mpib__run_failed();
    drop_pending(t);
    for (size_t i = 0; i < t->nctx; i++)
        ctx_free(&t->ctxs[i]);
    if (t->world_group != MPI_GROUP_NULL)
        MPI_Group_free(&t->world_group);
    free(t->ctxs);
    free(t->counts);
    rank_release(&t->base);
    free(t);
}

const real_transport mpi_transport = {
    .name = "mpi",
    .in_process = true,
    .rank_open = mpib_rank_open,
    .rank_close = mpib_rank_close,
};
#endif
