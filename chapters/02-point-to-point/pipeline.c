/* pipeline: each rank is one stage of a model cut into S = size stages.
 * M microbatches (--microbatches) go forward (activations, tag 0) and
 * backward (gradients, tag 1); each stage computes --compute seconds per
 * microbatch in each direction.  Two orders of the same work (--schedule):
 *
 *   gpipe  every forward, then every backward (GPipe, Huang et al. 2019).
 *          A stage keeps the activations of a microbatch from its forward
 *          to its backward, so every stage holds all M at once.
 *   1f1b   stage s runs S - s - 1 forwards to fill the pipe, then one
 *          forward and one backward in turn, then the backwards left
 *          (PipeDream-Flush, Narayanan et al. 2021, as Megatron-LM runs
 *          it): stage s holds at most S - s microbatches' activations.
 *
 * With equal stage times and negligible messages both idle a stage for
 * (S - 1) of the (M + S - 1) slots of each direction: the bubble.  1F1B's
 * gain is memory, not time.  In its steady phase a stage sends and
 * receives at once (Megatron-LM's send_forward_recv_backward): two
 * blocking sends there would meet head to head and deadlock above the
 * eager limit.  With --compute, stage 0 prints its share of the iteration
 * and every stage the most activations it held. */
#include <string.h>

#include "commlab.h"

#define TAG_ACT 0
#define TAG_GRAD 1

/* One stage's state: where it is in the model, its two message buffers,
 * and the activations it keeps for the backwards still to come. */
typedef struct stage {
    cl_comm *c;
    const cl_args *a;
    int s, last;         /* this stage, the last stage (S - 1) */
    unsigned char *act;  /* activations: in from s - 1, out to s + 1 */
    unsigned char *grad; /* gradients: in from s + 1, out to s - 1 */
    int held, peak;      /* microbatches whose activations are kept: now, at most */
} stage;

static unsigned long long seed(int stage, int mb, int tag)
{
    return 1000000ULL * (unsigned long long)tag + 1000ULL * (unsigned long long)stage +
           (unsigned long long)mb;
}

/* Receives microbatch mb's input from src (tag: which way), checks it. */
static int recv_in(stage *st, int src, int tag, int mb)
{
    unsigned char *in = tag == TAG_ACT ? st->act : st->grad;
    if (src < 0)
        return 0;
    CL_TRY(cl_recv(st->c, in, st->a->bytes, src, tag, NULL));
    return cl_verify(st->c, in, st->a->bytes, seed(src, mb, tag),
                     tag == TAG_ACT ? "activation" : "gradient");
}

/* Sends what this stage made of microbatch mb to dst (tag: which way). */
static int send_out(stage *st, int dst, int tag, int mb)
{
    unsigned char *out = tag == TAG_ACT ? st->act : st->grad;
    if (dst < 0)
        return 0;
    cl_fill(st->c, out, st->a->bytes, seed(st->s, mb, tag));
    return cl_send(st->c, out, st->a->bytes, dst, tag);
}

/* send_out and recv_in at once, on the two buffers: the send of one
 * direction is posted with the receive of the other. */
static int send_recv(stage *st, int dst, int stag, int smb, int src, int rtag, int rmb)
{
    size_t n = st->a->bytes;
    unsigned char *out = stag == TAG_ACT ? st->act : st->grad;
    unsigned char *in = rtag == TAG_ACT ? st->act : st->grad;
    cl_request *r[2] = {NULL, NULL};
    if (dst >= 0) {
        cl_fill(st->c, out, n, seed(st->s, smb, stag));
        CL_TRY(cl_isend(st->c, out, n, dst, stag, &r[0]));
    }
    if (src >= 0)
        CL_TRY(cl_irecv(st->c, in, n, src, rtag, &r[1]));
    CL_TRY(cl_waitall(st->c, 2, r, NULL));
    if (src < 0)
        return 0;
    return cl_verify(st->c, in, n, seed(src, rmb, rtag),
                     rtag == TAG_ACT ? "activation" : "gradient");
}

static int prev(const stage *st)
{
    return st->s > 0 ? st->s - 1 : -1;
}

static int next(const stage *st)
{
    return st->s < st->last ? st->s + 1 : -1;
}

static int forward(stage *st)
{
    if (++st->held > st->peak)
        st->peak = st->held;
    return cl_compute(st->c, st->a->compute);
}

static int backward(stage *st)
{
    st->held--;
    return cl_compute(st->c, st->a->compute);
}

/* All M forwards, then all M backwards; blocking one way at a time. */
static int gpipe(stage *st, int m)
{
    for (int mb = 0; mb < m; mb++) {
        CL_TRY(recv_in(st, prev(st), TAG_ACT, mb));
        CL_TRY(forward(st));
        CL_TRY(send_out(st, next(st), TAG_ACT, mb));
    }
    for (int mb = 0; mb < m; mb++) {
        CL_TRY(recv_in(st, next(st), TAG_GRAD, mb));
        CL_TRY(backward(st));
        CL_TRY(send_out(st, prev(st), TAG_GRAD, mb));
    }
    return 0;
}

/* Warm-up forwards, then forward and backward in turn, then cool-down
 * backwards.  Each send of the steady phase is posted with the receive
 * that follows it. */
static int one_f_one_b(stage *st, int m)
{
    int warm = st->last - st->s < m ? st->last - st->s : m, steady = m - warm;
    for (int mb = 0; mb < warm; mb++) {
        CL_TRY(recv_in(st, prev(st), TAG_ACT, mb));
        CL_TRY(forward(st));
        CL_TRY(send_out(st, next(st), TAG_ACT, mb));
    }
    if (steady > 0)
        CL_TRY(recv_in(st, prev(st), TAG_ACT, warm));
    for (int i = 0; i < steady; i++) {
        int fwd = warm + i; /* the forward of this round; its backward is i's */
        CL_TRY(forward(st));
        CL_TRY(send_recv(st, next(st), TAG_ACT, fwd, next(st), TAG_GRAD, i));
        CL_TRY(backward(st));
        bool more = i + 1 < steady;
        CL_TRY(send_recv(st, prev(st), TAG_GRAD, i, more ? prev(st) : -1, TAG_ACT, fwd + 1));
    }
    for (int mb = steady; mb < m; mb++) {
        CL_TRY(recv_in(st, next(st), TAG_GRAD, mb));
        CL_TRY(backward(st));
        CL_TRY(send_out(st, prev(st), TAG_GRAD, mb));
    }
    return 0;
}

int pipeline(cl_comm *c, const cl_args *a)
{
    const char *sched = a->schedule ? a->schedule : "gpipe";
    bool f1b = strcmp(sched, "1f1b") == 0;
    if (!f1b && strcmp(sched, "gpipe") != 0)
        return CL_EINVAL; /* the CLI refuses other names first */
    int m = a->microbatches > 0 ? a->microbatches : 1;
    stage st = {.c = c, .a = a, .s = cl_rank(c), .last = cl_size(c) - 1,
                .act = cl_alloc(c, a->bytes), .grad = cl_alloc(c, a->bytes)};
    double t0 = cl_now(c);
    CL_TRY(f1b ? one_f_one_b(&st, m) : gpipe(&st, m));
    if (a->compute <= 0)
        return 0;
    /* Stage 0 finishes last (the last gradient ends there), so its clock
     * spans the iteration; it computed 2 M slots of it, the rest is bubble. */
    double busy = 2.0 * m * a->compute, span = cl_now(c) - t0;
    if (st.s == 0 && span > 0)
        cl_printf(c, "%d stages, %d microbatches, %s: busy %.4g ms of %.4g ms, bubble %.2f%%",
                  st.last + 1, m, sched, busy * 1e3, span * 1e3, 100.0 * (1.0 - busy / span));
    cl_printf(c, "stage %d kept the activations of at most %d microbatch%s", st.s, st.peak,
              st.peak == 1 ? "" : "es");
    return 0;
}
