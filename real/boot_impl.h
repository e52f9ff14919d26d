/*
 * boot_impl.h - what the two halves of the rendezvous share; internal to
 * real/ (hence the boot__ names).
 *
 *   boot.c   joining: the star of connections to the master, each proven
 *            (real/handshake.h) and introduced (HELLO), once per command.
 *   relay.c  a run: addresses, states, failures and results relayed
 *            between the agents and the master's job.
 *
 * Both speak real/wire.h's frames; a frame's ctx is the run it belongs to.
 */
#ifndef REAL_BOOT_IMPL_H
#define REAL_BOOT_IMPL_H

#include <arpa/inet.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "real/boot.h"
#include "real/wire.h"

#define BOOT_HANDSHAKE_SECONDS 2.0 /* a stranger gets this long, no more */

typedef struct boot_conn {
    int fd;                 /* -1: none or lost */
    int rank;
    bool done;              /* master: its rank sent DONE or FAIL */
    bool addr_sent;         /* agent: ADDR went out this run */
    unsigned char *in;      /* input buffer */
    size_t in_len, in_cap;  /* bytes in it, bytes of room */
    unsigned char *out;     /* bytes waiting to be written */
    size_t out_len, out_cap;
    char host[WIRE_HOST_MAX]; /* the joiner's hostname (HELLO) */
    unsigned pid;           /* its process (HELLO) */
} boot_conn;

struct boot {
    real_world w;
    unsigned char digest[AUTH_HASH_BYTES];
    unsigned char secret[AUTH_KEY_BYTES];
    char listen_addr[INET6_ADDRSTRLEN];
    boot_conn *conns;       /* master: size (conns[0] unused); agent: 1, the master */
    int nconns;
    struct pollfd *pfd;     /* nconns, for boot_pump */
    int *pidx;              /* nconns: the connection of each pfd */
    /* the current run */
    job *j;
    uint32_t run;           /* runs begun: the ctx of this run's frames */
    bool table_sent;        /* master */
    bool finished;          /* agent: FINISH or ABORT came, or the master is gone */
    int remote_left;        /* master: other ranks neither done nor failed */
    int status;             /* the run's status as far as known */
    int fail_status;        /* a failure to hand to the launcher, once */
    cl_diag fail;           /* its words */
    bool fail_from_master, fail_new;
    uint32_t sent_seq, sent_state; /* agent: the slot as last sent (seqlock count, state) */
    uint64_t sent_progress;
    bool state_sent;
};

/* Closes c's socket and frees its buffers.  Cannot fail. */
void boot__conn_drop(boot_conn *c);
/* Waits until fd is ready for events, up to the job_now() deadline.  0,
 * CL_ETIMEOUT or CL_EIO. */
int boot__wait_fd(int fd, short events, double deadline);
/* The most a body of kind may hold in b's world and current run. */
size_t boot__body_max(const boot *b, int kind);

#endif
