/* calib_reduce.c - how fast this host reduces, per element type, for
 * `commlab calibrate` (cli/calibrate.h). */
#include <stdlib.h>

#include "cli/calibrate.h"
#include "cli/cli.h"
#include "core/reduce.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int calibrate_reduce(double out[MACHINE_NDTYPES])
{
    unsigned char *dst = malloc(CALIB_REDUCE_BYTES), *src = malloc(CALIB_REDUCE_BYTES);
    if (!dst || !src) {
        free(dst);
        free(src);
        return CL_ENOMEM;
    }
    for (int t = 0; t < MACHINE_NDTYPES; t++) {
        size_t count = CALIB_REDUCE_BYTES / cl_dtype_size((cl_dtype)t);
        /* Ones: sums stay whole numbers (bf16 and f16 stop growing at 256
         * and 2048), never subnormal, so no type takes a slow path. */
        for (size_t i = 0; i < count; i++) {
            cl_set_value((cl_dtype)t, dst, i, 1);
            cl_set_value((cl_dtype)t, src, i, 1);
        }
        reduce_apply(dst, src, count, (cl_dtype)t, CL_OP_SUM); /* pages and caches warm */
        double sample[CALIB_REDUCE_REPS];
        for (int r = 0; r < CALIB_REDUCE_REPS; r++) {
            double t0 = cli_now();
            reduce_apply(dst, src, count, (cl_dtype)t, CL_OP_SUM);
            sample[r] = cli_now() - t0;
        }
        qsort(sample, CALIB_REDUCE_REPS, sizeof sample[0], cmp_double);
        double median = sample[CALIB_REDUCE_REPS / 2];
        out[t] = median > 0 ? (double)CALIB_REDUCE_BYTES / median : 0;
    }
    free(dst);
    free(src);
    return 0;
}
