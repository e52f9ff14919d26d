/*
 * mpi_pingpong.c - the reference ping-pong that commlab's own benchmark is
 * compared against.
 *
 * A standalone Open MPI program (not part of libcommlab), run on exactly two
 * ranks.  It follows the OSU micro-benchmarks' method, and commlab bench
 * copies this method step for step, so the two sets of figures are directly
 * comparable:
 *
 *   sizes      MIN, 2*MIN, 4*MIN, ... while <= MAX
 *   latency    K = size <= 8 KiB ? 1000 : max(10, 1000 * 8 KiB / size) round
 *              trips of blocking MPI_Send/MPI_Recv (rank 0 sends first, rank
 *              1 echoes), timed on rank 0 with MPI_Wtime after an
 *              MPI_Barrier; one-way latency = t / (2 K)
 *   bandwidth  K = max(2, min(100, 256 MiB / (64 * size))) windows; in a
 *              window rank 0 posts 64 MPI_Isend from one buffer and waits,
 *              rank 1 posts 64 MPI_Irecv, waits and sends a 1-byte ack;
 *              bandwidth = 64 * size * K / t bytes per second
 *   samples    one untimed warm-up sample, then SAMPLES timed ones (default
 *              7); median, min and max are reported
 *
 * Usage:  mpirun -np 2 mpi_pingpong MIN_BYTES MAX_BYTES [SAMPLES]
 * Output: rank 0 prints one line per size and nothing else on stdout:
 *   size=8 lat_us_median=.. lat_us_min=.. lat_us_max=.. bw_Bps_median=.. ..
 * Errors go to stderr and the exit status is non-zero.
 */
#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 64                      /* sends in flight per bandwidth window */
#define BW_BYTES (256.0 * 1024 * 1024) /* bytes aimed for per bandwidth sample */
#define TAG_LAT 1
#define TAG_BW 2
#define TAG_ACK 3

typedef struct {
    int rank;         /* 0 sends first and prints, 1 echoes */
    char *buf;        /* max bytes, shared by all sends and receives */
    MPI_Request *req; /* WINDOW requests */
} bench;

/* Parses a whole decimal number in [lo, hi]; on error says which argument
 * (when loud: only rank 0 speaks, so the message is printed once). */
static int parse_arg(const char *text, const char *name, long lo, long hi, long *out, int loud)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (end == text || *end || errno || v < lo || v > hi) {
        if (loud)
            fprintf(stderr, "mpi_pingpong: %s must be a whole number from %ld to %ld, got '%s'\n",
                    name, lo, hi, text);
        return -1;
    }
    *out = v;
    return 0;
}

/* One latency sample: k round trips; returns seconds per one-way trip. */
static double lat_sample(const bench *b, int size, long k)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long i = 0; i < k; i++) {
        if (b->rank == 0) {
            MPI_Send(b->buf, size, MPI_CHAR, 1, TAG_LAT, MPI_COMM_WORLD);
            MPI_Recv(b->buf, size, MPI_CHAR, 1, TAG_LAT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(b->buf, size, MPI_CHAR, 0, TAG_LAT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(b->buf, size, MPI_CHAR, 0, TAG_LAT, MPI_COMM_WORLD);
        }
    }
    return (MPI_Wtime() - t0) / (2.0 * (double)k);
}

/* One bandwidth sample: k windows; returns bytes per second. */
static double bw_sample(const bench *b, int size, long k)
{
    char ack = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long i = 0; i < k; i++) {
        if (b->rank == 0) {
            for (int w = 0; w < WINDOW; w++)
                MPI_Isend(b->buf, size, MPI_CHAR, 1, TAG_BW, MPI_COMM_WORLD, &b->req[w]);
            MPI_Waitall(WINDOW, b->req, MPI_STATUSES_IGNORE);
            MPI_Recv(&ack, 1, MPI_CHAR, 1, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            for (int w = 0; w < WINDOW; w++)
                MPI_Irecv(b->buf, size, MPI_CHAR, 0, TAG_BW, MPI_COMM_WORLD, &b->req[w]);
            MPI_Waitall(WINDOW, b->req, MPI_STATUSES_IGNORE);
            MPI_Send(&ack, 1, MPI_CHAR, 0, TAG_ACK, MPI_COMM_WORLD);
        }
    }
    return (double)WINDOW * size * (double)k / (MPI_Wtime() - t0);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts v; median (mean of the middle two for an even n), min and max. */
static void stats(double *v, int n, double out[3])
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    out[0] = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    out[1] = v[0];
    out[2] = v[n - 1];
}

static int run(bench *b, long min, long max, int samples)
{
    double *v = malloc((size_t)samples * sizeof *v);
    b->buf = malloc((size_t)max);
    b->req = malloc(WINDOW * sizeof *b->req);
    if (!v || !b->buf || !b->req) {
        fprintf(stderr, "mpi_pingpong: rank %d: cannot allocate %ld bytes\n", b->rank, max);
        free(v);
        return -1;
    }
    memset(b->buf, 'a' + b->rank, (size_t)max);
    for (long size = min; size <= max; size *= 2) {
        int n = (int)size;
        long k_lat = size <= 8192 ? 1000 : 1000L * 8192 / size;
        if (k_lat < 10)
            k_lat = 10;
        long k_bw = (long)(BW_BYTES / ((double)WINDOW * size));
        k_bw = k_bw > 100 ? 100 : k_bw < 2 ? 2 : k_bw;
        double lat[3], bw[3];

        lat_sample(b, n, k_lat); /* warm-up */
        for (int s = 0; s < samples; s++)
            v[s] = lat_sample(b, n, k_lat) * 1e6;
        stats(v, samples, lat);
        bw_sample(b, n, k_bw); /* warm-up */
        for (int s = 0; s < samples; s++)
            v[s] = bw_sample(b, n, k_bw);
        stats(v, samples, bw);
        if (b->rank == 0)
            printf("size=%ld lat_us_median=%.6g lat_us_min=%.6g lat_us_max=%.6g "
                   "bw_Bps_median=%.6g bw_Bps_min=%.6g bw_Bps_max=%.6g\n",
                   size, lat[0], lat[1], lat[2], bw[0], bw[1], bw[2]);
        if (size > max / 2)
            break; /* size *= 2 would pass max (or overflow) */
    }
    fflush(stdout);
    free(v);
    return 0;
}

int main(int argc, char **argv)
{
    int rank, nranks;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    /* Every rank checks the same arguments; only rank 0 complains. */
    long min = 0, max = 0, samples = 7;
    int bad = 0;
    if (argc < 3 || argc > 4) {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -np 2 %s MIN_BYTES MAX_BYTES [SAMPLES]\n", argv[0]);
        bad = 1;
    } else if (nranks != 2) {
        if (rank == 0)
            fprintf(stderr, "mpi_pingpong: needs exactly 2 ranks, got %d\n", nranks);
        bad = 1;
    } else {
        int loud = rank == 0;
        bad = parse_arg(argv[1], "MIN_BYTES", 1, INT_MAX, &min, loud) ||
              parse_arg(argv[2], "MAX_BYTES", 1, INT_MAX, &max, loud) ||
              (argc == 4 && parse_arg(argv[3], "SAMPLES", 1, 1000, &samples, loud));
        if (!bad && max < min) {
            if (rank == 0)
                fprintf(stderr, "mpi_pingpong: MAX_BYTES (%ld) must be >= MIN_BYTES (%ld)\n",
                        max, min);
            bad = 1;
        }
    }
    bench b = {.rank = rank};
    int rc = bad ? 2 : run(&b, min, max, (int)samples) ? 1 : 0;
    if (rc == 1)
        MPI_Abort(MPI_COMM_WORLD, 1); /* the peer would wait for us forever */
    free(b.buf);
    free(b.req);
    MPI_Finalize();
    return rc;
}
