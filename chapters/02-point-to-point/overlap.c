/* overlap: the backward pass of data-parallel training, in gradient
 * buckets.  Ranks 2i and 2i + 1 are two replicas of one model; each
 * computes its gradient bucket by bucket (--pieces m buckets, default 4;
 * the backward pass of --compute seconds and the n bytes split evenly
 * among them, T = compute / m each) and swaps every bucket with its
 * partner once it is ready.  A step posts the swap of bucket b (isend,
 * irecv), computes bucket b + 1 (cl_compute) and only then waits: it
 * costs max(T, c), not T + c, where c = alpha + n / (m B) is one
 * bucket's swap.  The backward pass of the first bucket has nothing to
 * hide behind it and the swap of the last has nothing to hide, so
 *     T + (m - 1) max(T, c) + c      overlapped,
 *     m (T + c)                      serialized (compute, swap, wait).
 * With two replicas an all-reduce is this swap and an add (chapter 04).
 * Bucket b of rank r holds cl_fill(seed r), each in a block of its own;
 * every rank checks it ends with its partner's.  Rank 0 prints the parts
 * and both totals: the last swap, waited for alone, is c. */
#include "commlab.h"

#define MAX_BUCKETS 256 /* three words a bucket live on the rank's small stack */

int overlap(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), partner = rank ^ 1;
    if (partner >= cl_size(c))
        return 0;
    int buckets = a->pieces ? a->pieces : 4;
    if (buckets > MAX_BUCKETS) {
        cl_printf(c, "overlap: %d buckets is more than %d: lower --pieces", buckets, MAX_BUCKETS);
        return CL_ERANGE;
    }
    unsigned char *mine[MAX_BUCKETS], *theirs[MAX_BUCKETS];
    size_t len[MAX_BUCKETS];
    for (int b = 0; b < buckets; b++) {
        len[b] = a->bytes * (size_t)(b + 1) / (size_t)buckets -
                 a->bytes * (size_t)b / (size_t)buckets;
        mine[b] = cl_alloc(c, len[b]);
        theirs[b] = cl_alloc(c, len[b]);
    }
    double t0 = cl_now(c);
    cl_request *r[2] = {NULL, NULL};
    for (int b = 0; b < buckets; b++) {
        CL_TRY(cl_compute(c, a->compute / buckets)); /* the backward pass of bucket b */
        cl_fill(c, mine[b], len[b], (unsigned long long)rank);
        CL_TRY(cl_waitall(c, 2, r, NULL)); /* the swap of bucket b - 1, hidden behind it */
        CL_TRY(cl_irecv(c, theirs[b], len[b], partner, 0, &r[0]));
        CL_TRY(cl_isend(c, mine[b], len[b], partner, 0, &r[1]));
    }
    double last = cl_now(c);
    CL_TRY(cl_waitall(c, 2, r, NULL));
    double swap = cl_now(c) - last, took = cl_now(c) - t0;
    double serial = a->compute + buckets * swap;
    if (rank == 0)
        cl_printf(c, "%d bucket%s, compute %.4g ms and swap %.4g ms each: overlapped %.4g ms, "
                  "serialized %.4g ms", buckets, buckets == 1 ? "" : "s",
                  a->compute / buckets * 1e3, swap * 1e3, took * 1e3, serial * 1e3);
    for (int b = 0; b < buckets; b++)
        CL_TRY(cl_verify(c, theirs[b], len[b], (unsigned long long)partner, "partner's bucket"));
    return 0;
}
