/* exercise: 2.9
 * expect: fail
 * why: in the task's schedule
 */
/* Exercise 2.9, done wrong on purpose: no warm-up - every stage alternates
 * one forward and one backward from the first microbatch, so a stage waits
 * for each gradient to come all the way back before its next forward. */
#include "commlab.h"

enum { ACT, GRAD };

typedef struct stage {
    cl_comm *c;
    const cl_args *a;
    int s, last;
    unsigned char *act, *grad; /* the two message buffers */
    int held, peak;            /* activations kept: now, at most */
} stage;

static unsigned long long seed(int s, int mb, int tag)
{
    return 1000000ULL * (unsigned long long)tag + 1000ULL * (unsigned long long)s +
           (unsigned long long)mb;
}

static unsigned char *buf(stage *st, int tag)
{
    return tag == ACT ? st->act : st->grad;
}

/* Sends microbatch mb's output of this stage to dst (none: -1) and
 * receives microbatch rmb's input from src (none: -1), both at once. */
static int exchange(stage *st, int dst, int tag, int mb, int src, int rtag, int rmb)
{
    size_t n = st->a->bytes;
    cl_request *r[2] = {NULL, NULL};
    if (dst >= 0) {
        cl_fill(st->c, buf(st, tag), n, seed(st->s, mb, tag));
        CL_TRY(cl_isend(st->c, buf(st, tag), n, dst, tag, &r[0]));
    }
    if (src >= 0)
        CL_TRY(cl_irecv(st->c, buf(st, rtag), n, src, rtag, &r[1]));
    CL_TRY(cl_waitall(st->c, 2, r, NULL));
    if (src < 0)
        return 0;
    return cl_verify(st->c, buf(st, rtag), n, seed(src, rmb, rtag),
                     rtag == ACT ? "activation" : "gradient");
}

static int compute(stage *st, int delta)
{
    st->held += delta;
    if (st->held > st->peak)
        st->peak = st->held;
    return cl_compute(st->c, st->a->compute);
}

int pattern(cl_comm *c, const cl_args *a)
{
    stage st = {.c = c, .a = a, .s = cl_rank(c), .last = cl_size(c) - 1,
                .act = cl_alloc(c, a->bytes), .grad = cl_alloc(c, a->bytes)};
    int m = a->microbatches, prev = st.s - 1, next = st.s < st.last ? st.s + 1 : -1;
    int warm = 0, steady = m;
    for (int mb = 0; mb < warm; mb++) {
        CL_TRY(exchange(&st, -1, ACT, 0, prev, ACT, mb));
        CL_TRY(compute(&st, 1));
        CL_TRY(exchange(&st, next, ACT, mb, -1, ACT, 0));
    }
    if (steady > 0)
        CL_TRY(exchange(&st, -1, ACT, 0, prev, ACT, warm));
    for (int i = 0; i < steady; i++) {
        int fwd = warm + i;
        CL_TRY(compute(&st, 1));
        CL_TRY(exchange(&st, next, ACT, fwd, next, GRAD, i));
        CL_TRY(compute(&st, -1));
        CL_TRY(exchange(&st, prev, GRAD, i, i + 1 < steady ? prev : -1, ACT, fwd + 1));
    }
    for (int mb = steady; mb < m; mb++) {
        CL_TRY(exchange(&st, -1, GRAD, 0, next, GRAD, mb));
        CL_TRY(compute(&st, -1));
        CL_TRY(exchange(&st, prev, GRAD, mb, -1, GRAD, 0));
    }
    cl_printf(c, "stage %d kept at most %d activations", st.s, st.peak);
    return 0;
}
