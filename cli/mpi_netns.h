/*
 * mpi_netns.h - an MPI job on this host that nobody elsewhere can reach.
 *
 * Open MPI 4.1 binds its listening sockets to the wildcard addresses
 * whatever its interface lists say: every process's TCP transport (btl
 * tcp, on 0.0.0.0 and ::) and mpirun's own (oob tcp, likewise), even for
 * a job that never leaves the host.  Where the kernel lets this user make
 * one, the job started for `--backend mpi` (mpirun and every process it
 * starts) therefore runs in a network namespace of its own whose only
 * interface is loopback: as root a new network namespace, otherwise one
 * inside a new user namespace in which this user is root (so mpirun is
 * told that running as root is meant).  Files, processes and the
 * rendezvous's Unix socket are shared with the host as before.  Where the
 * kernel refuses, or COMMLAB_MPI_NETNS=0 asks, the job stays in the
 * host's namespace and only its processes are kept from listening: no TCP
 * transport between them (btl self,vader: one host needs none).  mpirun's
 * own listeners stay on 0.0.0.0 and :: there: oob_tcp_if_include does
 * not change the address they bind, and oob_tcp_disable_ipv6_family (read,
 * as ompi_info shows) does not keep the IPv6 one from being made (Open MPI
 * 4.1.4, `--mca oob_base_verbose 10`).
 *
 * Built only with CL_HAVE_MPI.
 */
#ifndef CL_MPI_NETNS_H
#define CL_MPI_NETNS_H

#ifdef CL_HAVE_MPI
#include <stddef.h>

/* In the child that becomes mpirun, before exec: moves it into a network
 * namespace of its own with loopback up, or, where the kernel refuses,
 * leaves it where it is.  Either way sets Open MPI's parameters above (a
 * choice of the user's own stands).  0; or -1 with why (len bytes) when
 * it moved but could not bring loopback up: the job cannot run there.
 * Post-fork safe in a single-threaded process. */
int mpi_netns_enter(char *why, size_t len);
#endif

#endif
