/*
 * plot_impl.h - what the files of the plot module share; internal to
 * cli/plot*.c (hence the plot__ names).
 *
 *   plot.c         the kinds and their columns; reading and checking a CSV
 *   plot_render.c  --term lists, folders, running gnuplot on a template
 *   plot_write.c   the writers of plot CSVs
 *
 * Like plot.h, nothing here depends on another cli/ file, so unit tests
 * compile the three files in.
 */
#ifndef CL_PLOT_IMPL_H
#define CL_PLOT_IMPL_H

#include <stddef.h>

/* The templates of a kind's figures (plots/NAME.gp), NULL-terminated;
 * kind must be a plot_kind.  Cannot fail. */
const char *const *plot__figures(int kind);

/* Copies s into buf (size len) with control characters as spaces and
 * surrounding spaces trimmed.  Cannot fail. */
void plot__clean_copy(char *buf, size_t len, const char *s);

#endif
