/*
 * pages.h - giving a rank process the pages of the shared job before it
 * times anything.
 *
 * The launcher maps the job (real/job.h) before it forks, and a fork does
 * not copy the page-table entries of a shared mapping: a rank's first
 * access to each page of its rings, slots and records is a page fault in
 * that rank, however warm the pages are in the launcher.  A 4 KiB
 * ping-pong with the default 2 warm-up iterations used to pay ~10 of them
 * in its timed iterations (4-12 x too slow at 4-32 KiB).  So every rank
 * populates, right after it starts, the parts of the mapping it will use.
 */
#ifndef REAL_PAGES_H
#define REAL_PAGES_H

#include <stddef.h>

/* Maps [addr, addr + len) into this process's page tables, writable,
 * without changing a byte: madvise(MADV_POPULATE_WRITE) where the kernel
 * has it (Linux 5.14), else an atomic add of 0 to one byte of each page,
 * safe while other processes use the memory.  Whole pages around the range
 * are populated.  Cannot fail: a range the kernel refuses stays as it was
 * (its pages then fault when first used, as before). */
void pages_populate(void *addr, size_t len);

/* Keeps the heap's pages for the process's life, then writes PAGES_HEAP
 * bytes from malloc and frees them, so that the heap malloc carves its next
 * blocks from is in this process's page tables.  An eager message that
 * arrives before its receive is kept in a malloc'd copy (real/xfer.h); the
 * first such copy, often in a barrier, used to be a page fault in a timed
 * iteration.  Kept: glibc gives the top of the heap back to the kernel
 * once more than its trim threshold (128 KiB) is free there, so a rank
 * holding a few large unexpected copies at once faulted their pages in
 * again every iteration.  A 2-rank pipeline of 4 microbatches over shm,
 * whose stage 1 finds the forward messages waiting, took 33.3 us at 44 KiB
 * and 82.3 at 60 KiB, 16.7 and 22.8 with the threshold raised (the model
 * of a calibration: 17.0 and 22.9; 1,000 iterations, the AMD 2-core VM).
 * So the trim threshold is PAGES_TRIM, and copies up to PAGES_MMAP
 * (glibc's largest) come from the heap instead of a fresh mapping each:
 * with --eager-limit 4MiB the same pipeline took 621 us at 256 KiB and
 * 1.38 ms at 1 MiB, 69 and 239 us kept.  Cannot fail: without memory,
 * nothing is warmed. */
#define PAGES_HEAP (64 * 1024)
#define PAGES_TRIM (1024L * 1024 * 1024)
#define PAGES_MMAP (32L * 1024 * 1024)
void pages_warm_heap(void);

/* Writes PAGES_STACK bytes of stack below the caller's frame.  A rank is a
 * fork of the launcher: its first write to each stack page is a
 * copy-on-write or zero-fill fault, and a path first taken in a timed
 * iteration (a wait long enough to sleep, on a busy machine) may reach
 * deeper than any before.  Call it once, early, from a shallow frame. */
#define PAGES_STACK (64 * 1024)
void pages_warm_stack(void);

#endif
