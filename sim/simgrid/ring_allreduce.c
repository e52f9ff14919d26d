/*
 * ring_allreduce.c - the reference `commlab bench sim` compares its speed
 * with: SimGrid simulating the uncontended ring all-reduce that bench
 * times (K ranks, n bytes, the tier's alpha and B), built by `make bench`
 * where Debian's libsimgrid-dev is installed.  Not part of commlab.
 *
 *   simgrid_ring K BYTES ALPHA_S BANDWIDTH_BPS
 *
 * prints one line, "simgrid K messages simulated_s wall_s", and nothing
 * else (SimGrid's own log is silenced).
 *
 * The platform is a cluster of K hosts, each with a private full-duplex
 * link (SPLITDUPLEX: one resource each way, as a commlab tier port) of
 * bandwidth B and latency alpha/2, behind a backbone that neither limits
 * nor delays (FATPIPE, infinite bandwidth, zero latency): a message
 * crosses two host links, alpha + n/B when alone, as on a commlab tier.
 * The exact alpha-beta flags turn SimGrid's TCP corrections off (latency
 * and bandwidth factors 1, no cross-traffic, no TCP window bound), so the
 * simulated time is the model commlab prices.
 *
 * The algorithm is chapter 04's ring: 2(K-1) steps; in each, every rank
 * receives one segment from its left neighbour and sends one to its
 * right; segment j of the n/8 doubles is count/K of them, one more for
 * the first count % K.  SimGrid's comms are rendezvous (both ends posted
 * before the bytes move), which for this lockstep pattern prices as
 * commlab's eager sends do.
 */
#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int ranks;
static long count; /* doubles */
static sg_mailbox_t *box;
static long messages;

static long segment_bytes(long j)
{
    long base = count / ranks, extra = count % ranks;
    return 8 * (base + (j < extra ? 1 : 0));
}

static void rank_main(int argc, char **argv)
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

static double seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: simgrid_ring K BYTES ALPHA_S BANDWIDTH_BPS\n");
        return 2;
    }
    ranks = atoi(argv[1]);
    count = atol(argv[2]) / 8;
    double alpha = atof(argv[3]), bw = atof(argv[4]);
    if (ranks < 2 || count < ranks || !(alpha >= 0) || !(bw > 0)) {
        fprintf(stderr, "simgrid_ring: bad arguments\n");
        return 2;
    }
    char path[] = "/tmp/commlab-simgrid-XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        perror("simgrid_ring: platform file");
        return 1;
    }
    fprintf(f, "<?xml version='1.0'?>\n"
               "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
               "<platform version=\"4.1\">\n"
               "  <cluster id=\"c\" prefix=\"r\" suffix=\"\" radical=\"0-%d\" speed=\"1Gf\"\n"
               "           bw=\"%.17gBps\" lat=\"%.17gs\" sharing_policy=\"SPLITDUPLEX\"\n"
               "           bb_bw=\"1e30Bps\" bb_lat=\"0s\" bb_sharing_policy=\"FATPIPE\"/>\n"
               "</platform>\n",
            ranks - 1, bw, alpha / 2);
    fclose(f);

    char *sg_argv[] = {argv[0],
                       "--cfg=network/model:CM02",
                       "--cfg=network/latency-factor:1",
                       "--cfg=network/bandwidth-factor:1",
                       "--cfg=network/weight-S:0",
                       "--cfg=network/crosstraffic:0",
                       "--cfg=network/TCP-gamma:0",
                       "--cfg=contexts/factory:raw",
                       "--log=root.thresh:critical",
                       NULL};
    int sg_argc = (int)(sizeof sg_argv / sizeof *sg_argv) - 1;
    simgrid_init(&sg_argc, sg_argv);
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
