/* test_cache.c - core/cache: the modes' names, and what preparing a
 * buffer does to it.  Whether a line ends up dirty, clean or in memory is
 * the hardware's and cannot be seen from here; what can be is that fresh
 * stores into every page of the buffer (a read-only page faults) without
 * changing a byte, and that warm and cold store nothing. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "commlab.h"
#include "core/cache.h"
#include "tests/testutil.h"

static void test_names(void **state)
{
    (void)state;
    static const cache_mode all[] = {CACHE_FRESH, CACHE_WARM, CACHE_COLD};
    for (size_t i = 0; i < 3; i++) {
        cache_mode m = CACHE_WARM == all[i] ? CACHE_FRESH : CACHE_WARM;
        assert_int_equal(cache_mode_parse(cache_mode_name(all[i]), &m), 0);
        assert_int_equal(m, all[i]);
    }
    assert_string_equal(cache_mode_name(CACHE_FRESH), "fresh");
    assert_string_equal(cache_mode_name(CACHE_COLD), "cold");
    cache_mode m = CACHE_COLD;
    assert_int_equal(cache_mode_parse("hot", &m), CL_EINVAL);
    assert_int_equal(cache_mode_parse("", &m), CL_EINVAL);
    assert_int_equal(m, CACHE_COLD);
    assert_int_equal(cache_mode_name((cache_mode)7)[0], '?');
    assert_true(cache_cold_supported() == (cache_cold_how() != NULL));
#if defined(__x86_64__) || defined(__aarch64__)
    assert_true(cache_cold_supported());
#endif
}

/* ---- stores into read-only pages, counted ---- */

static volatile sig_atomic_t faults;
static long page;

/* A store into a read-only page: count it and make the page writable, so
 * the store is retried and goes through. */
static void on_fault(int sig, siginfo_t *si, void *ctx)
{
    (void)sig;
    (void)ctx;
    faults++;
    uintptr_t p = (uintptr_t)si->si_addr & ~(uintptr_t)(page - 1);
    if (mprotect((void *)p, (size_t)page, PROT_READ | PROT_WRITE) != 0)
        abort();
}

/* pages pages of a known pattern, read-only; the count of stores reset. */
static unsigned char *readonly_pages(size_t pages)
{
    unsigned char *b = mmap(NULL, pages * (size_t)page, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(b != MAP_FAILED);
    for (size_t i = 0; i < pages * (size_t)page; i++)
        b[i] = (unsigned char)(i * 7 + 3);
    assert_int_equal(mprotect(b, pages * (size_t)page, PROT_READ), 0);
    faults = 0;
    return b;
}

static void assert_pattern(const unsigned char *b, size_t bytes)
{
    for (size_t i = 0; i < bytes; i++)
        if (b[i] != (unsigned char)(i * 7 + 3))
            fail_msg("byte %zu changed: %u, want %u", i, b[i], (unsigned char)(i * 7 + 3));
}

static void test_prepare(void **state)
{
    (void)state;
    page = sysconf(_SC_PAGESIZE);
    struct sigaction sa = {.sa_sigaction = on_fault, .sa_flags = SA_SIGINFO}, old_segv, old_bus;
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGSEGV, &sa, &old_segv), 0);
    assert_int_equal(sigaction(SIGBUS, &sa, &old_bus), 0);
    const size_t pages = 5, bytes = pages * (size_t)page;

    /* fresh: a store into each of the 5 pages, every line walked, no byte
     * changed */
    unsigned char *b = readonly_pages(pages);
    assert_int_equal(cache_prepare(CACHE_FRESH, b, bytes), bytes / 64);
    assert_int_equal(faults, (int)pages);
    assert_pattern(b, bytes);
    munmap(b, bytes);

    /* a block that starts and ends mid-line: the lines it touches, and
     * only its own pages */
    b = readonly_pages(pages);
    assert_int_equal(cache_prepare(CACHE_FRESH, b + 100, 2 * (size_t)page), 2 * (size_t)page / 64 + 1);
    assert_int_equal(faults, 3);
    assert_pattern(b, bytes);
    munmap(b, bytes);

    /* warm: nothing at all */
    b = readonly_pages(pages);
    assert_int_equal(cache_prepare(CACHE_WARM, b, bytes), 0);
    assert_int_equal(faults, 0);
    munmap(b, bytes);

    /* cold: every line flushed, nothing stored (a read-only page may be
     * flushed), no byte changed */
    b = readonly_pages(pages);
    assert_int_equal(cache_prepare(CACHE_COLD, b, bytes), cache_cold_supported() ? bytes / 64 : 0);
    assert_int_equal(faults, 0);
    assert_pattern(b, bytes);
    munmap(b, bytes);

    assert_int_equal(cache_prepare(CACHE_FRESH, NULL, 0), 0);
    sigaction(SIGSEGV, &old_segv, NULL);
    sigaction(SIGBUS, &old_bus, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_prepare),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
