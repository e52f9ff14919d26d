/*
 * reference.c - the references `commlab bench sim` compares its speed
 * with: SimGrid simulating a pattern bench times, built by `make bench`
 * where Debian's libsimgrid-dev is installed.  Not part of commlab.
 *
 *   simgrid_ref ring|alltoall torus|star|backbone K BYTES ALPHA_S BANDWIDTH_BPS [exact]
 *
 * prints one line, "simgrid K messages simulated_s wall_s" (wall_s: the
 * simulation alone, from simgrid_run to its return; bench times the whole
 * process besides), and nothing else (SimGrid's own log is silenced).
 *
 * Patterns.  ring: chapter 04's ring all-reduce of BYTES: 2(K-1) steps; in
 * each, every rank receives one segment from its left neighbour and sends
 * one to its right; segment j of the BYTES/8 doubles is count/K of them,
 * one more for the first count % K.  alltoall: every rank posts a receive
 * for each other rank and a send of BYTES to each (BYTES a block), all at
 * once, then waits for all of them: what commlab's alltoall-linear does
 * with K BYTES.  SimGrid's comms are rendezvous (both ends posted before
 * the bytes move), which for these patterns, whose receives are posted
 * with their sends, prices as commlab does.
 *
 * Platforms, each a host per rank with a full-duplex port (SPLITDUPLEX:
 * one resource each way, as a commlab tier port) of bandwidth B:
 *   torus     a one-dimensional torus zone, what a SimGrid user writes for
 *             a ring: each host one link, of latency alpha, to the next;
 *             a message to the next host crosses that link alone.  Only
 *             neighbours' messages price as commlab's tier (further ones
 *             cross several links), so it is for the ring.
 *   star      a cluster zone without backbone: each host a private link
 *             of latency alpha/2, a message crosses the sender's link out
 *             and the receiver's link in: alpha + n/B alone, and every
 *             port shared max-min, as on a commlab tier with --sharing
 *             maxmin (a non-blocking switch).
 *   backbone  the star behind a backbone that neither limits nor delays
 *             (FATPIPE, infinite bandwidth, zero latency): the same
 *             times, one more resource on every route.
 * The exact alpha-beta flags turn SimGrid's TCP corrections off (latency
 * and bandwidth factors 1, no cross-traffic, no TCP window bound), so the
 * simulated time is the model commlab prices; CM02 shares a port
 * max-min in inverse proportion to a route's latency, equal for every
 * route of star and backbone.  contexts/guard-size:0 spares an mprotect'd
 * guard page per actor's stack, and the raw context factory (SimGrid's
 * own assembly switch) is its fastest.
 *
 * Precision.  SimGrid settles an action that has less than
 * surf/precision (1 ns by default) left as done, so a ring whose blocks
 * differ by one double (0.16 ns at 50 GB/s) is priced as if they did not:
 * 1,000 ranks and 1 MiB come out 0.32 us short of the exact 6.036198 ms.
 * `exact` sets surf/precision to 1e-15 s, and SimGrid then prints
 * commlab's time to the last digit; it runs about a quarter slower, so
 * the speed comparison uses the default.
 */
#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int ranks;
static long bytes;
static sg_mailbox_t *box;
static long messages;

static long segment_bytes(long j)
{
    long count = bytes / 8, base = count / ranks, extra = count % ranks;
    return 8 * (base + (j < extra ? 1 : 0));
}

static void ring_main(int argc, char **argv)
{
    (void)argc;
    int me = atoi(argv[1]);
    static int payload;
    for (int step = 0; step < 2 * (ranks - 1); step++) {
        int s = step < ranks - 1 ? step : step - (ranks - 1);
        int send_seg = step < ranks - 1 ? me - s : me + 1 - s;
        long j = ((send_seg % ranks) + ranks) % ranks;
        void *got;
        sg_comm_t c[2];
        c[0] = sg_mailbox_get_async(box[me], &got);
        c[1] = sg_mailbox_put_async(box[(me + 1) % ranks], &payload, segment_bytes(j));
        sg_comm_wait_all(c, 2);
        messages++;
    }
}

static void alltoall_main(int argc, char **argv)
{
    (void)argc;
    int me = atoi(argv[1]), m = 0;
    static int payload;
    void **got = malloc((size_t)ranks * sizeof *got);
    sg_comm_t *c = malloc(2 * (size_t)ranks * sizeof *c);
    if (!got || !c)
        abort();
    for (int i = 1; i < ranks; i++)
        c[m++] = sg_mailbox_get_async(box[me], &got[i]);
    for (int i = 1; i < ranks; i++)
        c[m++] = sg_mailbox_put_async(box[(me + i) % ranks], &payload, bytes);
    sg_comm_wait_all(c, (size_t)m);
    messages += ranks - 1;
    free(c);
    free(got);
}

static double seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The platform file for `platform` (see the top), written to f. */
static int write_platform(FILE *f, const char *platform, double alpha, double bw)
{
    fprintf(f, "<?xml version='1.0'?>\n"
               "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
               "<platform version=\"4.1\">\n"
               "  <cluster id=\"c\" prefix=\"r\" suffix=\"\" radical=\"0-%d\" speed=\"1Gf\"\n"
               "           bw=\"%.17gBps\" sharing_policy=\"SPLITDUPLEX\"",
            ranks - 1, bw);
    if (strcmp(platform, "torus") == 0)
        fprintf(f, " lat=\"%.17gs\"\n           topology=\"TORUS\" topo_parameters=\"%d\"",
                alpha, ranks);
    else if (strcmp(platform, "star") == 0)
        fprintf(f, " lat=\"%.17gs\"", alpha / 2);
    else if (strcmp(platform, "backbone") == 0)
        fprintf(f, " lat=\"%.17gs\"\n           bb_bw=\"1e30Bps\" bb_lat=\"0s\" "
                   "bb_sharing_policy=\"FATPIPE\"",
                alpha / 2);
    else
        return -1;
    fprintf(f, "/>\n</platform>\n");
    return 0;
}

int main(int argc, char **argv)
{
    bool exact = argc == 8 && strcmp(argv[7], "exact") == 0;
    if (argc != 7 && !exact) {
        fprintf(stderr, "usage: simgrid_ref ring|alltoall torus|star|backbone K BYTES ALPHA_S "
                        "BANDWIDTH_BPS [exact]\n");
        return 2;
    }
    void (*rank_main)(int, char **) = strcmp(argv[1], "ring") == 0       ? ring_main
                                      : strcmp(argv[1], "alltoall") == 0 ? alltoall_main
                                                                         : NULL;
    ranks = atoi(argv[3]);
    bytes = atol(argv[4]);
    double alpha = atof(argv[5]), bw = atof(argv[6]);
    if (!rank_main || ranks < 2 || bytes < 8L * ranks || !(alpha >= 0) || !(bw > 0)) {
        fprintf(stderr, "simgrid_ref: bad arguments\n");
        return 2;
    }
    /* SimGrid first: a configuration it refuses ends the process before
     * there is a platform file to leave behind. */
    char *sg_argv[] = {argv[0],
                       "--cfg=network/model:CM02",
                       "--cfg=network/latency-factor:1",
                       "--cfg=network/bandwidth-factor:1",
                       "--cfg=network/weight-S:0",
                       "--cfg=network/crosstraffic:0",
                       "--cfg=network/TCP-gamma:0",
                       "--cfg=contexts/factory:raw",
                       "--cfg=contexts/guard-size:0",
                       "--log=root.thresh:critical",
                       exact ? "--cfg=surf/precision:1e-15" : NULL,
                       NULL};
    int sg_argc = (int)(sizeof sg_argv / sizeof *sg_argv) - (exact ? 1 : 2);
    simgrid_init(&sg_argc, sg_argv);
    char path[] = "/tmp/commlab-simgrid-XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        perror("simgrid_ref: platform file");
        return 1;
    }
    int bad = write_platform(f, argv[2], alpha, bw);
    fclose(f);
    if (bad) {
        unlink(path);
        fprintf(stderr, "simgrid_ref: unknown platform '%s'\n", argv[2]);
        return 2;
    }

    simgrid_load_platform(path);
    unlink(path);

    box = calloc((size_t)ranks, sizeof *box);
    char name[32], arg[16];
    for (int r = 0; r < ranks; r++) {
        snprintf(name, sizeof name, "r%d", r);
        box[r] = sg_mailbox_by_name(name);
        snprintf(arg, sizeof arg, "%d", r);
        char *av[] = {name, arg, NULL};
        sg_actor_create(name, sg_host_by_name(name), rank_main, 2, av);
    }
    double t0 = seconds();
    simgrid_run();
    double wall = seconds() - t0;
    printf("simgrid %d %ld %.9g %.6f\n", ranks, messages, simgrid_get_clock(), wall);
    free(box);
    return 0;
}
