/* Exercise 2.6 done wrong on purpose (the check must fail it): isend and
 * irecv, but each swap is waited for before the next bucket is computed,
 * so nothing overlaps: m (T + c), the serialized time, with the right data
 * and messages. */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), partner = rank ^ 1;
    if (partner >= cl_size(c))
        return 0;
    int buckets = a->pieces ? a->pieces : 4;
    for (int b = 0; b < buckets; b++) {
        size_t len = a->bytes * (size_t)(b + 1) / (size_t)buckets -
                     a->bytes * (size_t)b / (size_t)buckets;
        unsigned char *mine = cl_alloc(c, len), *theirs = cl_alloc(c, len);
        CL_TRY(cl_compute(c, a->compute / buckets));
        cl_fill(c, mine, len, (unsigned long long)rank);
        cl_request *r[2];
        CL_TRY(cl_irecv(c, theirs, len, partner, 0, &r[0]));
        CL_TRY(cl_isend(c, mine, len, partner, 0, &r[1]));
        CL_TRY(cl_waitall(c, 2, r, NULL));
    }
    return 0;
}
