/* coll_data.c - the inputs of the chapter's reductions and the result each
 * must reach, for every type and operator (coll.h).
 *
 * Every input is a small whole number (or, for the bitwise operators, a
 * few bits), chosen so that every partial result of the reduction is
 * exact in the type: then the result does not depend on the order in
 * which an algorithm combines the ranks, and one expected value checks
 * them all.  w = i % 7 + 1 makes elements differ, so a block put in the
 * wrong place fails; E is the largest whole number below which the type
 * holds every integer (2^53 for f64 and i64, as the check computes in
 * double; 2^24 f32, 2^11 f16, 2^8 bf16; 2^31 - 1 i32).
 *
 *   sum, avg   rank r holds (r + 1) w while 7 K (K + 1) / 2 <= E: the sum
 *              is K (K + 1) / 2 w.  On more ranks rank r holds w where
 *              (r + i) % q is 0, else 0, for the fewest q >= 2 with
 *              7 ceil(K / q) <= E: the sum is w times the ranks holding it.
 *              avg is that sum / K, rounded once into a floating type and
 *              truncated in an integer one, as cl_reduce_finish does.
 *   prod       rank r holds 2 where (r + i) % q is 0, else 1, for the
 *              fewest q >= 2 that keep the product in range (2^1023 f64,
 *              2^127 f32 and bf16, 2^15 f16, 2^30 i32, 2^62 i64): the
 *              product is 2 to the number of twos.
 *   min, max   rank r holds w (1 + (r + i) % K): the min is w, the max w K
 *              (rounded into the type as the inputs are; rounding keeps
 *              their order, so the max of the rounded inputs is the
 *              rounded max).
 *   band, bor, bxor (integer types)  with s = (r + i) % B (B = 29 for i32,
 *              61 for i64, so w << s stays positive), rank r holds w << s
 *              (bor, bxor) or ~(w << s) (band); the result is the or, xor
 *              or and over the shifts that occur.
 *
 * An operator in another's place fails: over K >= 2 ranks a sum of the
 * min/max inputs exceeds their max, a product of ones and twos is not
 * their sum, and overlapping bits carry in a sum but not in an or. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "coll.h"

typedef struct coll_data {
    cl_dtype t;
    cl_op op;
    int k;         /* ranks */
    bool weighted; /* sum, avg: rank r holds (r + 1) w */
    int q;         /* sum, avg (not weighted), prod: the period of the special value */
    int bits;      /* bitwise: B */
} coll_data;

static bool is_int(cl_dtype t)
{
    return t == CL_I32 || t == CL_I64;
}

/* E of the top of the file. */
static double exact_limit(cl_dtype t)
{
    switch (t) {
    case CL_F32: return 16777216.0;
    case CL_BF16: return 256.0;
    case CL_F16: return 2048.0;
    case CL_I32: return 2147483647.0;
    default: return 9007199254740992.0;
    }
}

/* The largest power of two the type holds, as its exponent. */
static int pow2_limit(cl_dtype t)
{
    switch (t) {
    case CL_F32: case CL_BF16: return 127;
    case CL_F16: return 15;
    case CL_I32: return 30;
    case CL_I64: return 62;
    default: return 1023;
    }
}

static void data_init(coll_data *d, const coll_red *r, int k)
{
    *d = (coll_data){.t = r->t, .op = r->op, .k = k, .q = 1,
                     .bits = r->t == CL_I32 ? 29 : 61};
    double kk = k, e = exact_limit(r->t);
    if (r->op == CL_OP_SUM || r->op == CL_OP_AVG) {
        d->weighted = 7 * kk * (kk + 1) / 2 <= e;
        long most = (long)(e / 7); /* ranks whose w may meet in one element */
        int q = (int)((k + most - 1) / most);
        d->q = q < 2 ? 2 : q; /* ranks differ: an average is no min or max */
    } else if (r->op == CL_OP_PROD) {
        int most = pow2_limit(r->t), q = (k + most - 1) / most;
        d->q = q < 2 ? 2 : q;
    }
}

static int w_of(size_t i)
{
    return (int)(i % 7) + 1;
}

/* (r + i) % m without overflow. */
static int mod_of(int r, size_t i, int m)
{
    return (int)(((size_t)r % (size_t)m + i % (size_t)m) % (size_t)m);
}

/* Ranks r < k with (r + i) % q == 0. */
static long hits(const coll_data *d, size_t i)
{
    int first = (d->q - mod_of(0, i, d->q)) % d->q;
    return first < d->k ? (d->k - 1 - first) / d->q + 1 : 0;
}

/* Rank r's element i: a whole number for the arithmetic operators (as a
 * double: below 2^53), or bits for the bitwise ones. */
static double value(const coll_data *d, int r, size_t i)
{
    int w = w_of(i);
    switch (d->op) {
    case CL_OP_SUM: case CL_OP_AVG:
        return d->weighted ? (double)(r + 1) * w : mod_of(r, i, d->q) == 0 ? w : 0;
    case CL_OP_PROD: return mod_of(r, i, d->q) == 0 ? 2 : 1;
    default: return (double)w * (1 + mod_of(r, i, d->k));
    }
}

static int64_t bits_value(const coll_data *d, int r, size_t i)
{
    int64_t v = (int64_t)w_of(i) << mod_of(r, i, d->bits);
    return d->op == CL_OP_BAND ? ~v : v;
}

/* The bitwise result of element i, through table[(w - 1) * B + i % B],
 * built on the first call (*built). */
static int64_t bits_want(const coll_data *d, size_t i, int64_t *table, bool *built)
{
    int b = d->bits;
    if (!*built) {
        for (int w = 1; w <= 7; w++)
            for (int j = 0; j < b; j++) {
                uint64_t acc = 0;
                /* rank r0 < B stands for the ranks r0, r0 + B, ... below K */
                for (int r0 = 0; r0 < b && r0 < d->k; r0++) {
                    uint64_t v = (uint64_t)w << ((r0 + j) % b);
                    long n = (d->k - 1 - r0) / b + 1;
                    acc = d->op == CL_OP_BXOR ? (n % 2 ? acc ^ v : acc) : acc | v;
                }
                table[(w - 1) * b + j] = d->op == CL_OP_BAND ? ~(int64_t)acc : (int64_t)acc;
            }
        *built = true;
    }
    return table[(w_of(i) - 1) * b + (int)(i % (size_t)b)];
}

/* The result element i must reach, before rounding into the type. */
static double want(const coll_data *d, size_t i)
{
    double w = w_of(i), k = d->k;
    switch (d->op) {
    case CL_OP_SUM: case CL_OP_AVG: {
        double sum = d->weighted ? k * (k + 1) / 2 * w : w * (double)hits(d, i);
        if (d->op == CL_OP_SUM)
            return sum;
        return is_int(d->t) ? (double)((int64_t)sum / d->k) : sum / k;
    }
    case CL_OP_PROD: return ldexp(1.0, (int)hits(d, i));
    case CL_OP_MIN: return w;
    default: return w * k;
    }
}

static bool bitwise(cl_op op)
{
    return op == CL_OP_BAND || op == CL_OP_BOR || op == CL_OP_BXOR;
}

static void store_int(cl_dtype t, void *x, size_t i, int64_t v)
{
    if (t == CL_I32) {
        int32_t v32 = (int32_t)v; /* the bit patterns fit: B leaves the sign bit alone */
        memcpy((char *)x + i * sizeof v32, &v32, sizeof v32);
    } else {
        memcpy((char *)x + i * sizeof v, &v, sizeof v);
    }
}

static int64_t load_int(cl_dtype t, const void *x, size_t i)
{
    if (t == CL_I32) {
        int32_t v32;
        memcpy(&v32, (const char *)x + i * sizeof v32, sizeof v32);
        return v32;
    }
    int64_t v;
    memcpy(&v, (const char *)x + i * sizeof v, sizeof v);
    return v;
}

void coll_reduce_init(const cl_comm *c, const coll_red *r, void *x, size_t count)
{
    if (!x || !cl_checking(c))
        return;
    coll_data d;
    data_init(&d, r, cl_size(c));
    int rank = cl_rank(c);
    for (size_t i = 0; i < count; i++) {
        if (bitwise(d.op))
            store_int(d.t, x, i, bits_value(&d, rank, i));
        else
            cl_set_value(d.t, x, i, value(&d, rank, i));
    }
}

int coll_reduce_verify(cl_comm *c, const coll_red *r, const void *x, size_t first,
                       size_t count, const char *what)
{
    if (!x || !cl_checking(c))
        return 0;
    coll_data d;
    data_init(&d, r, cl_size(c));
    /* the bitwise results by (w, i % B): on the heap, not the rank's stack */
    int64_t *table = bitwise(d.op) ? cl_array(c, 7 * (size_t)d.bits, sizeof *table) : NULL;
    bool built = false;
    if (bitwise(d.op) && !table)
        return CL_ENOMEM;
    for (size_t j = 0; j < count; j++) {
        size_t i = first + j;
        if (bitwise(d.op)) {
            int64_t got = load_int(d.t, x, j), w = bits_want(&d, i, table, &built);
            if (got != w)
                return cl_fail(c, "element %zu of the %s is %lld, expected %lld (%s of %s "
                               "over %d ranks)", i, what, (long long)got, (long long)w,
                               cl_op_name(d.op), cl_dtype_name(d.t), d.k);
            continue;
        }
        unsigned char held[8]; /* the expected value as the type holds it */
        cl_set_value(d.t, held, 0, want(&d, i));
        double got = cl_value(d.t, x, j), w = cl_value(d.t, held, 0);
        if (got != w)
            return cl_fail(c, "element %zu of the %s is %.9g, expected %.9g (%s of %s over %d "
                           "ranks)", i, what, got, w, cl_op_name(d.op), cl_dtype_name(d.t), d.k);
    }
    return 0;
}
