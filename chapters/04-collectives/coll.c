/* coll.c - blocks, the gather's check and the fold of coll.h. */
#include "coll.h"

size_t coll_span(size_t total, int k, int j, int n)
{
    return coll_first(total, k, j + n - 1) + coll_len(total, k, j + n - 1) -
           coll_first(total, k, j);
}

unsigned long long coll_seed(int rank, int block)
{
    return 0x51ed0000ULL + (unsigned long long)rank * 65537ULL + (unsigned long long)block;
}

int coll_gathered_verify(cl_comm *c, const unsigned char *x, size_t total)
{
    int k = cl_size(c);
    for (int s = 0; s < k; s++)
        CL_TRY(cl_verify(c, CL_AT(x, coll_first(total, k, s)), coll_len(total, k, s),
                         coll_seed(s, s), "gathered block"));
    return 0;
}

void coll_fold_init(coll_fold *f, int rank, int size)
{
    f->p = 1;
    while (f->p * 2 <= size)
        f->p *= 2;
    f->r = size - f->p;
    f->buddy = -1;
    if (rank < 2 * f->r) {
        f->buddy = rank ^ 1;
        f->v = rank % 2 ? -1 : rank / 2;
    } else {
        f->v = rank - f->r;
    }
}

int coll_fold_in(cl_comm *c, const coll_red *r, const coll_fold *f, void *x, void *tmp,
                 size_t count)
{
    size_t bytes = count * r->size;
    if (f->v < 0)
        return cl_send(c, x, bytes, f->buddy, 0);
    if (f->buddy >= 0) {
        CL_TRY(cl_recv(c, tmp, bytes, f->buddy, 0, NULL));
        CL_TRY(coll_reduce(c, r, x, tmp, count));
    }
    return 0;
}

int coll_real_lo(const coll_fold *f, int v)
{
    return v < f->r ? 2 * v : v + f->r;
}

int coll_real_hi(const coll_fold *f, int v)
{
    return v < f->r ? 2 * v + 1 : v + f->r;
}

int coll_sendrecv(cl_comm *c, const void *sbuf, size_t sbytes, int dst, void *rbuf,
                  size_t rbytes, int src, int tag)
{
    cl_request *r[2] = {NULL, NULL};
    if (src >= 0)
        CL_TRY(cl_irecv(c, rbuf, rbytes, src, tag, &r[0]));
    if (dst >= 0)
        CL_TRY(cl_isend(c, sbuf, sbytes, dst, tag, &r[1]));
    return cl_waitall(c, 2, r, NULL);
}

int coll_requests(cl_comm *c, size_t n, cl_request ***r)
{
    *r = cl_array(c, n, sizeof **r);
    return *r ? 0 : CL_ENOMEM;
}

/* Bytes and offset of the real blocks behind virtual ranks [v, v + n). */
static size_t vspan(const coll_fold *f, int k, size_t total, int v, int n, size_t *first)
{
    int lo = coll_real_lo(f, v), hi = coll_real_hi(f, v + n - 1);
    *first = coll_first(total, k, lo);
    return coll_span(total, k, lo, hi - lo + 1);
}

int coll_halving(cl_comm *c, const coll_red *r, const coll_fold *f, void *x, void *tmp,
                 size_t count, int tag)
{
    int k = cl_size(c), lo = 0;
    for (int mask = f->p / 2; mask > 0; mask /= 2) {
        int partner = f->v ^ mask, keep = f->v & mask ? lo + mask : lo;
        int give = f->v & mask ? lo : lo + mask;
        size_t kf, gf;
        size_t kl = vspan(f, k, count, keep, mask, &kf), gl = vspan(f, k, count, give, mask, &gf);
        int peer = coll_real_lo(f, partner);
        CL_TRY(coll_sendrecv(c, coll_at(r, x, gf), gl * r->size, peer, tmp, kl * r->size, peer,
                             tag));
        CL_TRY(coll_reduce(c, r, coll_at(r, x, kf), tmp, kl));
        lo = keep;
    }
    return 0;
}

int coll_doubling(cl_comm *c, const coll_fold *f, void *x, size_t total, size_t unit, int tag)
{
    int k = cl_size(c);
    for (int mask = 1; mask < f->p; mask *= 2) {
        int partner = f->v ^ mask;
        int mine = f->v & ~(mask - 1), theirs = partner & ~(mask - 1);
        size_t mf, tf;
        size_t ml = vspan(f, k, total, mine, mask, &mf), tl = vspan(f, k, total, theirs, mask, &tf);
        int peer = coll_real_lo(f, partner);
        CL_TRY(coll_sendrecv(c, CL_AT(x, mf * unit), ml * unit, peer, CL_AT(x, tf * unit),
                             tl * unit, peer, tag));
    }
    return 0;
}
