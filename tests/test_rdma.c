/* test_rdma.c - the rdma backend end to end through real_run(), once over
 * libfabric's tcp provider and once over its shm provider: the cases every
 * real backend passes (tests/real_cases.h), then what only rdma has: the
 * rendezvous by RDMA read (proved by the rank's counters), the
 * registration cache, the rendezvous by tagged messages, whose matching a
 * provider gets (commlab's own on libfabric 1.17's shm, see
 * real/rdma_info.c's rdma__own_match(); forced on tcp too), messages and
 * requests to send that arrive before their receive, nothing left in
 * /dev/shm after a killed rank or a deadlock, a killed launcher's regions
 * removed by the next run, and the error for a provider that is not here. */
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <sys/mman.h>

static const char *provider = "tcp"; /* the provider the cases run on (the group's) */
static bool no_rma;                  /* rendezvous by tagged messages */
static bool own_match;               /* commlab's matching even where libfabric's is trusted */

#define REAL_BACKEND "rdma"
#define REAL_COPIES {SHM_COPY_AUTO} /* no choice of copy: one run each */
#define REAL_KILL_SIGNAL 1          /* the launcher names the killed rank's signal */
#define REAL_OPTS_EXTRA .rdma = {.provider = provider, .no_rma = no_rma, .own_match = own_match},
#include "tests/real_cases.h"

#include "real/rdma.h"
#include "real/rdma_lib.h"

static bool fi_version_is_1_17_or_older(void)
{
    cl_diag d = {{0}};
    if (rdma__lib_load(&d))
        fail_msg("%s", d.msg);
    return fi_version() <= FI_VERSION(1, 17);
}

/* Whether the run's messages are matched by commlab: forced, or on the
 * provider whose tagged matching this libfabric gets wrong. */
static bool matched_here(void)
{
    return own_match || (strcmp(provider, "shm") == 0 && fi_version_is_1_17_or_older());
}

/* ---- which path a rendezvous took ---- */

/* Whether messages above the eager limit are pulled by RDMA read: unless
 * the run asks for tagged messages. */
static bool by_read(void)
{
    return !no_rma;
}

/* Two rounds of a ping-pong of a->bytes; each rank then checks its
 * counters: every message above the eager limit it received came by RDMA
 * read (or by tagged messages with no_rma), and the second round's sends
 * found their buffer registered. */
static int rendezvous_path(cl_comm *c, const cl_args *a)
{
    unsigned char *buf = cl_alloc(c, a->bytes);
    int me = cl_rank(c), peer = 1 - me;
    const rdma_stats *st = rdma_stats_of(c);
    if (!st)
        return cl_fail(c, "not an rdma rank");
    if (strcmp(rdma_provider_of(c), provider) != 0)
        return cl_fail(c, "provider '%s', want '%s'", rdma_provider_of(c), provider);
    rdma_stats before = *st;
    for (int round = 0; round < 2; round++) {
        if (me == 0) {
            cl_fill(c, buf, a->bytes, 5 + (unsigned long long)round);
            CL_TRY(cl_send(c, buf, a->bytes, peer, 0));
            CL_TRY(cl_recv(c, buf, a->bytes, peer, 0, NULL));
        } else {
            CL_TRY(cl_recv(c, buf, a->bytes, peer, 0, NULL));
            CL_TRY(cl_verify(c, buf, a->bytes, 5 + (unsigned long long)round, "pulled"));
            CL_TRY(cl_send(c, buf, a->bytes, peer, 0));
        }
    }
    uint64_t reads = st->rma_reads - before.rma_reads;
    uint64_t tagged = st->tagged_rdv - before.tagged_rdv;
    if (!by_read() ? reads != 0 || tagged != 2 : reads != 2 || tagged != 0)
        return cl_fail(c, "rank %d received %llu messages by RDMA read and %llu by tagged "
                       "messages", me, (unsigned long long)reads, (unsigned long long)tagged);
    /* Whose matching: commlab's counts what it matched. */
    if (matched_here() != (st->own_matched > 0))
        return cl_fail(c, "rank %d on %s: commlab matched %llu messages", me, provider,
                       (unsigned long long)st->own_matched);
    /* The same buffer every round: registered once, in the warm-up. */
    if (by_read() && (st->mr_regs != 1 || st->mr_hits < 1))
        return cl_fail(c, "rank %d: %llu registrations, %llu cache hits", me,
                       (unsigned long long)st->mr_regs, (unsigned long long)st->mr_hits);
    return 0;
}

static void test_rma_read_path(void **state)
{
    (void)state;
    static const uint64_t sizes[] = {100 * KiB, 4 * MiB};
    for (size_t i = 0; i < 2; i++) {
        run r;
        setup s = {.check = true};
        run_pattern(&r, rendezvous_path, 2, sizes[i], NULL, &s);
        if (r.res.status)
            fail_msg("%s, %llu bytes: %s", provider, (unsigned long long)sizes[i],
                     r.res.diag.msg);
        run_release(&r);
    }
}

static void test_tagged_rendezvous(void **state)
{
    (void)state;
    no_rma = true;
    run r;
    setup s = {.check = true};
    run_pattern(&r, rendezvous_path, 2, 1 * MiB, NULL, &s);
    no_rma = false;
    if (r.res.status)
        fail_msg("%s: %s", provider, r.res.diag.msg);
    run_release(&r);
    /* Every pattern, the truncation and the deadlock on that path too. */
    no_rma = true;
    run_pattern(&r, allreduce_ring, 4, 1 * MiB, NULL, &(setup){.check = true});
    if (r.res.status)
        fail_msg("%s, allreduce-ring: %s", provider, r.res.diag.msg);
    run_release(&r);
    expect_trunc(too_small, 1 * MiB, SHM_COPY_AUTO);
    expect_trunc(too_small_late, 1 * MiB, SHM_COPY_AUTO);
    run_pattern(&r, deadlock, 2, 1 * MiB, NULL, &(setup){.deadlock_timeout = 0.2});
    no_rma = false;
    assert_int_equal(r.res.status, CL_EDEADLOCK);
    run_release(&r);
    assert_no_children();
}

/* The registration cache keys by (address, length): the first 150 KiB of
 * a 200 KiB buffer is a new registration, the whole buffer again a hit. */
static int mr_keys(cl_comm *c, const cl_args *a)
{
    unsigned char *buf = cl_alloc(c, a->bytes);
    static const size_t part[] = {200 * KiB, 150 * KiB, 200 * KiB};
    const rdma_stats *st = rdma_stats_of(c);
    for (int i = 0; i < 3; i++) {
        if (cl_rank(c) == 0) {
            cl_fill(c, buf, part[i], 40 + (unsigned long long)i);
            CL_TRY(cl_send(c, buf, part[i], 1, i));
        } else {
            CL_TRY(cl_recv(c, buf, part[i], 0, i, NULL));
            CL_TRY(cl_verify(c, buf, part[i], 40 + (unsigned long long)i, "pulled"));
        }
    }
    if (cl_rank(c) == 0 && (st->mr_regs != 2 || st->mr_hits != 1))
        return cl_fail(c, "%llu registrations and %llu hits, want 2 and 1",
                       (unsigned long long)st->mr_regs, (unsigned long long)st->mr_hits);
    return 0;
}

static void test_mr_keys(void **state)
{
    (void)state;
    run r;
    run_pattern(&r, mr_keys, 2, 200 * KiB, NULL, &(setup){.check = true, .warmup = -1,
                                                         .iters = 1});
    if (r.res.status)
        fail_msg("%s: %s", provider, r.res.diag.msg);
    run_release(&r);
}

/* ---- messages that arrive before their receive ---- */

#define EARLY_MSGS 40

/* Rank 0 posts EARLY_MSGS eager messages (tags 0..EARLY_MSGS-1) and one
 * rendezvous (tag EARLY_MSGS) while rank 1 is busy, after the two have
 * exchanged a rendezvous (what made libfabric 1.17's shm provider lose
 * messages); rank 1 then receives them newest first, by tag and by
 * CL_ANY_TAG for the last, and checks every byte. */
static int early_arrivals(cl_comm *c, const cl_args *a)
{
    enum { SMALL = 1000 };
    unsigned char *big = cl_alloc(c, a->bytes);
    unsigned char *small = cl_alloc(c, (size_t)SMALL * EARLY_MSGS);
    int me = cl_rank(c);
    if (me > 1)
        return 0;
    if (me == 0) {
        CL_TRY(cl_send(c, big, a->bytes, 1, 99));
        cl_request *req[EARLY_MSGS + 1];
        for (int i = 0; i < EARLY_MSGS; i++) {
            cl_fill(c, small + (size_t)i * SMALL, SMALL, 100 + (unsigned long long)i);
            CL_TRY(cl_isend(c, small + (size_t)i * SMALL, SMALL, 1, i, &req[i]));
        }
        cl_fill(c, big, a->bytes, 7);
        CL_TRY(cl_isend(c, big, a->bytes, 1, EARLY_MSGS, &req[EARLY_MSGS]));
        return cl_waitall(c, EARLY_MSGS + 1, req, NULL);
    }
    CL_TRY(cl_recv(c, big, a->bytes, 0, 99, NULL));
    CL_TRY(cl_compute(c, 0.05)); /* everything arrives meanwhile */
    CL_TRY(cl_recv(c, big, a->bytes, 0, EARLY_MSGS, NULL));
    CL_TRY(cl_verify(c, big, a->bytes, 7, "the rendezvous"));
    for (int i = EARLY_MSGS - 1; i >= 0; i--) {
        cl_status st;
        CL_TRY(cl_recv(c, small, SMALL, 0, i == 0 ? CL_ANY_TAG : i, &st));
        if (st.tag != i)
            return cl_fail(c, "wanted tag %d, got %d", i, st.tag);
        CL_TRY(cl_verify(c, small, SMALL, 100 + (unsigned long long)i, "an early message"));
    }
    return 0;
}

static void test_early_arrivals(void **state)
{
    (void)state;
    run r;
    run_pattern(&r, early_arrivals, 2, 100 * KiB, NULL, &(setup){.check = true, .iters = 5});
    if (r.res.status)
        fail_msg("%s: %s", provider, r.res.diag.msg);
    run_release(&r);
    assert_no_children();
}

/* commlab's matching on tcp, whose own is trusted: the same protocol as on
 * libfabric 1.17's shm, tested beside libfabric's on the same provider. */
static void test_own_match_forced(void **state)
{
    own_match = true;
    test_rma_read_path(state);
    test_early_arrivals(state);
    run r;
    run_pattern(&r, allreduce_ring, 4, 1 * MiB, NULL, &(setup){.check = true});
    if (r.res.status)
        fail_msg("%s, allreduce-ring: %s", provider, r.res.diag.msg);
    run_release(&r);
    expect_trunc(too_small, 1 * MiB, SHM_COPY_AUTO);
    expect_trunc(too_small_late, 4096, SHM_COPY_AUTO);
    own_match = false;
    assert_no_children();
}

/* ---- nothing left behind ---- */

/* Entries of /dev/shm whose name holds this process's launcher prefix
 * ("commlab-PID-") or a rank's pid as the shm provider names regions by
 * default: none may outlive a run. */
static int leftovers(void)
{
    char mine[64];
    snprintf(mine, sizeof mine, "commlab-%d-", (int)getpid());
    DIR *dir = opendir("/dev/shm");
    if (!dir)
        return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL)
        if (strncmp(e->d_name, mine, strlen(mine)) == 0) {
            fprintf(stderr, "left in /dev/shm: %s\n", e->d_name);
            n++;
        }
    closedir(dir);
    return n;
}

static void test_nothing_left(void **state)
{
    (void)state;
    run r;
    run_pattern(&r, suicide, 4, 0, NULL, NULL);
    assert_int_equal(r.res.status, CL_EPEER);
    assert_contains(r.res.diag.msg, "SIGKILL");
    run_release(&r);
    assert_int_equal(leftovers(), 0);
    run_pattern(&r, deadlock, 2, 1 * MiB, NULL, &(setup){.deadlock_timeout = 0.2});
    assert_int_equal(r.res.status, CL_EDEADLOCK);
    run_release(&r);
    assert_int_equal(leftovers(), 0);
    run_pattern(&r, ring, 4, 1 * MiB, NULL, NULL);
    assert_int_equal(r.res.status, 0);
    run_release(&r);
    assert_int_equal(leftovers(), 0);
    assert_no_children();
}

/* A launcher killed outright (SIGKILL) cannot remove its ranks' regions:
 * the next run removes every region of this user whose launcher is gone,
 * and only those.  The orphans are made here, as a killed launcher leaves
 * them ("commlab-PID-NONCE-RANK", 16 MiB each on libfabric 1.17). */
static bool shm_exists(const char *name)
{
    char path[128];
    snprintf(path, sizeof path, "/dev/shm/%s", name);
    return access(path, F_OK) == 0;
}

static void make_region(const char *name)
{
    int fd = shm_open(name, O_CREAT | O_RDWR, 0600);
    assert_true(fd >= 0);
    close(fd);
}

static void test_orphans_reaped(void **state)
{
    (void)state;
    pid_t dead = fork(); /* a pid whose process is gone */
    if (dead == 0)
        _exit(0);
    assert_true(dead > 0);
    waitpid(dead, NULL, 0);
    char orphan0[64], orphan1[64], alive[64], other[64];
    snprintf(orphan0, sizeof orphan0, "commlab-%d-00112233aabbccdd-0", (int)dead);
    snprintf(orphan1, sizeof orphan1, "commlab-%d-00112233aabbccdd-1", (int)dead);
    /* a live launcher's (this process's parent), and a name not of that form */
    snprintf(alive, sizeof alive, "commlab-%d-00112233aabbccdd-0", (int)getppid());
    snprintf(other, sizeof other, "commlab-%d-notanonce-0", (int)dead);
    const char *all[] = {orphan0, orphan1, alive, other};
    for (size_t i = 0; i < 4; i++)
        make_region(all[i]);
    run r;
    run_pattern(&r, ring, 2, 8, NULL, NULL);
    assert_int_equal(r.res.status, 0);
    run_release(&r);
    bool gone0 = !shm_exists(orphan0), gone1 = !shm_exists(orphan1);
    bool kept_alive = shm_exists(alive), kept_other = shm_exists(other);
    for (size_t i = 0; i < 4; i++)
        shm_unlink(all[i]);
    assert_true(gone0);
    assert_true(gone1);
    assert_true(kept_alive);
    assert_true(kept_other);
}

/* ---- a provider that is not here ---- */

static void test_missing_provider(void **state)
{
    (void)state;
    const char *saved = provider;
    provider = "carrier-pigeon";
    run r;
    assert_int_equal(try_pattern(&r, ring, 2, 8, NULL, NULL), CL_EINVAL);
    provider = saved;
    assert_contains(r.res.diag.msg, "provider 'carrier-pigeon' is not available here");
    assert_contains(r.res.diag.msg, "available: ");
    assert_contains(r.res.diag.msg, "tcp");
    run_release(&r);
    cl_diag d = {{0}};
    assert_int_equal(rdma_provider_check("verbs-that-is-not-here", &d), CL_EINVAL);
    assert_int_equal(rdma_provider_check("tcp", &d), 0);
    assert_int_equal(rdma_provider_check("auto", &d), 0);
    assert_int_equal(rdma_provider_check("shm", &d), 0);
    char name[32];
    assert_int_equal(rdma_provider_auto(name, sizeof name, false, &d), 0);
    assert_string_equal(name, "shm"); /* one host: shared memory */
    assert_int_equal(rdma_provider_auto(name, sizeof name, true, &d), 0);
    assert_string_equal(name, "tcp"); /* across hosts, with no NIC here */
    assert_no_children();
}

/* `commlab fabric`'s list has both providers, with what they can do. */
static void test_providers_list(void **state)
{
    (void)state;
    rdma_provider_desc *v;
    size_t n;
    cl_diag d = {{0}};
    assert_int_equal(rdma_providers_list(&v, &n, &d), 0);
    bool shm = false, tcp = false;
    for (size_t i = 0; i < n; i++) {
        shm |= strcmp(v[i].name, "shm") == 0 && v[i].tagged && v[i].rma &&
               v[i].own_match == fi_version_is_1_17_or_older();
        tcp |= strcmp(v[i].name, "tcp") == 0 && v[i].tagged && v[i].rma && !v[i].own_match;
    }
    free(v);
    assert_true(shm);
    assert_true(tcp);
}

/* Eager messages above the inject size: with commlab's matching and RDMA
 * reads the receiver reads each one from the sender's buffer (no copy);
 * otherwise each goes from a copy, kept and reused once the provider is
 * done with it, so 40 sends, each answered before the next, allocate a
 * handful.  Every message still arrives intact. */
#define COPIED_SENDS 40

static int eager_copies(cl_comm *c, const cl_args *a)
{
    unsigned char *buf = cl_alloc(c, a->bytes);
    const rdma_stats *st = rdma_stats_of(c);
    rdma_stats before = *st;
    for (int i = 0; i < COPIED_SENDS; i++) {
        if (cl_rank(c) == 0) {
            cl_fill(c, buf, a->bytes, 70 + (unsigned long long)i);
            CL_TRY(cl_send(c, buf, a->bytes, 1, 3));
            CL_TRY(cl_recv(c, NULL, 0, 1, 4, NULL));
        } else {
            CL_TRY(cl_recv(c, buf, a->bytes, 0, 3, NULL));
            CL_TRY(cl_verify(c, buf, a->bytes, 70 + (unsigned long long)i, "copied"));
            CL_TRY(cl_send(c, NULL, 0, 0, 4));
        }
    }
    uint64_t copies = st->copies - before.copies, allocs = st->copy_allocs - before.copy_allocs;
    uint64_t reads = st->eager_reads - before.eager_reads;
    uint64_t want_copies = matched_here() && by_read() ? 0 : COPIED_SENDS;
    if (cl_rank(c) == 0 && (copies != want_copies || reads != COPIED_SENDS - want_copies ||
                            allocs > 8))
        return cl_fail(c, "%llu messages from a copy (want %llu), %llu read from the buffer "
                       "(want %llu), %llu copies allocated (want at most 8, the ones kept)",
                       (unsigned long long)copies, (unsigned long long)want_copies,
                       (unsigned long long)reads,
                       (unsigned long long)(COPIED_SENDS - want_copies),
                       (unsigned long long)allocs);
    return 0;
}

static void test_eager_copies_reused(void **state)
{
    (void)state;
    run r;
    /* 16 KiB: above the inject size of shm (4 KiB) and tcp, below the
     * 64 KiB eager limit. */
    run_pattern(&r, eager_copies, 2, 16 * KiB, NULL, &(setup){.check = true});
    if (r.res.status)
        fail_msg("%s: %s", provider, r.res.diag.msg);
    run_release(&r);
}

/* Head to head, eager above the inject size: both ranks send first, then
 * receive; with commlab's matching each send waits for the other rank's
 * transport to read it, never for its receive, so neither waits for the
 * other (a deadlock here would be one the model does not have).  Rank 1
 * also sends a second message before rank 0 posts its receive, and rank 0
 * posts one receive too small for it: the read lands in a copy, the
 * truncation is reported, the send completes. */
static int eager_head_to_head(cl_comm *c, const cl_args *a)
{
    unsigned char *out = cl_alloc(c, a->bytes), *in = cl_alloc(c, a->bytes);
    int me = cl_rank(c), peer = 1 - me;
    cl_fill(c, out, a->bytes, 30 + (unsigned long long)me);
    CL_TRY(cl_send(c, out, a->bytes, peer, 1));
    CL_TRY(cl_recv(c, in, a->bytes, peer, 1, NULL));
    CL_TRY(cl_verify(c, in, a->bytes, 30 + (unsigned long long)peer, "head to head"));
    /* The second message: sent before its receive is posted (the barrier),
     * taken by a receive of the right size. */
    if (me == 1) {
        cl_fill(c, out, a->bytes, 40);
        CL_TRY(cl_send(c, out, a->bytes, 0, 2));
    }
    CL_TRY(cl_barrier(c));
    if (me == 0) {
        CL_TRY(cl_recv(c, in, a->bytes, 1, 2, NULL));
        CL_TRY(cl_verify(c, in, a->bytes, 40, "arrived before its receive"));
    }
    const rdma_stats *st = rdma_stats_of(c);
    if (matched_here() && by_read() && st->eager_reads < 1)
        return cl_fail(c, "rank %d read no eager message", me);
    return 0;
}

static void test_eager_head_to_head(void **state)
{
    (void)state;
    static const uint64_t sizes[] = {4 * KiB + 1, 64 * KiB};
    for (size_t i = 0; i < 2; i++) {
        run r;
        run_pattern(&r, eager_head_to_head, 2, sizes[i], NULL,
                    &(setup){.check = true, .deadlock_timeout = 5});
        if (r.res.status)
            fail_msg("%s, %llu bytes: %s", provider, (unsigned long long)sizes[i],
                     r.res.diag.msg);
        run_release(&r);
    }
    /* Into 1 KiB: refused by a posted receive, and read into a copy first
     * when the receive comes after a barrier; the send completes. */
    cl_pattern_fn *const small[] = {too_small, too_small_late};
    for (size_t i = 0; i < 2; i++) {
        run r;
        run_pattern(&r, small[i], 2, 16 * KiB, NULL, &(setup){0});
        if (r.res.status != CL_ETRUNC)
            fail_msg("%s, 16 KiB into 1 KiB: status %s, want CL_ETRUNC: %s", provider,
                     cl_errname(r.res.status), r.res.diag.msg);
        assert_contains(r.res.diag.msg, "16 KiB");
        run_release(&r);
        assert_no_children();
    }
}

/* ---- reads counted, FINs that wait (real/rdma.c) ---- */

/* Whether senders learn of reads from the provider's remote-read counter:
 * commlab's matching with RDMA reads on the shm provider. */
static bool reads_counted_here(void)
{
    return matched_here() && by_read() && strcmp(provider, "shm") == 0;
}

#define COUNTED_ROUNDS 100

/* Rank 0 tells rank 1 outside commlab that its ping's send completed
 * (counted_pingpong): a pipe made before the ranks are forked. */
static int counted_go[2] = {-1, -1};

/* A ping-pong of eager messages read from the sender's buffer: each send
 * waits alone, so its reads are counted and its FIN waits, riding along
 * with the pong's request to send.  Rank 1, once it has read a ping,
 * waits on the pipe (outside commlab: it neither polls nor sends its FIN)
 * until rank 0's send of it has completed, which only the counter can
 * then do, seen by rank 0's polling: every ping is completed by the
 * counter, whatever the machine's load (before, the test asked for one of
 * 100 and the pong's request to send, with the FIN, won every race on a
 * loaded machine).  Every message arrives intact; the FIN rode along
 * every time. */
static int counted_pingpong(cl_comm *c, const cl_args *a)
{
    unsigned char *out = cl_alloc(c, a->bytes), *in = cl_alloc(c, a->bytes), go = 1;
    int me = cl_rank(c), peer = 1 - me;
    const rdma_stats *st = rdma_stats_of(c);
    rdma_stats before = *st;
    for (int i = 0; i < COUNTED_ROUNDS; i++) {
        if (me == 0) {
            cl_fill(c, out, a->bytes, 200 + (unsigned long long)i);
            cl_request *ping;
            bool done = false;
            CL_TRY(cl_isend(c, out, a->bytes, peer, 9, &ping));
            while (!done) /* polled, never asleep: a read counted wakes no sleeper */
                CL_TRY(cl_test(c, &ping, &done, NULL));
            if (reads_counted_here() && write(counted_go[1], &go, 1) != 1)
                return cl_fail(c, "write to rank 1: %s", strerror(errno));
            CL_TRY(cl_recv(c, in, a->bytes, peer, 9, NULL));
            CL_TRY(cl_verify(c, in, a->bytes, 300 + (unsigned long long)i, "pong"));
        } else {
            CL_TRY(cl_recv(c, in, a->bytes, peer, 9, NULL));
            CL_TRY(cl_verify(c, in, a->bytes, 200 + (unsigned long long)i, "ping"));
            /* Bounded only so that a counter that never completes the
             * send fails the test instead of hanging it. */
            struct pollfd pf = {.fd = counted_go[0], .events = POLLIN};
            if (reads_counted_here() &&
                (poll(&pf, 1, 60000) != 1 || read(counted_go[0], &go, 1) != 1))
                return cl_fail(c, "round %d: rank 0's send of the ping never completed "
                               "while rank 1 held its FIN", i);
            cl_fill(c, out, a->bytes, 300 + (unsigned long long)i);
            CL_TRY(cl_send(c, out, a->bytes, peer, 9));
        }
    }
    uint64_t counted = st->reads_counted - before.reads_counted;
    uint64_t along = st->fins_along - before.fins_along;
    /* Rank 1's pongs carry the FINs of rank 0's pings; rank 0's pings,
     * from the second on, those of rank 1's pongs (the first carries the
     * last pong's of the iteration before only if the barrier between
     * them was too quick to send it). */
    uint64_t lo = reads_counted_here() ? COUNTED_ROUNDS - (me == 0) : 0;
    uint64_t hi = reads_counted_here() ? COUNTED_ROUNDS : 0;
    if (along < lo || along > hi)
        return cl_fail(c, "rank %d: %llu FINs rode along, want %llu to %llu", me,
                       (unsigned long long)along, (unsigned long long)lo, (unsigned long long)hi);
    /* Rank 0's pings: every one by the counter.  Rank 1's pongs: by the
     * counter or by the FIN riding along with the next ping, whichever
     * rank 1 sees first. */
    uint64_t want_lo = reads_counted_here() && me == 0 ? COUNTED_ROUNDS : 0;
    uint64_t want_hi = reads_counted_here() ? COUNTED_ROUNDS : 0;
    if (counted < want_lo || counted > want_hi)
        return cl_fail(c, "rank %d: %llu sends completed by the read counter on %s, want "
                       "%llu to %llu", me, (unsigned long long)counted, provider,
                       (unsigned long long)want_lo, (unsigned long long)want_hi);
    return 0;
}

/* Rank 0's eager send to rank 1 waits alone (counted, its FIN may wait),
 * then a rendezvous send to rank 2 joins it, so the counter can no longer
 * say whose read it counts.  Rank 2 posts that receive only once rank 0
 * has finished the first send and told it so: the first send must be
 * completed by its FIN, which rank 1 sends once it waits with nothing to
 * do (in the barrier), or rank 0 and rank 2 wait for each other. */
static int counted_then_rendezvous(cl_comm *c, const cl_args *a)
{
    size_t big = 4 * a->bytes;
    unsigned char *buf = cl_alloc(c, big), go = 1;
    int me = cl_rank(c);
    if (me == 0) {
        cl_request *first, *second;
        cl_fill(c, buf, big, 60);
        CL_TRY(cl_isend(c, buf, a->bytes, 1, 1, &first));
        CL_TRY(cl_isend(c, buf, big, 2, 2, &second));
        CL_TRY(cl_wait(c, &first, NULL));
        CL_TRY(cl_send(c, &go, 1, 2, 3));
        CL_TRY(cl_wait(c, &second, NULL));
    } else if (me == 1) {
        CL_TRY(cl_recv(c, buf, a->bytes, 0, 1, NULL));
        CL_TRY(cl_verify(c, buf, a->bytes, 60, "counted"));
    } else {
        CL_TRY(cl_recv(c, &go, 1, 0, 3, NULL));
        CL_TRY(cl_recv(c, buf, big, 0, 2, NULL));
        CL_TRY(cl_verify(c, buf, big, 60, "after the counted one"));
    }
    return cl_barrier(c);
}

static void test_reads_counted(void **state)
{
    (void)state;
    static const uint64_t sizes[] = {4 * KiB + 1, 64 * KiB};
    assert_int_equal(pipe(counted_go), 0);
    for (size_t i = 0; i < 2; i++) {
        run r;
        run_pattern(&r, counted_pingpong, 2, sizes[i], NULL, &(setup){.check = true});
        if (r.res.status)
            fail_msg("%s, %llu bytes: %s", provider, (unsigned long long)sizes[i],
                     r.res.diag.msg);
        run_release(&r);
    }
    close(counted_go[0]);
    close(counted_go[1]);
    /* 32 KiB eager, 128 KiB by rendezvous. */
    run r;
    run_pattern(&r, counted_then_rendezvous, 3, 32 * KiB, NULL,
                &(setup){.check = true, .deadlock_timeout = 5});
    if (r.res.status)
        fail_msg("%s: %s (%s)", provider, r.res.diag.msg, cl_errname(r.res.status));
    run_release(&r);
    assert_no_children();
}

/* The cases, once per provider (the group's setup names it). */
#define RDMA_CASES                                                                      \
    REAL_CASES, cmocka_unit_test(test_rma_read_path), cmocka_unit_test(test_tagged_rendezvous), \
        cmocka_unit_test(test_mr_keys), cmocka_unit_test(test_early_arrivals),          \
        cmocka_unit_test(test_eager_copies_reused), cmocka_unit_test(test_eager_head_to_head), \
        cmocka_unit_test(test_reads_counted), cmocka_unit_test(test_nothing_left)

static int on_tcp(void **state)
{
    (void)state;
    provider = "tcp";
    return 0;
}

static int on_shm(void **state)
{
    (void)state;
    provider = "shm";
    return 0;
}

int main(void)
{
    const struct CMUnitTest tcp_tests[] = {
        RDMA_CASES,
        cmocka_unit_test(test_own_match_forced),
        cmocka_unit_test(test_missing_provider),
        cmocka_unit_test(test_providers_list),
    };
    const struct CMUnitTest shm_tests[] = {RDMA_CASES, cmocka_unit_test(test_orphans_reaped)};
    int failed = cmocka_run_group_tests_name("rdma over tcp", tcp_tests, on_tcp, NULL);
    failed += cmocka_run_group_tests_name("rdma over shm", shm_tests, on_shm, NULL);
    return failed;
}
