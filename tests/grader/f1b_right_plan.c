/* exercise: 2.9
 * expect: pass
 * shm: yes
 */
/* Exercise 2.9, right in another style: the stage first writes its
 * schedule down as a list of forwards (+1) and backwards (-1), then walks
 * it, each step's messages derived from its neighbours in the list; the
 * pairs are posted receive first and waited on one by one. */
#include "commlab.h"

static unsigned long long sd(int s, int mb, int grad)
{
    return (grad ? 1000000ULL : 0) + 1000ULL * (unsigned)s + (unsigned)mb;
}

typedef struct io {
    cl_comm *c;
    size_t n;
    unsigned char *b[2]; /* [0] activations, [1] gradients */
} io;

/* Optionally send b[st] (made with seed so) to to, optionally receive
 * b[rt] from from, checked against seed ro. */
static int pair(io *x, int to, int st, unsigned long long so, int from, int rt,
                unsigned long long ro)
{
    cl_request *send = NULL, *recv = NULL;
    if (from >= 0)
        CL_TRY(cl_irecv(x->c, x->b[rt], x->n, from, rt, &recv));
    if (to >= 0) {
        cl_fill(x->c, x->b[st], x->n, so);
        CL_TRY(cl_isend(x->c, x->b[st], x->n, to, st, &send));
    }
    CL_TRY(cl_wait(x->c, &recv, NULL));
    CL_TRY(cl_wait(x->c, &send, NULL));
    return from >= 0 ? cl_verify(x->c, x->b[rt], x->n, ro, "input") : 0;
}

int pattern(cl_comm *c, const cl_args *a)
{
    int s = cl_rank(c), last = cl_size(c) - 1, m = a->microbatches;
    int up = s > 0 ? s - 1 : -1, down = s < last ? s + 1 : -1;
    io x = {c, a->bytes, {cl_alloc(c, a->bytes), cl_alloc(c, a->bytes)}};
    int *plan = cl_array(c, 2 * (size_t)m, sizeof *plan);
    if (!plan)
        return CL_ENOMEM;
    int warm = last - s < m ? last - s : m, n = 0;
    for (int i = 0; i < warm; i++)
        plan[n++] = 1;
    for (int i = 0; i < m - warm; i++) {
        plan[n++] = 1;
        plan[n++] = -1;
    }
    for (int i = 0; i < warm; i++)
        plan[n++] = -1;
    int f = 0, b = 0, held = 0, peak = 0;
    bool have_act = false; /* the next forward's input already arrived */
    for (int k = 0; k < n; k++) {
        if (plan[k] > 0) {
            if (!have_act)
                CL_TRY(pair(&x, -1, 0, 0, up, 0, sd(up, f, 0)));
            have_act = false;
            peak = ++held > peak ? held : peak;
            CL_TRY(cl_compute(c, a->compute));
            bool then_back = k + 1 < n && plan[k + 1] < 0;
            CL_TRY(pair(&x, down, 0, sd(s, f, 0), then_back ? down : -1, 1, sd(down, b, 1)));
            f++;
            /* the steady phase begins: the next forward's input now */
            if (k + 1 < n && plan[k + 1] > 0 && k + 1 == warm && warm < m) {
                CL_TRY(pair(&x, -1, 0, 0, up, 0, sd(up, f, 0)));
                have_act = true;
            }
        } else {
            bool got = k > 0 && plan[k - 1] > 0;
            if (!got)
                CL_TRY(pair(&x, -1, 1, 0, down, 1, sd(down, b, 1)));
            held--;
            CL_TRY(cl_compute(c, a->compute));
            bool then_fwd = k + 1 < n && plan[k + 1] > 0;
            CL_TRY(pair(&x, up, 1, sd(s, b, 1), then_fwd ? up : -1, 0, sd(up, f, 0)));
            have_act = then_fwd;
            b++;
        }
    }
    cl_printf(c, "stage %d kept at most %d activations", s, peak);
    return 0;
}
