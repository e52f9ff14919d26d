/* pipeline: each rank is one stage of a model cut into size stages; M
 * microbatches flow forward (activations, tag 0) and then backward
 * (gradients, tag 1), GPipe style: all forwards, then all backwards.  Each
 * stage computes --compute seconds per microbatch in each direction.
 * With negligible communication a stage idles for (S - 1) of the
 * (M + S - 1) slots of each phase: the bubble.  With --compute, stage 0
 * prints its share of the iteration. */
#include "commlab.h"

static unsigned long long seed(int stage, int mb, int dir)
{
    return 1000000ULL * (unsigned long long)dir + 1000ULL * (unsigned long long)stage +
           (unsigned long long)mb;
}

int pipeline(cl_comm *c, const cl_args *a)
{
    int s = cl_rank(c), stages = cl_size(c), m = a->microbatches > 0 ? a->microbatches : 1;
    unsigned char *buf = cl_alloc(c, a->bytes);
    double t0 = cl_now(c);
    for (int mb = 0; mb < m; mb++) {
        if (s > 0) {
            CL_TRY(cl_recv(c, buf, a->bytes, s - 1, 0, NULL));
            CL_TRY(cl_verify(c, buf, a->bytes, seed(s - 1, mb, 0), "activation"));
        }
        CL_TRY(cl_compute(c, a->compute));
        if (s < stages - 1) {
            cl_fill(c, buf, a->bytes, seed(s, mb, 0));
            CL_TRY(cl_send(c, buf, a->bytes, s + 1, 0));
        }
    }
    for (int mb = 0; mb < m; mb++) {
        if (s < stages - 1) {
            CL_TRY(cl_recv(c, buf, a->bytes, s + 1, 1, NULL));
            CL_TRY(cl_verify(c, buf, a->bytes, seed(s + 1, mb, 1), "gradient"));
        }
        CL_TRY(cl_compute(c, a->compute));
        if (s > 0) {
            cl_fill(c, buf, a->bytes, seed(s, mb, 1));
            CL_TRY(cl_send(c, buf, a->bytes, s - 1, 1));
        }
    }
    /* Stage 0 finishes last (the last gradient ends there), so its clock
     * spans the iteration; it computed 2 M slots of it, the rest is bubble. */
    double busy = 2.0 * m * a->compute, span = cl_now(c) - t0;
    if (s == 0 && a->compute > 0 && span > 0)
        cl_printf(c, "%d stages, %d microbatches: busy %.4g ms of %.4g ms, bubble %.2f%%",
                  stages, m, busy * 1e3, span * 1e3, 100.0 * (1.0 - busy / span));
    return 0;
}
