/* fuzz.h - what every libFuzzer target of tests/fuzz/ shares: the input as
 * a NUL-terminated text, as the loaders take it, and a check that aborts
 * (so libFuzzer records the input) when an invariant does not hold. */
#ifndef CL_FUZZ_H
#define CL_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A malloc'd copy of data with a NUL after it (an inner NUL ends the text
 * early, as it would in a file the loaders read). */
static inline char *fuzz_text(const uint8_t *data, size_t size)
{
    char *t = malloc(size + 1);
    if (!t)
        abort();
    memcpy(t, data, size);
    t[size] = 0;
    return t;
}

#define FUZZ_CHECK(cond)                                                            \
    do {                                                                            \
        if (!(cond)) {                                                              \
            fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                \
        }                                                                           \
    } while (0)

#endif
