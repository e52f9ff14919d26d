/* env_leak.c - prints what a pattern can find of COMMLAB_SECRET: getenv's
 * value, and the value in its process's first environment as
 * /proc/self/environ shows it.  tests/cli/test_world.sh checks that
 * neither holds the secret the run was started with. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pattern(cl_comm *c, const cl_args *a)
{
    (void)a;
    static const char name[] = "COMMLAB_SECRET=";
    const char *value = getenv("COMMLAB_SECRET");
    static char env[1 << 16];
    FILE *f = fopen("/proc/self/environ", "r");
    size_t n = f ? fread(env, 1, sizeof env - 1, f) : 0;
    if (f)
        fclose(f);
    env[n] = 0;
    const char *found = "";
    for (size_t i = 0; i < n; i += strlen(env + i) + 1)
        if (strncmp(env + i, name, sizeof name - 1) == 0)
            found = env + i + sizeof name - 1;
    cl_printf(c, "getenv: [%s] environ: [%s]\n", value ? value : "", found);
    return cl_barrier(c);
}
