/*
 * net.h - the simulator's network: which links a message from rank src to
 * rank dst crosses, and what that costs in the alpha-beta model:
 *
 *   T(n) = sum(alpha over the route's links) + n / min(bandwidth over them)
 *
 * A network is built one of two ways.
 *
 * 1. A tier mesh (`--tier NAME`): every pair of ranks has its own full-duplex
 *    link of that tier, so T(n) = alpha + n/B exactly.  Nothing per rank or
 *    per link is stored: 1,000,000 ranks cost a few bytes.  The link of the
 *    pair lo < hi has id hi*(hi-1)/2 + lo, a = lo, b = hi.
 *
 * 2. A topology file (`--topology FILE`), in one of two forms.
 *
 *    Dimensions, read like ASTRA-sim's network YAML (units written out):
 *
 *      # 2 hosts of 8 GPUs: an NVSwitch per host, one InfiniBand switch
 *      topology: [Switch, Switch]     # Switch, Ring or FullyConnected; 1..4
 *      npus_count: [8, 2]             # dim 0 varies fastest: rank = c0 + 8*c1
 *      bandwidth: [300GB/s, 50GB/s]   # per link and direction
 *      latency: [1us, 3us]            # alpha per link crossed
 *      # or, instead of bandwidth and latency:  tier: [nvlink, infiniband]
 *      reduce_bandwidth: 680GB/s      # optional, in both forms: how fast a
 *                                     # device reduces (sim_net_gamma)
 *
 *    In dim i each group of npus_count[i] devices (the devices that differ
 *    only in coordinate i) is joined by: Switch, a switch of its own and one
 *    link per device to it (2 hops across); Ring, a link from each device
 *    to the next, wrapping around (one link when there are 2); or
 *    FullyConnected, a link per pair.  Routes go in dimension order (dim 0
 *    first), the shorter way around a ring (forward on a tie), which is a
 *    fewest-hops route; they are computed arithmetically, so this form also
 *    stores nothing per device.
 *
 *    Explicit devices, switches and links:
 *
 *      hosts:                        # or  devices: 8  /  devices: [a, b]
 *        - name: node0
 *          devices: 4                # node0.gpu0..node0.gpu3 = ranks 0..3
 *          switch: nvs0              # optional: each device gets a link to
 *          tier: nvlink              #   this switch with this link spec
 *        - {name: node1, devices: 4, switch: nvs1, tier: nvlink}
 *      switches: [ib0]               # more switches (host ones are implicit)
 *      links:
 *        - {a: nvs0, b: ib0, tier: infiniband, lanes: 4}
 *        - {a: nvs1, b: ib0, alpha: 3us, bandwidth: 50GB/s, duplex: half}
 *
 *    Ranks are the devices in file order.  `devices: N` names them gpu0..;
 *    under a host, "<host>.gpu<i>" or "<host>.<name>".  An endpoint is a
 *    device or switch name, or a rank number.  A link spec is `tier: NAME`
 *    (from the tiers file) and/or `alpha` and `bandwidth` (which override
 *    the tier's), optional `lanes: K` (bandwidth x K) and `duplex: full`
 *    (default: each direction has the whole bandwidth) or `half` (both
 *    directions share it; only --sharing maxmin sees the difference).  Link
 *    ids: host attachment links in host and device order, then `links:` in
 *    order.  Routes are fewest hops by BFS; ties go to the lowest link id
 *    (neighbours are visited in link id order).  Every device must reach
 *    every other, checked at load.
 *
 * 3. A machine mesh (`--model FILE`): a tier mesh whose cost is the
 *    calibrated piecewise T(n) of a machine file (core/machine.h): a
 *    message of n bytes pays its segment's alpha + n / bandwidth.  Only
 *    sim_net_cost and sim_net_gap see the segments; sim_net_path and
 *    sim_net_link report the first one (the smallest messages').  A segment
 *    with a gap (LogGP's g + n G, core/machine.h) spaces a rank's
 *    back-to-back messages on a link by it instead of by n / bandwidth,
 *    and its posted gap, where it has one, the eager messages whose
 *    receive was posted in time (sim_net_gap's `posted`).
 *    A file with duplex segments prices a message that moves while one of
 *    its ranks moves another the opposite way by those (sim_net_duplex).
 *
 * Vertices are numbered devices first (vertex r is rank r), then switches.
 * Every load error names file:line:column, the key and the bad value.
 *
 * Complexity.  sim_net_path is a few loads for a mesh and O(dims) integer
 * arithmetic for the dimension form.  For explicit topologies it reads a
 * per-source cache: a miss runs one BFS from src, O(V + E), and stores the
 * whole tree (24 bytes per vertex), so a repeated source is O(1).  The
 * cache is direct-mapped by source, holds as many trees as fit in
 * SIM_NET_CACHE_BYTES (all sources below ~1,600 vertices), and thrashes to a
 * BFS per message only when many more sources than that alternate.
 * sim_net_route is O(hops) after the same lookup.
 *
 * Ownership and threads: a sim_net owns everything it points to.  Queries
 * fill the cache, so even lookups take a non-const sim_net; one network
 * belongs to one simulator and is not thread-safe.
 */
#ifndef SIM_NET_H
#define SIM_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "commlab.h"
#include "core/diag.h"
#include "core/machine.h"
#include "core/tier.h"

#define SIM_NET_MAX_DIMS 4
#define SIM_NET_MAX_RANKS (1 << 24)  /* ranks of any network (--ranks' limit) */
#define SIM_NET_MAX_NAMED (1 << 20)  /* devices and switches of a topology that names
                                        each (hosts, devices, switches, links) */
#define SIM_NET_CACHE_BYTES ((size_t)64 << 20) /* route trees of explicit topologies */

typedef struct sim_net sim_net;

typedef struct sim_link {
    int a, b;          /* endpoint vertices: ranks 0..ranks-1, then switches */
    double alpha;      /* seconds per message crossing it */
    double bandwidth;  /* bytes per second per direction, lanes included */
    bool half_duplex;  /* both directions share the bandwidth */
} sim_link;

typedef struct sim_link_dir {
    int64_t link; /* link id, 0..sim_net_links()-1 */
    int dir;      /* 0: crossed from a to b, 1: from b to a */
} sim_link_dir;

/* ---- lifecycle ---- */

/* A full mesh of nranks (1..SIM_NET_MAX_RANKS) ranks on tier (copied).
 * CL_EINVAL with d saying why, or CL_ENOMEM; on error *out is NULL. */
int sim_net_create_tier(sim_net **out, const cl_tier *tier, int nranks, cl_diag *d);
/* A full mesh of nranks ranks priced by machine m (copied).  The same
 * errors as sim_net_create_tier; on error *out is NULL. */
int sim_net_create_machine(sim_net **out, const machine *m, int nranks, cl_diag *d);
/* A topology file; tiers (may be NULL) resolves `tier:` names.  On error
 * (CL_EIO, CL_EPARSE, CL_ECONFIG, CL_ENOMEM) d names file:line:column and
 * *out is NULL. */
int sim_net_load(sim_net **out, const char *path, const tier_set *tiers, cl_diag *d);
/* The same from YAML text; name stands for the file in messages. */
int sim_net_load_string(sim_net **out, const char *name, const char *text,
                        const tier_set *tiers, cl_diag *d);
/* Frees n and everything it owns; n may be NULL. */
void sim_net_destroy(sim_net *n);

/* ---- shape (cannot fail) ---- */

/* Devices: for a tier mesh the nranks given.  The engine checks a run's
 * rank count against it. */
int sim_net_ranks(const sim_net *n);
/* Devices plus switches. */
int sim_net_vertices(const sim_net *n);
int64_t sim_net_links(const sim_net *n);
/* Link id (0..sim_net_links()-1) into *out; CL_ERANGE if id is out of
 * range, *out unchanged. */
int sim_net_link(const sim_net *n, int64_t id, sim_link *out);
/* Name of vertex v into buf ("gpu3", "node1.gpu0", "sw1.0", "rank 7");
 * always NUL-terminated; returns buf. */
char *sim_net_vertex_name(const sim_net *n, int v, char *buf, size_t len);
/* "tier nvlink, full mesh of 8 ranks" or "topology configs/topologies/x.yaml:
 * 16 devices, 3 switches, 18 links".  Owned by n. */
const char *sim_net_describe(const sim_net *n);

/* Seconds per byte of type t a rank reduces (cl_reduce_local): the
 * gamma of the alpha-beta-gamma model, 1 / the tier's reduce_bandwidth,
 * the topology file's top-level `reduce_bandwidth` (a bandwidth or inf;
 * default TIER_REDUCE_BANDWIDTH, core/tier.h), or a machine file's
 * measured figure for t (none: free); 0: free. */
double sim_net_gamma(const sim_net *n, cl_dtype t);
/* Sets every type's gamma (seconds per byte, >= 0).  Cannot fail. */
void sim_net_set_gamma(sim_net *n, double gamma);

/* Devices in a group of the first dimension (npus_count[0]: the GPUs of
 * one node) for a topology in dimension form; 0 for other networks. */
int sim_net_group(const sim_net *n);

/* ---- routes: src != dst, both in 0..ranks-1 (asserted); cannot fail ---- */

/* Route cost parameters: sum of alphas (s), min bandwidth (B/s), hops.
 * The hot path: called per simulated message. */
void sim_net_path(sim_net *n, int src, int dst, double *alpha, double *bandwidth, int *hops);
/* The same for a message of bytes: on a machine mesh the alpha and
 * bandwidth of bytes' segment, elsewhere sim_net_path.  The engine prices
 * every message through this. */
void sim_net_cost(sim_net *n, int src, int dst, uint64_t bytes, double *alpha,
                  double *bandwidth, int *hops);
/* The least time between the starts of two back-to-back messages of bytes
 * on one route whose bottleneck bandwidth (sim_net_cost) is bandwidth: the
 * segment's gap(bytes) on a machine mesh whose segment has one, else
 * bytes / bandwidth (a link carries one message's bytes at a time).  The
 * engine also completes an eager send this long after it starts, or when
 * its message has arrived if that is sooner.  `posted`: an eager message
 * whose receive was posted by the end of the instant it was sent in,
 * spaced by the segment's posted gap where it has one (core/machine.h). */
double sim_net_gap(const sim_net *n, uint64_t bytes, double bandwidth, bool posted);
/* Whether n is a machine mesh whose file has posted gaps: then the engine
 * prices each message when the instant it became priceable ends, so that
 * it knows whether its receive was posted by then. */
bool sim_net_posted_gaps(const sim_net *n);
/* The one-way time of a message of bytes that moves while one of its
 * ranks moves another the opposite way, into *travel and true, on a
 * machine mesh whose file has duplex segments; else false (*travel
 * unchanged): such a message costs what any other does. */
bool sim_net_duplex(const sim_net *n, uint64_t bytes, double *travel);
/* alpha + bytes / bandwidth of the route (sim_net_cost), seconds. */
double sim_net_time(sim_net *n, int src, int dst, uint64_t bytes);
/* The route's links in order from src.  *hops points into n and stays
 * valid until the next query on n.  Returns 0. */
int sim_net_route(sim_net *n, int src, int dst, const sim_link_dir **hops, size_t *nhops);

/* ---- shared links (sim/flow.h) ---- */

/* The resources a message src -> dst shares with others under max-min
 * sharing, into ids[] and their capacities (bytes/s) into cap[], at most
 * max; returns how many, or CL_ERANGE when the route is longer than max.
 * A tier mesh gives each rank a port of the tier's bandwidth out (id
 * 2 rank) and one in (id 2 rank + 1) behind a non-blocking switch: a
 * message crosses src's out and dst's in.  A topology gives each
 * direction of each link a resource (id 2 link + dir), both directions
 * one (id 2 link) when the link is half duplex.  A machine mesh has no
 * such resources (its calibration already holds what sharing it
 * measured): CL_ENOSYS.  alpha, unless NULL, gets the route's latency
 * (sim_net_path's). */
int sim_net_flow_route(sim_net *n, int src, int dst, int64_t *ids, double *cap, int max,
                       double *alpha);
/* True when n is a tier mesh that can share links: then every message's
 * route is src's out port (id 2 src) and dst's in port (id 2 dst + 1),
 * each of *bw bytes/s, with latency *alpha, which is what
 * sim_net_flow_route answers, without a call per message.  False (and
 * nothing written) otherwise.  Cannot fail. */
bool sim_net_flow_mesh(const sim_net *n, double *bw, double *alpha);
/* Whether n can share links (sim_net_flow_route works). */
bool sim_net_can_share(const sim_net *n);
/* The ids sim_net_flow_route gives are below this. */
int64_t sim_net_flow_ids(const sim_net *n);

#endif
