/*
 * netlab.h - a switch made of network namespaces, for measured contention
 * (`commlab run ... --backend tcp --netlab RATE`, root only).
 *
 * For N ports netlab_create builds, with the creating process's pid P in
 * every name:
 *
 *     clnl-P-hub   a namespace holding the bridge "clbr" (the switch) and
 *                  one veth end "p<i>" per rank, enslaved to it
 *     clnl-P-<i>   rank i's namespace: lo, and the other veth end "eth0"
 *                  at 169.254.100.<i+1>/24
 *
 * Both ends of every pair carry a tc tbf qdisc at RATE: eth0's limits what
 * rank i sends into the switch, p<i>'s what the switch sends out to rank
 * i.  So each rank has a port of RATE each way, and ranks that send to
 * one rank at once share its one outgoing port, as on a real switch
 * (incast).  The addresses are link-local and exist only inside these
 * namespaces: nothing is ever added to the caller's namespace, so
 * `ip link` there shows nothing of a netlab, and nothing collides with the
 * machine's own networks.
 *
 * How it is built: by running ip(8) and tc(8) (iproute2) with
 * posix_spawnp and argv arrays (no shell, nothing interpolated), about
 * 8 short commands per rank: some 20-40 ms a rank.  Netlink by hand would
 * be faster but is a few hundred lines of message building for tbf alone;
 * iproute2's messages, passed on in the diag, also say better than ours
 * what a kernel lacks.  The commands inherit the caller's signal mask:
 * the caller blocks SIGINT while it builds and tears down, so a Ctrl-C
 * can never leave a half-built netlab (it is acted on afterwards).
 *
 * One netlab serves every run of a command (run's sizes, calibrate's
 * hundreds of runs, compare's): a run of n ranks puts rank i in namespace
 * i, for any n up to the ports built.  Building it once keeps the runs
 * alike (the same addresses, neighbours already resolved) and costs its
 * 20-40 ms a port once.
 *
 * Clean-up.  netlab_destroy deletes the namespaces (a namespace's veth
 * ends and bridge go with it).  The command that holds it (cli/run_size.h)
 * keeps SIGINT, SIGTERM and SIGHUP blocked from before netlab_create until
 * after netlab_destroy: they are events in real_run's watch loop, which
 * stops the run, or are found pending at the end; either way the command
 * deletes the netlab before it exits.  A process killed outright (SIGKILL)
 * cannot clean up: its namespaces stay, named with its pid, and the next
 * netlab_create deletes every clnl-P-* whose process P is gone (or a
 * zombie), or is the caller itself (a reused pid).
 *
 * Ownership: the caller owns the netlab from netlab_create until
 * netlab_destroy; forked children use their copy only to netlab_enter.
 */
#ifndef REAL_NETLAB_H
#define REAL_NETLAB_H

#include <stddef.h>

#include "core/diag.h"

#define NETLAB_MAX_RANKS 253 /* ranks of one /24, .1 to .253 */
#define NETLAB_NETNS_DIR "/run/netns" /* where ip(8) names namespaces */

typedef struct netlab netlab;

/* Builds the switch, its namespaces and ports for nranks ranks at rate_Bps
 * (bytes per second, each way per port), first deleting the leftovers of
 * processes that are gone.  Returns 0 with *out set, or:
 *   CL_EINVAL  nranks outside 1..NETLAB_MAX_RANKS or a rate below 8 kbit/s;
 *   CL_ENOSYS   not root, no ip/tc, or the kernel refused (no namespaces,
 *              veth, bridge or tbf), d saying which and iproute2's words;
 *   CL_ENOMEM, CL_EIO.
 * On failure *out is NULL and whatever was made is deleted again. */
int netlab_create(netlab **out, int nranks, double rate_Bps, cl_diag *d);

/* Moves the calling process (a forked rank, before it opens any socket)
 * into rank's namespace.  0, or CL_EIO with d saying why ("rank 2: ...");
 * on failure the process stays where it was. */
int netlab_enter(const netlab *nl, int rank, cl_diag *d);

/* The numeric IPv4 address rank listens on inside its namespace,
 * "169.254.100.3"; valid until netlab_destroy.  Cannot fail. */
const char *netlab_addr(const netlab *nl, int rank);

/* Bytes per second of every port, each way.  Cannot fail. */
double netlab_rate(const netlab *nl);

/* Ports (rank namespaces) it has: runs of up to that many ranks.  Cannot
 * fail. */
int netlab_ports(const netlab *nl);

/* Deletes every namespace (and with them the veth pairs and the bridge)
 * and frees nl.  Call it once no process is left inside (every run's
 * ranks were reaped).  NULL does nothing.  Cannot fail: what ip cannot delete now
 * the next netlab_create reaps. */
void netlab_destroy(netlab *nl);

/* The bytes a port of rate_Bps sends at once after idling (tbf's burst):
 * a message below it moves at the speed of the veth pair, not the rate,
 * when the port's bucket is full, so a ping-pong of such messages times
 * the bucket's state as much as the size.  Cannot fail. */
double netlab_burst(double rate_Bps);

#endif
