/*
 * reduce.h - the arithmetic of a reduction (include/commlab.h's cl_dtype
 * and cl_op): combining two buffers element by element, avg's division,
 * the conversions of bf16 and f16, and the names the command line takes.
 *
 * Nothing here knows about ranks or time: core/comm.c's cl_reduce_local
 * checks a pattern's arguments, calls reduce_apply and has the backend
 * price it; real/mpi/ hands reduce_apply to MPI as a user operator for
 * the types MPI does not have; `commlab calibrate` times it.
 *
 * Floating types are computed in the widest of float and the type, and
 * rounded to nearest even once: for + - * / of two bf16, f16 or f32
 * values, float (24 significant bits) and double (53) hold at least twice
 * the type's bits plus two, so that single rounding of the wider result
 * is the correctly rounded result in the type.  Min and max of a NaN are
 * not defined.
 */
#ifndef CL_REDUCE_H
#define CL_REDUCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "commlab.h"

#define REDUCE_NDTYPES 6 /* cl_dtype values */
#define REDUCE_NOPS 8    /* cl_op values */

/* Whether t is an integer type (i32, i64) / op a bitwise operator. */
bool reduce_dtype_int(cl_dtype t);
bool reduce_op_bitwise(cl_op op);

/* 0 when op applies to t, else CL_EINVAL with why ("band applies to
 * integer types (i32, i64), not f32") in why[len].  Cannot fail
 * otherwise. */
int reduce_valid(cl_dtype t, cl_op op, char *why, size_t len);

/* dst[i] = dst[i] op src[i], i < count; t and op valid (reduce_valid),
 * both buffers aligned to t's size.  Cannot fail. */
void reduce_apply(void *dst, const void *src, size_t count, cl_dtype t, cl_op op);
/* buf[i] = buf[i] / n, i < count (floating: rounded once; integer:
 * truncated); n >= 1.  Cannot fail. */
void reduce_divide(void *buf, size_t count, cl_dtype t, int n);

/* The type or operator named s ("bf16", "max"); CL_EINVAL when none. */
int reduce_dtype_parse(const char *s, cl_dtype *t);
int reduce_op_parse(const char *s, cl_op *op);
/* "f64, f32, bf16, f16, i32, i64" / "sum, avg, ..., bxor". */
const char *reduce_dtype_list(void);
const char *reduce_op_list(void);

/* ---- bf16 and f16 (cannot fail) ---- */

float reduce_bf16_to_float(uint16_t h);
uint16_t reduce_float_to_bf16(float f); /* nearest even; NaN stays NaN */
float reduce_f16_to_float(uint16_t h);
uint16_t reduce_float_to_f16(float f);  /* nearest even; beyond 65504: inf */
/* v rounded to nearest even into a binary format of p significant bits
 * whose normal numbers have exponents emin .. emax (below emin: the
 * subnormals' fixed step), returned as the double that holds it exactly;
 * beyond the format's largest value: infinity. */
double reduce_round(double v, int p, int emin, int emax);

#endif
