/* test_reduce.c - core/reduce.c: bf16 and f16 conversions to nearest even
 * (known encodings, and the fast float paths against the exact rounding
 * of reduce_round for a million random floats), element access, every
 * operator on every type, avg's division rounded once, and what is
 * refused. */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "commlab.h"
#include "core/reduce.h"
#include "tests/simcase.h"
#include "tests/testutil.h"

/* IEEE 754 binary16: 1.0 is 0x3c00, the largest finite 65504 = 0x7bff,
 * the smallest subnormal 2^-24 = 0x0001; bfloat16 is float's upper half:
 * 1.0 = 0x3f80. */
static void test_known_encodings(void **state)
{
    (void)state;
    assert_int_equal(reduce_float_to_f16(1.0f), 0x3c00);
    assert_int_equal(reduce_float_to_f16(-2.0f), 0xc000);
    assert_int_equal(reduce_float_to_f16(65504.0f), 0x7bff);
    assert_int_equal(reduce_float_to_f16(65519.0f), 0x7bff); /* below the midpoint */
    assert_int_equal(reduce_float_to_f16(65520.0f), 0x7c00); /* the midpoint: to even, inf */
    assert_int_equal(reduce_float_to_f16(ldexpf(1, -24)), 0x0001);
    assert_int_equal(reduce_float_to_f16(ldexpf(1, -25)), 0x0000);     /* tie: to even 0 */
    assert_int_equal(reduce_float_to_f16(ldexpf(3, -25)), 0x0002);     /* tie: to even 2 */
    assert_int_equal(reduce_float_to_f16(1.0f + ldexpf(1, -11)), 0x3c00); /* tie: even */
    assert_int_equal(reduce_float_to_f16(1.0f + ldexpf(3, -11)), 0x3c02); /* tie: even */
    assert_int_equal(reduce_float_to_f16(2049.0f), 0x6800);            /* 2048 */
    assert_true(reduce_float_to_f16(NAN) > 0x7c00);
    assert_true(reduce_f16_to_float(0x7c00) == INFINITY);
    assert_true(reduce_f16_to_float(0x0001) == ldexpf(1, -24));
    assert_true(reduce_f16_to_float(0x3555) == 0x155 * ldexpf(1, -12) + 0.25f);
    assert_int_equal(reduce_float_to_bf16(1.0f), 0x3f80);
    assert_int_equal(reduce_float_to_bf16(1.0f + ldexpf(1, -8)), 0x3f80); /* tie: even */
    assert_int_equal(reduce_float_to_bf16(1.0f + ldexpf(3, -8)), 0x3f82); /* tie: even */
    assert_int_equal(reduce_float_to_bf16(257.0f), 0x4380);                /* 256 */
    assert_int_equal(reduce_float_to_bf16(FLT_MAX), 0x7f80);              /* rounds up: inf */
    assert_true(isnan(reduce_bf16_to_float(reduce_float_to_bf16(NAN))));
    assert_true(reduce_bf16_to_float(0x4049) == 3.140625f);
}

static float random_float(unsigned *seed)
{
    uint32_t u = (uint32_t)rand_r(seed) << 16 ^ (uint32_t)rand_r(seed);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* The bit-twiddling conversions equal the exact rounding of reduce_round
 * for every float drawn (all exponents, subnormals, both signs). */
static void test_fast_paths_round_exactly(void **state)
{
    (void)state;
    unsigned seed = 36;
    for (int i = 0; i < 1000000; i++) {
        float f = random_float(&seed);
        if (isnan(f))
            continue;
        float h = reduce_f16_to_float(reduce_float_to_f16(f));
        float b = reduce_bf16_to_float(reduce_float_to_bf16(f));
        double wh = reduce_round(f, 11, -14, 15), wb = reduce_round(f, 8, -126, 127);
        if ((double)h != wh || (double)b != wb)
            fail_msg("%a: f16 %a want %a, bf16 %a want %a", (double)f, (double)h, wh, (double)b,
                     wb);
    }
}

static void test_values(void **state)
{
    (void)state;
    unsigned char buf[64];
    static const cl_dtype all[] = {CL_F64, CL_F32, CL_BF16, CL_F16, CL_I32, CL_I64};
    for (size_t t = 0; t < 6; t++)
        for (int v = -300; v <= 300; v++) {
            cl_set_value(all[t], buf, 3, v);
            double got = cl_value(all[t], buf, 3);
            /* bf16 holds integers to 256, beyond: every other one */
            double want = all[t] == CL_BF16 && abs(v) > 256 ? reduce_round(v, 8, -126, 127) : v;
            assert_true(got == want);
        }
    cl_set_value(CL_I32, buf, 0, 1e12);
    assert_true(cl_value(CL_I32, buf, 0) == 2147483647.0);
    cl_set_value(CL_I32, buf, 0, NAN);
    assert_true(cl_value(CL_I32, buf, 0) == 0);
    cl_set_value(CL_I64, buf, 0, 1e30);
    int64_t big;
    memcpy(&big, buf, sizeof big);
    assert_true(big == INT64_MAX);
    cl_set_value(CL_F16, buf, 0, 1e6); /* beyond 65504: inf */
    assert_true(cl_value(CL_F16, buf, 0) == INFINITY);
    cl_set_value(CL_F32, buf, 0, 1.0 + 0x1p-24); /* a tie in f32: to even, 1 */
    assert_true(cl_value(CL_F32, buf, 0) == 1.0);
    assert_int_equal(cl_dtype_size(CL_BF16), 2);
    assert_int_equal(cl_dtype_size((cl_dtype)9), 0);
    assert_string_equal(cl_dtype_name(CL_I64), "i64");
    assert_string_equal(cl_op_name(CL_OP_BXOR), "bxor");
}

/* Every operator on every type it takes, on 5 elements: dst op src. */
static void test_operators(void **state)
{
    (void)state;
    static const double x[5] = {3, -2, 7, 1.5, 0}, y[5] = {4, 5, -7, 2.5, 9};
    static const cl_dtype floats[] = {CL_F64, CL_F32, CL_BF16, CL_F16};
    for (size_t t = 0; t < 4; t++)
        for (int op = CL_OP_SUM; op <= CL_OP_MAX; op++) {
            unsigned char d[40], s[40];
            for (int i = 0; i < 5; i++) {
                cl_set_value(floats[t], d, (size_t)i, x[i]);
                cl_set_value(floats[t], s, (size_t)i, y[i]);
            }
            reduce_apply(d, s, 5, floats[t], (cl_op)op);
            for (int i = 0; i < 5; i++) {
                double a = x[i], b = y[i];
                double want = op == CL_OP_PROD ? a * b : op == CL_OP_MIN ? fmin(a, b)
                              : op == CL_OP_MAX ? fmax(a, b) : a + b;
                assert_true(cl_value(floats[t], d, (size_t)i) == want);
            }
        }
    int32_t a[4] = {6, -5, INT32_MAX, 12}, b[4] = {3, 7, 1, 10};
    int32_t want[8][4] = {
        {9, 2, INT32_MIN, 22},  /* sum wraps */
        {9, 2, INT32_MIN, 22},  /* avg adds */
        {18, -35, INT32_MAX, 120},
        {3, -5, 1, 10},
        {6, 7, INT32_MAX, 12},
        {2, 3, 1, 8},
        {7, -1, INT32_MAX, 14},
        {5, -4, INT32_MAX - 1, 6},
    };
    for (int op = 0; op < 8; op++) {
        int32_t d[4];
        memcpy(d, a, sizeof d);
        reduce_apply(d, b, 4, CL_I32, (cl_op)op);
        assert_memory_equal(d, want[op], sizeof d);
    }
    int64_t p[2] = {INT64_MAX, 1LL << 40}, q[2] = {2, 1LL << 30};
    reduce_apply(p, q, 2, CL_I64, CL_OP_PROD); /* wraps: no overflow */
    assert_true(p[0] == -2 && p[1] == 0); /* 2^70 mod 2^64 */
}

/* avg's last step: floating types rounded once from the exact quotient;
 * integer types truncated toward zero. */
static void test_divide(void **state)
{
    (void)state;
    unsigned char buf[16];
    cl_set_value(CL_F16, buf, 0, 2047);
    reduce_divide(buf, 1, CL_F16, 3);
    assert_true(cl_value(CL_F16, buf, 0) == reduce_round(2047.0 / 3, 11, -14, 15));
    cl_set_value(CL_F32, buf, 0, 10);
    reduce_divide(buf, 1, CL_F32, 3);
    assert_true(cl_value(CL_F32, buf, 0) == (float)(10.0 / 3));
    int32_t i[3] = {7, -7, 6};
    reduce_divide(i, 3, CL_I32, 2);
    assert_int_equal(i[0], 3);
    assert_int_equal(i[1], -3);
    assert_int_equal(i[2], 3);
}

static void test_refused_and_names(void **state)
{
    (void)state;
    char why[96];
    assert_int_equal(reduce_valid(CL_F32, CL_OP_BAND, why, sizeof why), CL_EINVAL);
    assert_string_equal(why, "band applies to integer types (i32, i64), not f32");
    assert_int_equal(reduce_valid(CL_I64, CL_OP_BXOR, why, sizeof why), 0);
    assert_int_equal(reduce_valid((cl_dtype)6, CL_OP_SUM, why, sizeof why), CL_EINVAL);
    assert_int_equal(reduce_valid(CL_F64, (cl_op)8, why, sizeof why), CL_EINVAL);
    cl_dtype t;
    cl_op op;
    assert_int_equal(reduce_dtype_parse("bf16", &t), 0);
    assert_int_equal(t, CL_BF16);
    assert_int_equal(reduce_op_parse("avg", &op), 0);
    assert_int_equal(op, CL_OP_AVG);
    assert_int_equal(reduce_op_parse("mean", &op), CL_EINVAL);
    assert_int_equal(reduce_dtype_parse("fp16", &t), CL_EINVAL);
}

/* cl_reduce_local and cl_reduce_finish on a rank: what each refuses
 * (a->pieces picks the case), and the modeled cost of what they do, bytes
 * times gamma (nvlink's 680 GB/s: 32 bytes take 47.06 ps). */
static int reduce_calls(cl_comm *c, const cl_args *a)
{
    double *x = cl_alloc(c, 4 * sizeof *x);
    for (int i = 0; i < 4; i++)
        x[i] = i;
    switch (a->pieces) {
    case 1: return cl_reduce_local(c, x, x, 4, CL_F64, CL_OP_BAND);
    case 2: return cl_reduce_local(c, (char *)x + 1, x, 2, CL_F32, CL_OP_SUM);
    case 3: return cl_reduce_local(c, x, NULL, 4, CL_F64, CL_OP_SUM);
    case 4: return cl_reduce_finish(c, x, 4, CL_F64, CL_OP_AVG, 0);
    default: break;
    }
    double t0 = cl_now(c);
    CL_TRY(cl_reduce_local(c, x, x, 4, CL_F64, CL_OP_SUM));
    double t1 = cl_now(c);
    CL_TRY(cl_reduce_finish(c, x, 4, CL_F64, CL_OP_MAX, 2)); /* nothing to do: free */
    double t2 = cl_now(c);
    CL_TRY(cl_reduce_finish(c, x, 4, CL_F64, CL_OP_AVG, 2));
    double t3 = cl_now(c);
    if (x[3] != 3 || t1 - t0 != 32 / 680e9 || t2 != t1 || t3 - t2 != 32 / 680e9)
        return cl_fail(c, "x[3] %g, times %g %g %g", x[3], t1 - t0, t2 - t1, t3 - t2);
    return 0;
}

static void test_on_a_rank(void **state)
{
    (void)state;
    static const char *const why[] = {
        NULL, "band applies to integer types (i32, i64), not f64",
        "dst is not on a boundary of its f32 elements (4 bytes)",
        "cl_reduce_local of 4 elements with a NULL buffer",
        "cl_reduce_finish over 0 ranks",
    };
    for (int k = 0; k < 5; k++) {
        cl_args a = {.pieces = k};
        run r;
        run_pattern(&r, reduce_calls, 1, 8, &a, NULL);
        if (!k) {
            if (r.res.status)
                fail_msg("%s", r.res.diag.msg);
        } else {
            assert_int_equal(r.res.status, CL_EINVAL);
            if (!strstr(r.res.diag.msg, why[k]))
                fail_msg("case %d: '%s' has no '%s'", k, r.res.diag.msg, why[k]);
        }
        run_release(&r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_encodings),
        cmocka_unit_test(test_fast_paths_round_exactly),
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_operators),
        cmocka_unit_test(test_divide),
        cmocka_unit_test(test_refused_and_names),
        cmocka_unit_test(test_on_a_rank),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
