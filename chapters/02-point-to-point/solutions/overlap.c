/* overlap.c - exercise 2.6: the buckets of examples/serialized.c made to
 * overlap.  The swap of bucket b is posted as soon as bucket b is
 * computed, and waited for only after bucket b + 1 is: each step costs
 * max(T, c), not T + c, and the whole T + (m - 1) max(T, c) + c for m buckets. */
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
    unsigned char *theirs[MAX_BUCKETS];
    size_t len[MAX_BUCKETS];
    cl_request *r[2] = {NULL, NULL};
    for (int b = 0; b < buckets; b++) {
        len[b] = a->bytes * (size_t)(b + 1) / (size_t)buckets -
                 a->bytes * (size_t)b / (size_t)buckets;
        unsigned char *mine = cl_alloc(c, len[b]);
        theirs[b] = cl_alloc(c, len[b]);
        CL_TRY(cl_compute(c, a->compute / buckets)); /* bucket b, while bucket b - 1 is swapped */
        cl_fill(c, mine, len[b], (unsigned long long)rank);
        CL_TRY(cl_waitall(c, 2, r, NULL));
        CL_TRY(cl_irecv(c, theirs[b], len[b], partner, 0, &r[0]));
        CL_TRY(cl_isend(c, mine, len[b], partner, 0, &r[1]));
    }
    CL_TRY(cl_waitall(c, 2, r, NULL));
    for (int b = 0; b < buckets; b++)
        CL_TRY(cl_verify(c, theirs[b], len[b], (unsigned long long)partner, "partner's bucket"));
    return 0;
}
