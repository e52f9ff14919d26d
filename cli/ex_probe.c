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
    free(d->lands);
    free(d->holds);
    free(d->sums);
    free(d->calls);
    free(d->leaks);
    free(d->done);
    memset(d, 0, sizeof *d);
}

/* One line of the report into d; lines of other shapes (and ranks out of
 * range) are ignored: the checks then find what is missing. */
static int read_line(probe_data *d, const char *line, size_t *cap_blocks, size_t *cap_sends,
                     size_t *cap_lands,
                     size_t *cap_holds, size_t *cap_sums, size_t *len_calls,
                     size_t *cap_calls)
{
    probe_msg m = {0};
    long rank, a;
    unsigned long long bytes, hash;
    char word[16], how[16];
    probe_block_seen b = {0};
    if (sscanf(line, "block %ld %llu %llx %1023s", &b.rank, &bytes, &hash, b.parts) == 4) {
        b.bytes = bytes, b.hash = hash;
        if (grow((void **)&d->blocks, d->nblocks, cap_blocks, sizeof *d->blocks))
            return CL_ENOMEM;
        d->blocks[d->nblocks++] = b;
    } else if (sscanf(line, "send %ld %ld %ld %llu %llx", &m.rank, &m.k, &m.peer, &bytes, &hash) == 5) {
        m.bytes = bytes, m.hash = hash;
        if (grow((void **)&d->sends, d->nsends, cap_sends, sizeof *d->sends))
            return CL_ENOMEM;
        d->sends[d->nsends++] = m;
    } else if (sscanf(line, "land %ld %ld %llu %llx", &m.rank, &m.peer, &bytes, &hash) == 4) {
        m.k = -1, m.bytes = bytes, m.hash = hash;
        if (grow((void **)&d->lands, d->nlands, cap_lands, sizeof *d->lands))
            return CL_ENOMEM;
        d->lands[d->nlands++] = m;
    } else if (sscanf(line, "holds %ld %ld %15s", &rank, &a, how) == 3) {
        if (grow((void **)&d->holds, d->nholds, cap_holds, sizeof *d->holds))
            return CL_ENOMEM;
        d->holds[d->nholds++] = (probe_held){rank, a, strcmp(how, "arrived") == 0, false};
    } else if (sscanf(line, "sum %ld %ld", &rank, &a) == 2) {
        if (grow((void **)&d->sums, d->nsums, cap_sums, sizeof *d->sums))
            return CL_ENOMEM;
        d->sums[d->nsums++] = (probe_held){rank, a, false, false};
    } else if (sscanf(line, "call %ld %15s", &rank, word) == 2) {
        size_t need = *len_calls + strlen(line) + 2;
        while (need > *cap_calls) {
            char *more = realloc(d->calls, *cap_calls * 2);
            if (!more)
                return CL_ENOMEM;
            d->calls = more;
            *cap_calls *= 2;
        }
        *len_calls += (size_t)sprintf(d->calls + *len_calls, "%ld %s\n", rank, word);
    } else if (sscanf(line, "leak %ld %ld", &rank, &a) == 2) {
        if (rank >= 0 && rank < d->nranks)
            d->leaks[rank] = a;
    } else if (sscanf(line, "done %ld", &rank) == 1) {
        if (rank >= 0 && rank < d->nranks)
            d->done[rank] = true;
    }
    return 0;
}

int ex_probe_read(const char *path, long nranks, probe_data *d)
{
    memset(d, 0, sizeof *d);
    d->nranks = nranks > 0 ? nranks : 1;
    size_t cap_calls = 256, len_calls = 0;
    d->leaks = calloc((size_t)d->nranks, sizeof *d->leaks);
    d->done = calloc((size_t)d->nranks, sizeof *d->done);
    d->calls = calloc(cap_calls, 1);
    if (!d->leaks || !d->done || !d->calls) {
        ex_probe_release(d);
        return CL_ENOMEM;
    }
    FILE *f = fopen(path, "r");
    if (!f)
        return 0; /* no report: every rank is "not done" */
    size_t cb = 0, cs = 0, cl = 0, ch = 0, cu = 0;
    char line[1400];
    int err = 0;
    while (!err && fgets(line, sizeof line, f))
        err = read_line(d, line, &cb, &cs, &cl, &ch, &cu, &len_calls, &cap_calls);
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
