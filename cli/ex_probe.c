/* ex_probe.c - reads what include/commlab_probe.h reported of a run
 * (cli/exercise.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/exercise.h"
#include "commlab.h"

/* Room for one more of *n entries of size in *v (capacity *cap). */
static int grow(void **v, size_t n, size_t *cap, size_t size)
{
    if (n < *cap)
        return 0;
    size_t more = *cap ? 2 * *cap : 64;
    void *p = realloc(*v, more * size);
    if (!p)
        return CL_ENOMEM;
    *v = p;
    *cap = more;
    return 0;
}

void ex_probe_release(probe_data *d)
{
    free(d->blocks);
    free(d->sends);
    free(d->holds);
    free(d->sums);
    free(d->calls);
    free(d->leaks);
    free(d->done);
    memset(d, 0, sizeof *d);
}

/* The room of d's growing arrays while it is read. */
typedef struct probe_room {
    size_t blocks, sends, holds, sums, calls, calls_used;
} probe_room;

#define PUSH(d, room, name, value)                                                       \
    (grow((void **)&(d)->name, (d)->n##name, &(room)->name, sizeof *(d)->name)           \
         ? CL_ENOMEM                                                                      \
         : ((d)->name[(d)->n##name++] = (value), 0))

/* One line of the report into d; lines of other shapes (and ranks out of
 * range) are ignored: the checks then find what is missing. */
static int read_line(probe_data *d, probe_room *room, const char *line)
{
    probe_msg m = {0};
    probe_block_seen b = {0};
    long rank, a;
    unsigned long long bytes, hash;
    char word[16];
    if (sscanf(line, "block %ld %llu %llx %1023s", &b.rank, &bytes, &hash, b.parts) == 4) {
        b.bytes = bytes, b.hash = hash;
        return PUSH(d, room, blocks, b);
    }
    if (sscanf(line, "send %ld %ld %llu %llx", &m.rank, &m.peer, &bytes, &hash) == 4) {
        m.bytes = bytes, m.hash = hash;
        return PUSH(d, room, sends, m);
    }
    if (sscanf(line, "holds %ld %ld %15s", &rank, &a, word) == 3)
        return PUSH(d, room, holds, ((probe_held){rank, a, strcmp(word, "arrived") == 0, false}));
    if (sscanf(line, "sum %ld %ld", &rank, &a) == 2)
        return PUSH(d, room, sums, ((probe_held){rank, a, false, false}));
    if (sscanf(line, "call %ld %15s", &rank, word) == 2) {
        char entry[48];
        size_t len = (size_t)snprintf(entry, sizeof entry, "%ld %s\n", rank, word);
        if (room->calls_used + len + 1 > room->calls) {
            char *more = realloc(d->calls, 2 * (room->calls + len + 1));
            if (!more)
                return CL_ENOMEM;
            d->calls = more;
            room->calls = 2 * (room->calls + len + 1);
        }
        memcpy(d->calls + room->calls_used, entry, len + 1);
        room->calls_used += len;
    } else if (sscanf(line, "leak %ld %ld", &rank, &a) == 2 && rank >= 0 && rank < d->nranks) {
        d->leaks[rank] = a;
    } else if (sscanf(line, "done %ld", &rank) == 1 && rank >= 0 && rank < d->nranks) {
        d->done[rank] = true;
    }
    return 0;
}

int ex_probe_read(const char *path, long nranks, probe_data *d)
{
    memset(d, 0, sizeof *d);
    d->nranks = nranks > 0 ? nranks : 1;
    d->leaks = calloc((size_t)d->nranks, sizeof *d->leaks);
    d->done = calloc((size_t)d->nranks, sizeof *d->done);
    d->calls = calloc(1, 1);
    if (!d->leaks || !d->done || !d->calls) {
        ex_probe_release(d);
        return CL_ENOMEM;
    }
    FILE *f = fopen(path, "r");
    if (!f)
        return 0; /* no report: every rank is "not done" */
    probe_room room = {.calls = 1};
    char line[1400];
    int err = 0;
    while (!err && fgets(line, sizeof line, f))
        err = read_line(d, &room, line);
    fclose(f);
    if (err)
        ex_probe_release(d);
    return err;
}

bool ex_probe_called(const probe_data *d, long rank, const char *call)
{
    char key[64];
    cli_textf(key, sizeof key, "%ld %s\n", rank, call);
    size_t n = strlen(key);
    for (const char *p = d->calls; p && *p; p = strchr(p, '\n') + 1)
        if (strncmp(p, key, n) == 0)
            return true;
    return false;
}

bool ex_probe_any_called(const probe_data *d, const char *call)
{
    for (long r = 0; r < d->nranks; r++)
        if (ex_probe_called(d, r, call))
            return true;
    return false;
}
