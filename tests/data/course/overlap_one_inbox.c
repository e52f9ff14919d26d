/* Exercise 2.6 done wrong on purpose (the check must fail it): the swaps
 * overlap the compute as they should, but every bucket of the partner is
 * received into one block, so only the last one is kept. */
#include "commlab.h"

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), partner = rank ^ 1;
    if (partner >= cl_size(c))
        return 0;
    int buckets = a->pieces ? a->pieces : 4;
    unsigned char *theirs = cl_alloc(c, a->bytes / (size_t)buckets + 1);
    cl_request *r[2] = {NULL, NULL};
    for (int b = 0; b < buckets; b++) {
        size_t len = a->bytes * (size_t)(b + 1) / (size_t)buckets -
                     a->bytes * (size_t)b / (size_t)buckets;
        unsigned char *mine = cl_alloc(c, len);
        CL_TRY(cl_compute(c, a->compute / buckets));
        cl_fill(c, mine, len, (unsigned long long)rank);
        CL_TRY(cl_waitall(c, 2, r, NULL));
        CL_TRY(cl_irecv(c, theirs, len, partner, 0, &r[0]));
        CL_TRY(cl_isend(c, mine, len, partner, 0, &r[1]));
    }
    return cl_waitall(c, 2, r, NULL);
}
