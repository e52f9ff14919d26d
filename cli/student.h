/*
 * student.h - a pattern from the user's own .c file: `commlab run ./mine.c`.
 *
 * The file includes commlab.h and defines one function,
 *
 *     int pattern(cl_comm *c, const cl_args *a) { ... }
 *
 * student_load() compiles it with the system's C compiler ($CC, else cc)
 * (with commlab.h included first) into a shared object in a fresh temporary folder, loads it, and removes
 * the folder at once (the loaded object stays mapped), so nothing is left
 * next to the student's file or in /tmp.  The object resolves commlab's
 * API from the running binary (linked with -rdynamic) and binds its own
 * symbols to itself (-Bsymbolic), so a helper named like a built-in
 * pattern stays the student's.  Under a grader (STUDENT_PROBE_ENV set)
 * the probe of include/commlab_probe.h is compiled in with it.  Measured backends fork after loading, so
 * the pattern runs on every backend.
 *
 * Ownership: the student_pattern owns the loaded object and its name;
 * student_unload() gives both back.
 */
#ifndef CL_STUDENT_H
#define CL_STUDENT_H

#include <stdbool.h>

#include "core/pattern.h"

/* The symbol a student's file must define. */
#define STUDENT_SYMBOL "pattern"

/* When this environment variable names a file, the student's file is
 * compiled with include/commlab_probe.h, which appends to that file what
 * data each rank ends with (`commlab exercise check` sets it). */
#define STUDENT_PROBE_ENV "COMMLAB_PROBE"

typedef struct student_pattern {
    pattern_info info; /* name = the file's base name, fn = its `pattern` */
    void *handle;      /* dlopen handle; NULL when nothing is loaded */
    char name[256];    /* storage for info.name */
} student_pattern;

/* Whether a pattern argument names a file rather than a built-in pattern:
 * it ends in ".c" or contains a '/'.  Cannot fail. */
bool student_is_file(const char *arg);

/* Compiles and loads path.  Returns 0, or an exit status (CLI_EXIT_USAGE)
 * after printing why on stderr: the file cannot be read, the compiler is
 * missing or failed (its own messages are shown as it printed them), or
 * the object defines no `pattern`.  On error nothing is left loaded or on
 * disk. */
int student_load(student_pattern *s, const char *path);

/* Unloads what student_load loaded; a zeroed or failed s is fine. */
void student_unload(student_pattern *s);

#endif
