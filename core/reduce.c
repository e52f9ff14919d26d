/* reduce.c - element types, operators and the loops that combine buffers. */
#include "core/reduce.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const dtype_names[REDUCE_NDTYPES] = {"f64", "f32", "bf16", "f16", "i32",
                                                        "i64"};
static const size_t dtype_sizes[REDUCE_NDTYPES] = {8, 4, 2, 2, 4, 8};
static const char *const op_names[REDUCE_NOPS] = {"sum", "avg",  "prod", "min",
                                                  "max", "band", "bor",  "bxor"};

size_t cl_dtype_size(cl_dtype t)
{
    return (unsigned)t < REDUCE_NDTYPES ? dtype_sizes[t] : 0;
}

const char *cl_dtype_name(cl_dtype t)
{
    return (unsigned)t < REDUCE_NDTYPES ? dtype_names[t] : "?";
}

const char *cl_op_name(cl_op op)
{
    return (unsigned)op < REDUCE_NOPS ? op_names[op] : "?";
}

bool reduce_dtype_int(cl_dtype t)
{
    return t == CL_I32 || t == CL_I64;
}

bool reduce_op_bitwise(cl_op op)
{
    return op == CL_OP_BAND || op == CL_OP_BOR || op == CL_OP_BXOR;
}

int reduce_valid(cl_dtype t, cl_op op, char *why, size_t len)
{
    if ((unsigned)t >= REDUCE_NDTYPES)
        snprintf(why, len, "unknown element type %d", (int)t);
    else if ((unsigned)op >= REDUCE_NOPS)
        snprintf(why, len, "unknown operator %d", (int)op);
    else if (reduce_op_bitwise(op) && !reduce_dtype_int(t))
        snprintf(why, len, "%s applies to integer types (i32, i64), not %s", op_names[op],
                 dtype_names[t]);
    else
        return 0;
    return CL_EINVAL;
}

static int find(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

int reduce_dtype_parse(const char *s, cl_dtype *t)
{
    int i = find(s, dtype_names, REDUCE_NDTYPES);
    if (i < 0)
        return CL_EINVAL;
    *t = (cl_dtype)i;
    return 0;
}

int reduce_op_parse(const char *s, cl_op *op)
{
    int i = find(s, op_names, REDUCE_NOPS);
    if (i < 0)
        return CL_EINVAL;
    *op = (cl_op)i;
    return 0;
}

const char *reduce_dtype_list(void)
{
    return "f64, f32, bf16, f16, i32, i64";
}

const char *reduce_op_list(void)
{
    return "sum, avg, prod, min, max, band, bor, bxor";
}

/* ---- bf16 and f16 ---- */

static uint32_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

float reduce_bf16_to_float(uint16_t h)
{
    return bits_float((uint32_t)h << 16);
}

uint16_t reduce_float_to_bf16(float f)
{
    uint32_t x = float_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it one, quiet */
        return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fffu + ((x >> 16) & 1); /* to nearest, ties to the even upper half */
    return (uint16_t)(x >> 16);
}

float reduce_f16_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ffu;
    if (exp == 0x1f)
        return bits_float(sign | 0x7f800000u | (mant << 13));
    if (exp)
        return bits_float(sign | ((exp + 112) << 23) | (mant << 13));
    float v = ldexpf((float)mant, -24); /* zero or subnormal */
    return sign ? -v : v;
}

/* Float to binary16, to nearest even (F. Giesen's float_to_half_fast3_rtne):
 * normal results round by adding half a step minus one, plus the kept
 * last bit; subnormal ones let the FPU round, by adding 0.5f, whose step
 * at that exponent is the subnormals' step. */
uint16_t reduce_float_to_f16(float f)
{
    uint32_t x = float_bits(f), sign = x & 0x80000000u;
    uint16_t o;
    x ^= sign;
    if (x >= 0x47800000u) { /* 2^16 and up: infinity; or NaN */
        o = x > 0x7f800000u ? 0x7e00 : 0x7c00;
    } else if (x < 0x38800000u) { /* below 2^-14: subnormal or zero */
        float t = bits_float(x) + 0.5f;
        o = (uint16_t)(float_bits(t) - 0x3f000000u);
    } else {
        uint32_t odd = (x >> 13) & 1;
        x += ((uint32_t)(15 - 127) << 23) + 0xfffu + odd;
        o = (uint16_t)(x >> 13); /* 65520 .. 65536 carries into infinity */
    }
    return (uint16_t)(o | (sign >> 16));
}

double reduce_round(double v, int p, int emin, int emax)
{
    if (!isfinite(v) || v == 0)
        return v;
    int e;
    frexp(v, &e); /* |v| in [2^(e-1), 2^e) */
    int lead = e - 1 < emin ? emin : e - 1;
    double r = ldexp(nearbyint(ldexp(v, p - 1 - lead)), lead - (p - 1));
    double max = ldexp(2.0 - ldexp(1.0, 1 - p), emax);
    return fabs(r) > max ? copysign(INFINITY, v) : r;
}

/* ---- element access ---- */

double cl_value(cl_dtype t, const void *buf, size_t i)
{
    const unsigned char *p = (const unsigned char *)buf + i * cl_dtype_size(t);
    switch (t) {
    case CL_F64: { double v; memcpy(&v, p, sizeof v); return v; }
    case CL_F32: { float v; memcpy(&v, p, sizeof v); return v; }
    case CL_BF16: { uint16_t v; memcpy(&v, p, sizeof v); return reduce_bf16_to_float(v); }
    case CL_F16: { uint16_t v; memcpy(&v, p, sizeof v); return reduce_f16_to_float(v); }
    case CL_I32: { int32_t v; memcpy(&v, p, sizeof v); return v; }
    case CL_I64: { int64_t v; memcpy(&v, p, sizeof v); return (double)v; }
    }
    return 0;
}

/* v rounded to nearest, clamped to [lo, hi]; NaN: 0. */
static double clamp(double v, double lo, double hi)
{
    if (isnan(v))
        return 0;
    v = nearbyint(v);
    return v < lo ? lo : v > hi ? hi : v;
}

void cl_set_value(cl_dtype t, void *buf, size_t i, double v)
{
    unsigned char *p = (unsigned char *)buf + i * cl_dtype_size(t);
    switch (t) {
    case CL_F64: memcpy(p, &v, sizeof v); break;
    case CL_F32: {
        float f = (float)reduce_round(v, 24, -126, 127); /* exact: no second rounding */
        memcpy(p, &f, sizeof f);
        break;
    }
    case CL_BF16: {
        uint16_t h = reduce_float_to_bf16((float)reduce_round(v, 8, -126, 127));
        memcpy(p, &h, sizeof h);
        break;
    }
    case CL_F16: {
        uint16_t h = reduce_float_to_f16((float)reduce_round(v, 11, -14, 15));
        memcpy(p, &h, sizeof h);
        break;
    }
    case CL_I32: {
        int32_t x = (int32_t)clamp(v, INT32_MIN, INT32_MAX);
        memcpy(p, &x, sizeof x);
        break;
    }
    case CL_I64: {
        /* 2^63 is the first double past INT64_MAX */
        double c = clamp(v, -9223372036854775808.0, 9223372036854775808.0);
        int64_t x = c >= 9223372036854775808.0 ? INT64_MAX : (int64_t)c;
        memcpy(p, &x, sizeof x);
        break;
    }
    }
}

/* ---- the loops ---- */

/* One loop per type and operator, so that each compiles to straight
 * (vectorizable) code: a is dst's element, b src's, in the compute type W. */
#define LOOP(T, W, LOAD, STORE, EXPR)                                          \
    do {                                                                     \
        T *d_ = dst;                                                         \
        const T *s_ = src;                                                   \
        for (size_t i = 0; i < count; i++) {                                 \
            W a = LOAD(d_[i]), b = LOAD(s_[i]);                              \
            d_[i] = STORE(EXPR);                                             \
        }                                                                    \
    } while (0)

#define SAME(x) (x)

/* The arithmetic operators of a floating type. */
#define FLOATING(T, W, LOAD, STORE)                                            \
    switch (op) {                                                            \
    case CL_OP_SUM: case CL_OP_AVG: LOOP(T, W, LOAD, STORE, a + b); break;   \
    case CL_OP_PROD: LOOP(T, W, LOAD, STORE, a * b); break;                  \
    case CL_OP_MIN: LOOP(T, W, LOAD, STORE, b < a ? b : a); break;           \
    case CL_OP_MAX: LOOP(T, W, LOAD, STORE, b > a ? b : a); break;           \
    default: break;                                                          \
    }

/* An integer type: sum and product in its unsigned twin (they wrap),
 * min and max signed, the bitwise operators on the bits. */
#define INTEGER(S, U)                                                          \
    switch (op) {                                                            \
    case CL_OP_SUM: case CL_OP_AVG: LOOP(U, U, SAME, SAME, a + b); break;    \
    case CL_OP_PROD: LOOP(U, U, SAME, SAME, (U)(a * b)); break;              \
    case CL_OP_MIN: LOOP(S, S, SAME, SAME, b < a ? b : a); break;            \
    case CL_OP_MAX: LOOP(S, S, SAME, SAME, b > a ? b : a); break;            \
    case CL_OP_BAND: LOOP(U, U, SAME, SAME, a & b); break;                   \
    case CL_OP_BOR: LOOP(U, U, SAME, SAME, a | b); break;                    \
    case CL_OP_BXOR: LOOP(U, U, SAME, SAME, a ^ b); break;                   \
    }

void reduce_apply(void *dst, const void *src, size_t count, cl_dtype t, cl_op op)
{
    switch (t) {
    case CL_F64: FLOATING(double, double, SAME, SAME); break;
    case CL_F32: FLOATING(float, float, SAME, SAME); break;
    case CL_BF16: FLOATING(uint16_t, float, reduce_bf16_to_float, reduce_float_to_bf16); break;
    case CL_F16: FLOATING(uint16_t, float, reduce_f16_to_float, reduce_float_to_f16); break;
    /* uint32_t * uint32_t promotes to int where int is wider: it is not. */
    case CL_I32: INTEGER(int32_t, uint32_t); break;
    case CL_I64: INTEGER(int64_t, uint64_t); break;
    }
}

void reduce_divide(void *buf, size_t count, cl_dtype t, int n)
{
    if (t == CL_I32) {
        int32_t *x = buf;
        for (size_t i = 0; i < count; i++)
            x[i] /= n;
    } else if (t == CL_I64) {
        int64_t *x = buf;
        for (size_t i = 0; i < count; i++)
            x[i] /= n;
    } else if (t == CL_F64) {
        double *x = buf;
        for (size_t i = 0; i < count; i++)
            x[i] /= n;
    } else {
        /* The quotient in double, rounded once into the type: double holds
         * enough bits that this is the correctly rounded quotient. */
        for (size_t i = 0; i < count; i++)
            cl_set_value(t, buf, i, cl_value(t, buf, i) / n);
    }
}
