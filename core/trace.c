/* trace.c - records to Trace Event Format JSON (see trace.h for the layout).
 *
 * Why lanes of thread tracks and not async ("b"/"e") events for overlapping
 * requests: Perfetto puts async slices on process-level tracks, away from
 * the rank they belong to, and binds flow arrows only to slices on thread
 * tracks.  Extra threads keep every request under its rank (sorted by tid),
 * keep the send -> receive arrows, and read the same in chrome://tracing.
 *
 * Flow binding.  Perfetto binds an "s" or "f" to the innermost slice open on
 * its track when the event is processed, in timestamp order with ties kept
 * in file order.  So events are written sorted by (ts, class, ...): an "f"
 * comes before the slices that begin at the same instant (the receive is
 * still the open slice), an "s" sorts as if it were a slice of its own send
 * and lands right after the send's innermost slice.  A zero-length receive
 * opens at its own finish, so its "f" is placed the same way.
 */
#include "core/trace.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "commlab.h"
#include "core/file.h"
#include "core/json.h"

/* What an emitted event is; also its class in the sort at equal ts. */
enum { CLS_FLOW_END = 0, CLS_POST = 1, CLS_SPAN = 2 };
enum { SUB_SPAN = 0, SUB_CHILD = 1, SUB_FLOW = 2, SUB_POST = 3 };

typedef struct unit { /* one record's span, for lane assignment */
    int64_t start, end; /* ns from origin */
    size_t rec;         /* index into recs */
    int32_t rank;
    uint8_t main;       /* may go on lane 0 */
} unit;

typedef struct ev { /* one event to write */
    int64_t ts, dur; /* ns */
    int64_t tid;
    size_t rec;
    uint8_t cls, sub;
} ev;

typedef struct lane_slot { int64_t end; uint32_t lane; } lane_slot;

typedef struct msg_ref { uint64_t msg; size_t rec; uint8_t recv; } msg_ref;

static bool is_p2p(const cl_record *r) { return r->op == REC_SEND || r->op == REC_RECV; }
static bool on_main(const cl_record *r) { return !is_p2p(r) || r->blocking; }

/* Seconds to whole ns from origin; false when out of range. */
static bool to_ns(double t, double origin, int64_t *out)
{
    double ns = (t - origin) * 1e9;
    if (!isfinite(ns) || fabs(ns) > 9e18)
        return false;
    *out = llround(ns);
    return true;
}

/* Record times in ns; started clamped into [posted, finished]. */
static bool rec_ns(const cl_record *r, double origin, int64_t t[3])
{
    if (!to_ns(r->posted, origin, &t[0]) || !to_ns(r->started, origin, &t[1]) ||
        !to_ns(r->finished, origin, &t[2]) || t[2] < t[0])
        return false;
    if (t[1] < t[0])
        t[1] = t[0];
    if (t[1] > t[2])
        t[1] = t[2];
    return true;
}

#define CMP(a, b)                  \
    do {                           \
        if ((a) != (b))            \
            return (a) < (b) ? -1 : 1; \
    } while (0)

static int cmp_unit(const void *pa, const void *pb)
{
    const unit *a = pa, *b = pb;
    CMP(a->rank, b->rank);
    CMP(a->start, b->start);
    CMP(b->end, a->end); /* longer first: parents before children */
    CMP(b->main, a->main);
    CMP(a->rec, b->rec);
    return 0;
}

static int cmp_ev(const void *pa, const void *pb)
{
    const ev *a = pa, *b = pb;
    CMP(a->ts, b->ts);
    CMP(a->cls, b->cls);
    CMP(b->dur, a->dur);
    CMP(a->tid, b->tid);
    CMP(a->rec, b->rec);
    CMP(a->sub, b->sub);
    return 0;
}

static int cmp_msg(const void *pa, const void *pb)
{
    const msg_ref *a = pa, *b = pb;
    CMP(a->msg, b->msg);
    CMP(a->recv, b->recv);
    CMP(a->rec, b->rec);
    return 0;
}

/* A binary min-heap of lane_slot by (end, lane). */
static bool slot_less(lane_slot a, lane_slot b)
{
    return a.end < b.end || (a.end == b.end && a.lane < b.lane);
}

static void heap_push(lane_slot *h, size_t *n, lane_slot s)
{
    size_t i = (*n)++;
    while (i > 0 && slot_less(s, h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = s;
}

static lane_slot heap_pop(lane_slot *h, size_t *n)
{
    lane_slot top = h[0], last = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && slot_less(h[c + 1], h[c]))
            c++;
        if (!slot_less(h[c], last))
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n)
        h[i] = last;
    return top;
}

/* Greedy interval partitioning, per rank in start order.  Lane 0 takes a
 * main-track span when it nests in or follows what is open there (a stack
 * of ends); everything else takes the lowest free async lane (a heap of
 * busy lanes by end, a heap of free lanes by number): O(n log n). */
static void assign_lanes(unit *u, size_t n, uint32_t *lane_of, uint32_t *lanes,
                         int64_t *stack, lane_slot *busy, lane_slot *freel)
{
    size_t i = 0;
    while (i < n) {
        int32_t rank = u[i].rank;
        size_t depth = 0, nbusy = 0, nfree = 0;
        uint32_t used = 1;
        for (; i < n && u[i].rank == rank; i++) {
            const unit *x = &u[i];
            if (x->main) {
                while (depth > 0 && stack[depth - 1] <= x->start)
                    depth--;
                if (depth == 0 || stack[depth - 1] >= x->end) {
                    stack[depth++] = x->end;
                    lane_of[x->rec] = 0;
                    continue;
                }
            }
            while (nbusy > 0 && busy[0].end <= x->start) {
                lane_slot s = heap_pop(busy, &nbusy);
                s.end = s.lane;
                heap_push(freel, &nfree, s);
            }
            uint32_t lane = nfree ? heap_pop(freel, &nfree).lane : used++;
            heap_push(busy, &nbusy, (lane_slot){x->end, lane});
            lane_of[x->rec] = lane;
        }
        lanes[rank] = used;
    }
}

/* ---- writing ---- */

typedef struct writer {
    FILE *f;
    json_writer w;
    bool first; /* no event written yet */
} writer;

/* One event per line: easy to grep and diff, still one JSON document. */
static void ev_begin(writer *o, const char *ph, const char *name, const char *cat)
{
    if (!o->first)
        fputc(',', o->f);
    o->first = false;
    json_init(&o->w, o->f, false);
    json_begin_object(&o->w);
    json_kv_string(&o->w, "ph", ph);
    json_kv_string(&o->w, "name", name);
    if (cat)
        json_kv_string(&o->w, "cat", cat);
    json_kv_uint(&o->w, "pid", 0);
}

static void kv_int(json_writer *w, const char *key, long long v)
{
    json_key(w, key);
    json_int(w, v);
}

static void kv_us(json_writer *w, const char *key, int64_t ns)
{
    json_kv_number(w, key, (double)ns / 1000.0);
}

static void write_meta(writer *o, const char *what, int64_t tid, const char *key,
                       const char *s, long long v)
{
    ev_begin(o, "M", what, NULL);
    kv_int(&o->w, "tid", tid);
    json_key(&o->w, "args");
    json_begin_object(&o->w);
    if (s)
        json_kv_string(&o->w, key, s);
    else
        kv_int(&o->w, key, v);
    json_finish(&o->w);
}

static const char *cat_of(const cl_record *r)
{
    switch (r->op) {
    case REC_COMPUTE:
        return "compute";
    case REC_BARRIER:
        return "sync";
    case REC_ITER:
        return "iter";
    }
    return "p2p";
}

static void write_args(json_writer *w, const cl_record *r)
{
    json_key(w, "args");
    json_begin_object(w);
    /* A wait on several requests (waitall) has no single peer. */
    if (is_p2p(r) || (r->op == REC_WAIT && r->peer >= 0)) {
        kv_int(w, "peer", r->peer);
        kv_int(w, "tag", r->tag);
        json_kv_uint(w, "bytes", r->bytes);
        if (r->msg)
            json_kv_uint(w, "msg", r->msg);
    }
    kv_int(w, "iter", r->iter);
    json_end_object(w);
}

/* Flow ids are JSON numbers while a double holds them exactly (JavaScript
 * viewers), hex strings beyond; Perfetto reads string ids as hex. */
static void write_id(json_writer *w, uint64_t id)
{
    if (id <= (UINT64_C(1) << 53)) {
        json_kv_uint(w, "id", id);
    } else {
        char buf[24];
        snprintf(buf, sizeof buf, "0x%" PRIx64, id);
        json_kv_string(w, "id", buf);
    }
}

static void write_ev(writer *o, const ev *e, const cl_record *recs)
{
    const cl_record *r = &recs[e->rec];
    const char *name = rec_op_name(r->op, r->blocking);
    if (r->op == REC_ITER && r->iter < 0)
        name = "warm-up";
    switch (e->sub) {
    case SUB_SPAN:
    case SUB_CHILD:
        ev_begin(o, "X", e->sub == SUB_CHILD ? "transfer" : name, cat_of(r));
        break;
    case SUB_POST:
        ev_begin(o, "i", name, cat_of(r));
        json_kv_string(&o->w, "s", "t");
        break;
    default:
        ev_begin(o, r->op == REC_SEND ? "s" : "f", "msg", "flow");
        write_id(&o->w, r->msg);
        if (r->op == REC_RECV)
            json_kv_string(&o->w, "bp", "e");
    }
    kv_int(&o->w, "tid", e->tid);
    kv_us(&o->w, "ts", e->ts);
    if (e->sub == SUB_SPAN || e->sub == SUB_CHILD)
        kv_us(&o->w, "dur", e->dur);
    if (e->sub != SUB_FLOW)
        write_args(&o->w, r);
    json_finish(&o->w);
}

static int validate(const cl_record *recs, size_t n, const trace_meta *m)
{
    if (!m || !m->pattern || !m->backend || m->ranks < 1 || !isfinite(m->origin) ||
        m->kinds < 0 || (m->kinds > 0 && m->ranks % m->kinds != 0))
        return CL_EINVAL;
    for (size_t i = 0; i < n; i++) {
        int64_t t[3];
        if (recs[i].rank < 0 || recs[i].rank >= m->ranks || recs[i].op >= REC_OP_COUNT ||
            !rec_ns(&recs[i], m->origin, t))
            return CL_EINVAL;
    }
    return 0;
}

/* A flow per msg id with a send and a receive (the first of each) added
 * to evs after its ne events; returns the new count.  msgs is sorted. */
static size_t add_flows(const cl_record *recs, double origin, msg_ref *msgs, size_t nm,
                        const uint32_t *lane_of, int64_t stride, ev *evs, size_t ne)
{
    qsort(msgs, nm, sizeof *msgs, cmp_msg);
    for (size_t i = 0; i < nm;) {
        size_t j = i;
        while (j < nm && msgs[j].msg == msgs[i].msg)
            j++;
        size_t k = i;
        while (k < j && !msgs[k].recv)
            k++;
        if (k > i && k < j) {
            size_t s = msgs[i].rec, d = msgs[k].rec;
            int64_t ts[3], td[3];
            rec_ns(&recs[s], origin, ts);
            rec_ns(&recs[d], origin, td);
            int64_t stid = (int64_t)recs[s].rank * stride + lane_of[s];
            int64_t dtid = (int64_t)recs[d].rank * stride + lane_of[d];
            /* The send's innermost slice at its start: the transfer, or the
             * span itself when the data moved at once. */
            int64_t sdur = ts[1] > ts[0] ? ts[2] - ts[1] : ts[2] - ts[0];
            evs[ne++] = (ev){ts[1], sdur, stid, s, CLS_SPAN, SUB_FLOW};
            if (td[2] > td[0])
                evs[ne++] = (ev){td[2], 0, dtid, d, CLS_FLOW_END, SUB_FLOW};
            else
                evs[ne++] = (ev){td[2], 0, dtid, d, CLS_SPAN, SUB_FLOW};
        }
        i = j;
    }
    return ne;
}

/* Track r's name: "rank r", or with kinds its rank and kind. */
static void track_name(const trace_meta *meta, int r, char *out, size_t len)
{
    if (meta->kinds <= 0) {
        snprintf(out, len, "rank %d", r);
        return;
    }
    const char *kind = meta->kind_names ? meta->kind_names[r % meta->kinds] : NULL;
    snprintf(out, len, "rank %d%s%s", r / meta->kinds, kind ? " " : "", kind ? kind : "");
}

/* The file's head: its metadata, then the process's and every lane's
 * name and order. */
static void write_head(writer *o, const trace_meta *meta, const uint32_t *lanes, int64_t stride)
{
    FILE *f = o->f;
    json_init(&o->w, f, false);
    json_begin_object(&o->w);
    json_kv_string(&o->w, "displayTimeUnit", "ns");
    json_key(&o->w, "otherData");
    json_begin_object(&o->w);
    json_kv_string(&o->w, "pattern", meta->pattern);
    json_kv_string(&o->w, "backend", meta->backend);
    kv_int(&o->w, "ranks", meta->kinds > 0 ? meta->ranks / meta->kinds : meta->ranks);
    json_end_object(&o->w);
    json_key(&o->w, "traceEvents");
    fputs("[\n", f); /* events are written one per line by ev_begin */

    char name[96];
    snprintf(name, sizeof name, "commlab %s (%s)", meta->pattern, meta->backend);
    write_meta(o, "process_name", 0, "name", name, 0);
    for (int r = 0; r < meta->ranks; r++) {
        char track[64];
        track_name(meta, r, track, sizeof track);
        for (uint32_t l = 0; l < lanes[r]; l++) {
            int64_t tid = (int64_t)r * stride + l;
            if (l == 0)
                snprintf(name, sizeof name, "%s", track);
            else
                snprintf(name, sizeof name, "%s (async %" PRIu32 ")", track, l);
            write_meta(o, "thread_name", tid, "name", name, 0);
            write_meta(o, "thread_sort_index", tid, "sort_index", NULL, tid);
        }
    }
}

int trace_write(FILE *f, const cl_record *recs, size_t n, const trace_meta *meta)
{
    int rc = validate(recs, n, meta);
    if (rc)
        return rc;
    size_t m = n ? n : 1;
    unit *u = calloc(m, sizeof *u);
    uint32_t *lane_of = calloc(m, sizeof *lane_of);
    uint32_t *lanes = calloc((size_t)meta->ranks, sizeof *lanes);
    int64_t *stack = calloc(m, sizeof *stack);
    lane_slot *busy = calloc(m, sizeof *busy), *freel = calloc(m, sizeof *freel);
    msg_ref *msgs = calloc(m, sizeof *msgs);
    ev *evs = m <= SIZE_MAX / 4 / sizeof *evs ? calloc(4 * m, sizeof *evs) : NULL;
    if (!u || !lane_of || !lanes || !stack || !busy || !freel || !msgs || !evs) {
        rc = CL_ENOMEM;
        goto out;
    }

    for (size_t i = 0; i < n; i++) {
        int64_t t[3];
        rec_ns(&recs[i], meta->origin, t);
        u[i] = (unit){t[0], t[2], i, recs[i].rank, on_main(&recs[i])};
    }
    qsort(u, n, sizeof *u, cmp_unit);
    for (int r = 0; r < meta->ranks; r++)
        lanes[r] = 1;
    assign_lanes(u, n, lane_of, lanes, stack, busy, freel);
    int64_t stride = TRACE_LANE_STRIDE;
    for (int r = 0; r < meta->ranks; r++)
        if (lanes[r] > stride)
            stride = lanes[r];

    size_t ne = 0, nm = 0;
    for (size_t i = 0; i < n; i++) {
        const cl_record *r = &recs[i];
        int64_t t[3];
        rec_ns(r, meta->origin, t);
        int64_t tid = (int64_t)r->rank * stride + lane_of[i];
        evs[ne++] = (ev){t[0], t[2] - t[0], tid, i, CLS_SPAN, SUB_SPAN};
        if (is_p2p(r) && t[1] > t[0])
            evs[ne++] = (ev){t[1], t[2] - t[1], tid, i, CLS_SPAN, SUB_CHILD};
        if (!on_main(r))
            evs[ne++] = (ev){t[0], 0, (int64_t)r->rank * stride, i, CLS_POST, SUB_POST};
        if (is_p2p(r) && r->msg)
            msgs[nm++] = (msg_ref){r->msg, i, r->op == REC_RECV};
    }

    ne = add_flows(recs, meta->origin, msgs, nm, lane_of, stride, evs, ne);
    qsort(evs, ne, sizeof *evs, cmp_ev);

    writer o = {.f = f, .first = true};
    write_head(&o, meta, lanes, stride);
    for (size_t i = 0; i < ne; i++)
        write_ev(&o, &evs[i], recs);
    fputs("]}\n", f);
    if (fflush(f) != 0 || ferror(f))
        rc = CL_EIO;
out:
    free(u);
    free(lane_of);
    free(lanes);
    free(stack);
    free(busy);
    free(freel);
    free(msgs);
    free(evs);
    return rc;
}

int trace_write_file(const char *path, const cl_record *recs, size_t n,
                     const trace_meta *meta, cl_diag *d)
{
    file_out o;
    int rc = file_out_open(&o, path, "trace", d);
    if (rc)
        return rc;
    rc = trace_write(o.f, recs, n, meta);
    if (rc == 0 || rc == CL_EIO)
        return file_out_commit(&o, "trace", d); /* a write error is found again there */
    file_out_abort(&o);
    return diag_set(d, rc, "cannot write trace '%s': %s", path, cl_strerror(rc));
}
