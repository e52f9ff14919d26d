/* util.c - errors, option helpers and data paths for the commands. */
#include "cli/cli.h"

#include <errno.h>
#include <math.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/near.h"
#include "commlab.h"
#include "core/tier.h"

int cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("commlab: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return CLI_EXIT_USAGE;
}

int cli_diag(const cl_diag *d, int code)
{
    fprintf(stderr, "commlab: %s\n", d->msg[0] ? d->msg : "unknown error");
    return code;
}

int cli_bad_option(const char *cmd, const struct option *opts, char **argv, int c)
{
    /* With a leading ':' in the optstring getopt returns ':' for a missing
     * argument; either way the offending word is argv[optind - 1]. */
    const char *word = optind > 0 ? argv[optind - 1] : "?";
    char shortopt[3] = {'-', (char)optopt, 0};
    bool is_long = word[0] == '-' && word[1] == '-';
    if (optopt && !is_long)
        word = shortopt;
    if (c == ':') {
        fprintf(stderr, "commlab %s: option '%s' needs a value\n", cmd, word);
    } else {
        fprintf(stderr, "commlab %s: unknown option '%s'", cmd, word);
        if (is_long) {
            char name[64];
            cli_textf(name, sizeof name, "%.*s", (int)strcspn(word + 2, "="), word + 2);
            cli_near near;
            cli_near_init(&near, name);
            for (size_t i = 0; opts[i].name; i++)
                cli_near_add(&near, opts[i].name);
            if (near.best)
                fprintf(stderr, "; did you mean '--%s'?", near.best);
        }
        fputc('\n', stderr);
    }
    fprintf(stderr, "try 'commlab help %s'\n", cmd);
    return CLI_EXIT_USAGE;
}

int cli_no_extra(const char *cmd, int argc, char **argv)
{
    if (optind < argc) {
        fprintf(stderr, "commlab %s: unexpected argument '%s'\ntry 'commlab help %s'\n", cmd,
                argv[optind], cmd);
        return CLI_EXIT_USAGE;
    }
    return 0;
}

static bool readable(const char *p)
{
    return access(p, R_OK) == 0;
}

char *cli_env_take(const char *name)
{
    char *value = getenv(name);
    if (!value)
        return NULL;
    char *copy = strdup(value);
    cli_wipe(value, strlen(value)); /* the process's first environment is in /proc */
    unsetenv(name);
    return copy;
}

/* explicit_bzero: a store the compiler may not drop as dead, as it may a
 * memset before free. */
void cli_wipe(void *buf, size_t n)
{
    explicit_bzero(buf, n);
}

void cli_env_free(char *value)
{
    if (!value)
        return;
    cli_wipe(value, strlen(value));
    free(value);
}

int cli_data_path(char *buf, size_t len, const char *rel, cl_diag *d)
{
    const char *home = getenv("COMMLAB_HOME");
    if (home && *home) {
        snprintf(buf, len, "%s/%s", home, rel);
        if (readable(buf))
            return 0;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        /* The folder above the binary's: the source tree of build/commlab,
         * or PREFIX of PREFIX/bin/commlab (named without "/..", so the
         * paths printed read as the folders they are). */
        for (int up = 0; up < 2; up++) {
            char *slash = strrchr(exe, '/');
            if (slash)
                *slash = 0;
        }
        const char *top = exe[0] ? exe : "/";
        cli_textf(buf, len, "%s/%s", top, rel);
        if (readable(buf))
            return 0;
        cli_textf(buf, len, "%s/share/commlab/%s", top, rel);
        if (readable(buf))
            return 0;
    }
    return diag_set(d, CL_ENOENT,
                    "cannot find '%s' (looked in $COMMLAB_HOME, the source tree and "
                    "PREFIX/share/commlab); set COMMLAB_HOME or pass --config",
                    rel);
}

int cli_given_path(char *buf, size_t len, const char *given, const char *what,
                   const char **out)
{
    *out = given;
    if (given[0] == '/' || readable(given))
        return 0;
    cl_diag d = {{0}};
    if (cli_data_path(buf, len, given, &d) == 0) {
        *out = buf;
        return 0;
    }
    return cli_error("cannot find the %s '%s': not in this folder, nor in $COMMLAB_HOME, the "
                     "source tree or PREFIX/share/commlab", what, given);
}

bool cli_user_dir(char *dir, size_t len, const char *xdg_var, const char *home_rel)
{
    const char *xdg = getenv(xdg_var), *home = getenv("HOME");
    if (xdg && xdg[0] == '/')
        cli_textf(dir, len, "%s/commlab", xdg);
    else if (home && home[0] == '/')
        cli_textf(dir, len, "%s/%s/commlab", home, home_rel);
    else
        return false;
    return true;
}

int cli_make_dirs(char *dir)
{
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        int rc = mkdir(dir, 0700);
        *p = '/';
        if (rc && errno != EEXIST)
            return -1;
    }
    return mkdir(dir, 0700) && errno != EEXIST ? -1 : 0;
}

/* Loads the tiers file (default or --config) and applies --tiers. */
int cli_load_tiers(tier_set *ts, const char *config, const char *list)
{
    char path[1024];
    cl_diag d = {{0}};
    if (!config) {
        if (cli_data_path(path, sizeof path, "configs/tiers.yaml", &d))
            return cli_diag(&d, CLI_EXIT_USAGE);
        config = path;
    } else {
        int rc = cli_given_path(path, sizeof path, config, "tiers file", &config);
        if (rc)
            return rc;
    }
    if (tier_set_load(ts, config, &d))
        return cli_diag(&d, CLI_EXIT_USAGE);
    if (list && tier_set_select(ts, list, &d)) {
        tier_set_release(ts);
        return cli_diag(&d, CLI_EXIT_USAGE);
    }
    return 0;
}

int cli_parse_int(const char *opt, const char *text, int min, int max, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (!*text || *end || errno || v < min || v > max)
        return cli_error("%s must be an integer in %d..%d, got '%s'", opt, min, max, text);
    *out = (int)v;
    return 0;
}

int cli_parse_double(const char *opt, const char *text, double min, double max, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (!*text || *end || errno || !isfinite(v) || v < min || v > max)
        return cli_error("%s must be a number in %g..%g, got '%s'", opt, min, max, text);
    *out = v;
    return 0;
}

int cli_parse_bind(const char *text, bool *bind)
{
    if (strcmp(text, "core") != 0 && strcmp(text, "none") != 0)
        return cli_error("--bind must be core or none, got '%s'", text);
    *bind = strcmp(text, "core") == 0;
    return 0;
}

void cli_textf(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

void cli_appendf(char *buf, size_t len, int *used, const char *fmt, ...)
{
    if ((size_t)*used >= len - 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *used, len - (size_t)*used, fmt, ap);
    va_end(ap);
    if (n > 0)
        *used = (size_t)*used + (size_t)n < len - 1 ? *used + n : (int)len - 1;
}

int cli_mem_available(uint64_t *bytes)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return CL_ENOENT;
    char line[128];
    unsigned long long kib = 0;
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        found = sscanf(line, "MemAvailable: %llu kB", &kib) == 1;
    fclose(f);
    if (!found)
        return CL_ENOENT;
    *bytes = (uint64_t)kib * 1024;
    return 0;
}

double cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
