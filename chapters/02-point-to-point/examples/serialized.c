/* serialized.c - the start of exercise 2.6: the backward pass of two
 * data-parallel replicas in gradient buckets, each bucket computed, then
 * swapped with the partner (rank r ^ 1), then waited for, before the next
 * bucket is computed.  Nothing overlaps: m (T + c) for m buckets (--pieces,
 * default 4) that split a backward pass of --compute (T each) and a swap
 * of c each.  Bucket b of rank r holds
 * cl_fill(seed r) in a block of its own (cl_alloc); every rank ends with its
 * partner's buckets. */
#include "commlab.h"

#define MAX_BUCKETS 256

int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), partner = rank ^ 1;
    if (partner >= cl_size(c))
        return 0;
    int buckets = a->pieces ? a->pieces : 4;
    if (buckets > MAX_BUCKETS)
        return cl_fail(c, "%d buckets is more than %d: lower --pieces", buckets, MAX_BUCKETS);
    for (int b = 0; b < buckets; b++) {
        size_t len = a->bytes * (size_t)(b + 1) / (size_t)buckets -
                     a->bytes * (size_t)b / (size_t)buckets;
        unsigned char *mine = cl_alloc(c, len), *theirs = cl_alloc(c, len);
        CL_TRY(cl_compute(c, a->compute / buckets)); /* the backward pass of bucket b */
        cl_fill(c, mine, len, (unsigned long long)rank);
        cl_request *r[2];
        CL_TRY(cl_irecv(c, theirs, len, partner, 0, &r[0]));
        CL_TRY(cl_isend(c, mine, len, partner, 0, &r[1]));
        CL_TRY(cl_waitall(c, 2, r, NULL));
        CL_TRY(cl_verify(c, theirs, len, (unsigned long long)partner, "partner's bucket"));
    }
    return 0;
}
