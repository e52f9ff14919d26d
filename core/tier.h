/*
 * tier.h - interconnect tiers and the alpha-beta cost of a message.
 *
 * A tier is a named pair (alpha, bandwidth).  The cost model of the course:
 *
 *   T(n)  = alpha + n / bandwidth         time to move n bytes
 *   n*    = alpha * bandwidth             crossover: latency term == bandwidth
 *                                         term; below it a message is
 *                                         latency-bound, above bandwidth-bound
 *
 * A tier also says how fast its devices reduce: reduce_bandwidth, the
 * bytes a rank combines per second (cl_reduce_local), whose inverse is
 * the gamma of Thakur, Rabenseifner and Gropp's alpha-beta-gamma model
 * ("Optimization of collective communication operations in MPICH", 2005):
 * seconds per byte reduced.  A GPU reduces at memory speed: each byte
 * reduced is two read and one written, so an A100 80GB (HBM2e, 2,039 GB/s
 * in NVIDIA's datasheet) reduces about 2039 / 3 = 680 GB/s, the default
 * for a tier that does not say.  "inf" makes reducing free (gamma 0).
 *
 * A tier_set is loaded from a YAML file (configs/tiers.yaml) and owns its
 * tiers; tier_set_release() frees them.
 */
#ifndef CL_TIER_H
#define CL_TIER_H

#include <stddef.h>
#include <stdint.h>

#include "core/diag.h"

#define TIER_NAME_MAX 32
#define TIER_MAX 256 /* tiers in one file */
#define TIER_REDUCE_BANDWIDTH 680e9 /* bytes/s: an A100's HBM2e, 2039 GB/s, over 3 */

typedef struct cl_tier {
    char name[TIER_NAME_MAX];  /* "nvlink" */
    char scope[TIER_NAME_MAX]; /* "intra-node", "inter-node" or "" */
    double alpha;              /* seconds per message */
    double bandwidth;          /* bytes per second, > 0 */
    double reduce_bandwidth;   /* bytes reduced per second; 0 or INFINITY: free */
} cl_tier;

typedef struct tier_set {
    cl_tier *tiers; /* n tiers in file order, malloc'd */
    size_t n;
} tier_set;

/* Loads a tiers file: a mapping with key 'tiers', a list of mappings with
 * name, alpha, bandwidth, optional reduce_bandwidth (a bandwidth or inf;
 * default TIER_REDUCE_BANDWIDTH) and optional scope ('intra-node' or 'inter-node'),
 * 1 to TIER_MAX of them, names unique, no other key.  On error d names
 * file:line:column, key and value; *s is left empty. */
int tier_set_load(tier_set *s, const char *path, cl_diag *d);
/* The same from YAML text (name is used in messages). */
int tier_set_load_string(tier_set *s, const char *name, const char *text, cl_diag *d);
void tier_set_release(tier_set *s);

/* The tier called name, or NULL. */
const cl_tier *tier_set_find(const tier_set *s, const char *name);

/* Keeps only the tiers named in a comma-separated list, in the list's
 * order.  CL_ENOENT with d naming the unknown tier and the known ones; on
 * error s is unchanged. */
int tier_set_select(tier_set *s, const char *list, cl_diag *d);

/* Alpha-beta time of n bytes on t, seconds.  Cannot fail. */
double tier_time(const cl_tier *t, uint64_t bytes);
/* Crossover size alpha * bandwidth, bytes (not rounded).  Cannot fail. */
double tier_crossover(const cl_tier *t);
/* Seconds per byte reduced: 1 / reduce_bandwidth (0 when free).  Cannot
 * fail. */
double tier_gamma(const cl_tier *t);

#endif
