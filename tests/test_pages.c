/* test_pages.c - real/pages: what a rank process does to its memory before
 * it times anything.  Page faults are counted by the kernel
 * (getrusage's ru_minflt), not timed, so the checks hold on a busy
 * machine. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "real/pages.h"
#include "tests/testutil.h"

#define COPIES 4              /* unexpected copies a rank holds at once */
#define COPY_BYTES (60 << 10) /* each: under the eager limit, over a quarter of
                                 glibc's 128 KiB trim threshold */
#define PAGES_PER_ROUND (COPIES * COPY_BYTES / 4096)

#if !defined(__SANITIZE_ADDRESS__) /* ASan's allocator, not glibc's, serves malloc */
static long minor_faults(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

/* One iteration's unexpected copies: COPIES blocks written, then freed
 * (real/xfer's copies of eager messages that came before their receives). */
static void one_round(void)
{
    void *b[COPIES];
    for (int i = 0; i < COPIES; i++) {
        b[i] = malloc(COPY_BYTES);
        assert_non_null(b[i]);
        memset(b[i], i + 1, COPY_BYTES);
    }
    __asm__ volatile("" : : "r"(b) : "memory");
    for (int i = 0; i < COPIES; i++)
        free(b[i]);
}

/* The faults of a second round, after a first, in a fresh child process
 * (warm: with pages_warm_heap first, as every rank does). */
static long second_round_faults(bool warm)
{
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (warm)
            pages_warm_heap();
        one_round();
        long before = minor_faults();
        one_round();
        long faults = minor_faults() - before;
        _exit(write(fd[1], &faults, sizeof faults) == sizeof faults ? 0 : 1);
    }
    close(fd[1]);
    long faults = -1;
    assert_int_equal(read(fd[0], &faults, sizeof faults), sizeof faults);
    close(fd[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return faults;
}
#endif

/* A rank's heap keeps the pages of the copies it freed: the next
 * iteration's copies fault nothing.  Without pages_warm_heap, glibc gives
 * the top of the heap back once more than 128 KiB is free there, and every
 * iteration faults the copies' pages in again (the control, which shows
 * the count can tell the two apart here). */
static void test_heap_kept_between_iterations(void **state)
{
    (void)state;
#if defined(__SANITIZE_ADDRESS__)
    skip();
#else
    long cold = second_round_faults(false), warm = second_round_faults(true);
    print_message("second round of %d copies of %d KiB: %ld faults as glibc starts, %ld after "
                  "pages_warm_heap\n",
                  COPIES, COPY_BYTES >> 10, cold, warm);
    assert_true(cold >= PAGES_PER_ROUND / 4); /* 28 of 60 pages here, glibc 2.36 */
    assert_true(warm <= 2);
#endif
}

/* pages_populate maps a range without changing a byte of it. */
static void test_populate_keeps_bytes(void **state)
{
    (void)state;
    size_t len = 5 * 4096 + 123;
    unsigned char *p = malloc(len + 4096);
    assert_non_null(p);
    for (size_t i = 0; i < len + 4096; i++)
        p[i] = (unsigned char)(i * 7);
    pages_populate(p + 100, len);
    for (size_t i = 0; i < len + 4096; i++)
        assert_int_equal(p[i], (unsigned char)(i * 7));
    pages_populate(p, 0);
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_heap_kept_between_iterations),
        cmocka_unit_test(test_populate_keeps_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
