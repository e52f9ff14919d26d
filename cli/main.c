/* main.c - `commlab COMMAND [options]`: finds the command and runs it. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli/backend.h"
#include "cli/cli.h"
#include "cli/near.h"

static int cmd_help(int argc, char **argv);
static int cmd_version(int argc, char **argv);

static const char help_usage[] =
    "usage: commlab help [COMMAND]\n"
    "\n"
    "Prints the list of commands, or one command's options.\n";

static const char version_usage[] =
    "usage: commlab version\n"
    "\n"
    "Prints commlab's version (same as commlab --version).\n";

static const cli_command commands[] = {
    {"price", cmd_price, "the alpha-beta time of one message on each tier", cmd_price_usage},
    {"sweep", cmd_sweep, "T(n) per tier over sizes, and each tier's crossover size",
     cmd_sweep_usage},
    {"run", cmd_run, "run a pattern on every rank (modeled with --backend sim)", cmd_run_usage},
    {"patterns", cmd_patterns, "list the built-in patterns", cmd_patterns_usage},
    {"collectives", cmd_collectives,
     "every algorithm of a collective over sizes: simulated, its formula, the winner",
     cmd_collectives_usage},
    {"step", cmd_step, "one training step's communication, modeled (tp, pp, dp)",
     cmd_step_usage},
    {"plot", cmd_plot, "draw a saved result (CSV) with gnuplot", cmd_plot_usage},
    {"calibrate", cmd_calibrate, "measure a transport, fit its piecewise alpha-beta machine model",
     cmd_calibrate_usage},
    {"compare", cmd_compare, "a pattern measured next to its calibrated model, error per size",
     cmd_compare_usage},
    {"validate", cmd_validate, "every tutorial pattern measured next to the model: a line each",
     cmd_validate_usage},
    {"bench", cmd_bench, "benchmarks: the simulator's speed; each transport next to a reference", cmd_bench_usage},
    {"exercise", cmd_exercise, "the course's exercises: list, show, run, check",
     cmd_exercise_usage},
    {"fabric", cmd_fabric, "the libfabric providers here, for --backend rdma", cmd_fabric_usage},
    {"help", cmd_help, "show the commands, or one command's options", help_usage},
    {"version", cmd_version, "print the version", version_usage},
};

const cli_command *cli_find(const char *name)
{
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

/* "unknown command 'rnu'; did you mean 'run'?" and the hint. */
static int unknown_command(const char *name)
{
    cli_near near;
    cli_near_init(&near, name);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        cli_near_add(&near, commands[i].name);
    fprintf(stderr, "commlab: unknown command '%s'", name);
    if (near.best)
        fprintf(stderr, "; did you mean '%s'?", near.best);
    fputs("\ntry 'commlab --help'\n", stderr);
    return CLI_EXIT_USAGE;
}

static void main_usage(FILE *f)
{
    fputs("usage: commlab COMMAND [options]\n"
          "\n"
          "commlab models and measures the cost of communication between ranks:\n"
          "the course's patterns run on an alpha-beta simulator of the interconnect\n"
          "tiers and on real transports, side by side.\n"
          "\n"
          "commands:\n",
          f);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fputs("\n"
          "Every command takes --help.  Commands that print a table also take --csv\n"
          "and --json.  Exit status: 0 ok, 1 a data check failed, 2 bad usage or\n"
          "config, 3 deadlock, 4 a rank or transport failed.\n",
          f);
}

static int cmd_help(int argc, char **argv)
{
    if (argc < 2) {
        main_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (argc > 2)
        return cli_error("help takes one command name, got %d words\ntry 'commlab help'",
                         argc - 1);
    const cli_command *c = cli_find(argv[1]);
    if (!c)
        return unknown_command(argv[1]);
    fputs(c->usage, stdout);
    return CLI_EXIT_OK;
}

static int cmd_version(int argc, char **argv)
{
    (void)argv;
    if (argc > 1 && strcmp(argv[1], "--help") != 0)
        return cli_error("version takes no arguments\ntry 'commlab help version'");
    if (argc > 1) {
        fputs(version_usage, stdout);
        return CLI_EXIT_OK;
    }
    printf("commlab %s\n", COMMLAB_VERSION);
    backend_print_all(stdout);
    return CLI_EXIT_OK;
}

/* commlab wants the default actions of these (exit 128+N, a core), not
 * what it inherits: a shell starts a background job with SIGINT ignored,
 * and scripts stop runs with it.  Libraries opened later keep them
 * (real/dlib.h: libinfinipath's constructor sets handlers that exit 1, so
 * a Ctrl-C would look like a failed data check). */
static void default_signals(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGSEGV, SIGBUS, SIGILL, SIGABRT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        signal(sigs[i], SIG_DFL);
}

int main(int argc, char **argv)
{
    default_signals();
    if (argc < 2) {
        main_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
        main_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(name, "--version") == 0 || strcmp(name, "-V") == 0)
        return cmd_version(1, argv + 1);
    const cli_command *c = cli_find(name);
    if (!c && name[0] == '-') {
        fprintf(stderr, "commlab: unknown option '%s'\ntry 'commlab --help'\n", name);
        return CLI_EXIT_USAGE;
    }
    if (!c)
        return unknown_command(name);
    /* COMMLAB_SECRET is for `run`'s rendezvous alone, which takes it out of
     * the environment itself (cmd_run.c); every other command drops it
     * here, so that nothing commlab starts inherits it. */
    if (c->run != cmd_run) {
        char *secret = cli_env_take("COMMLAB_SECRET");
        cli_env_free(secret);
    }
    opterr = 0;
    return c->run(argc - 1, argv + 1);
}
