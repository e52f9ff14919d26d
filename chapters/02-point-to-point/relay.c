/* relay: rank 0 creates a value, every rank adds 10 and passes it on, the
 * last rank prints what arrived.  K ranks: K - 1 hops, one after another,
 * so the modeled time is (K - 1)(alpha + n / B). */
#include "commlab.h"

int relay(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), size = cl_size(c);
    unsigned char *x = cl_alloc(c, a->bytes);
    long long value = 0;
    if (rank > 0) {
        CL_TRY(cl_recv(c, x, a->bytes, rank - 1, 0, NULL));
        value = 10LL * (rank - 1);
        CL_TRY(cl_verify(c, x, a->bytes, (unsigned long long)value, "relayed buffer"));
        value += 10;
    }
    cl_fill(c, x, a->bytes, (unsigned long long)value);
    if (rank < size - 1)
        CL_TRY(cl_send(c, x, a->bytes, rank + 1, 0));
    else
        cl_printf(c, "the value after %d hops is %lld", size - 1, value);
    return 0;
}
