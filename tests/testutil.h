/* testutil.h - what every cmocka test includes, plus a double comparison
 * (Debian 12's cmocka 1.1 has none) that prints the values that differ. */
#ifndef CL_TESTUTIL_H
#define CL_TESTUTIL_H

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#define assert_near(got, want, eps)                                                    \
    do {                                                                               \
        double g_ = (got), w_ = (want), e_ = (eps);                                    \
        if (!(fabs(g_ - w_) <= e_))                                                    \
            fail_msg("%s = %.17g, want %.17g (+- %g)", #got, g_, w_, e_);              \
    } while (0)

#endif
