/* mem_scan.c - counts the copies of COMMLAB_SECRET ("sekrit-TEST-0123456789")
 * in the rank's readable memory; tests/cli/test_world.sh runs it with that
 * secret and wants none.  The full text is never in this file's memory: its
 * first half is found, then the digits are compared one by one. */
#include "commlab.h"
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char buf[1 << 20];

int pattern(cl_comm *c, const cl_args *a)
{
    (void)a;
    FILE *maps = fopen("/proc/self/maps", "r");
    int mem = open("/proc/self/mem", O_RDONLY);
    char line[512];
    int found = 0;
    while (maps && mem >= 0 && fgets(line, sizeof line, maps)) {
        unsigned long lo, hi;
        char perms[8];
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3 || perms[0] != 'r' ||
            strstr(line, "[vvar]") || strstr(line, "[vsyscall]"))
            continue;
        for (unsigned long at = lo; at < hi; at += sizeof buf - 32) {
            size_t want = hi - at < sizeof buf ? hi - at : sizeof buf;
            ssize_t got = pread(mem, buf, want, (off_t)at);
            if (got <= 0)
                break;
            for (ssize_t i = 0; i + 22 <= got; i++) {
                if (memcmp(buf + i, "sekrit-TEST-", 12) != 0)
                    continue;
                int k = 0;
                while (k < 10 && buf[i + 12 + k] == '0' + k)
                    k++;
                /* a match in the last 32 bytes is found again by the next window */
                found += k == 10 && (i < (ssize_t)sizeof buf - 32 || hi - at <= sizeof buf);
            }
            if (hi - at <= sizeof buf)
                break;
        }
    }
    if (maps)
        fclose(maps);
    if (mem >= 0)
        close(mem);
    fprintf(stderr, "rank %d: copies of the secret: %d\n", cl_rank(c), found);
    return 0;
}
