/*
 * boot_impl.h - what the two halves of the rendezvous share; internal to
 * real/ (hence the boot__ names).
 *
 *   boot.c   joining: the star of connections to the master, each proven
 *            (real/handshake.h) and introduced (HELLO), once per command.
 *   admit.c  the master's side of it: every joiner's handshake at once.
 *   relay.c  a run: addresses, states, failures and results relayed
 *            between the agents and the master's job.
 *
 * Both speak real/wire.h's frames; a frame's ctx is the run it belongs to.
 */
#ifndef REAL_BOOT_IMPL_H
#define REAL_BOOT_IMPL_H

#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "real/boot.h"
#include "real/wire.h"

#define BOOT_HANDSHAKE_SECONDS 2.0 /* a stranger gets this long, no more */
#define BOOT_JOINING_MAX 64        /* handshakes rank 0 carries on at once */
#define BOOT_JOIN_BODY (8 + DIAG_MAX) /* bytes: the largest body of the join (REJECT) */

extern const char BOOT_PURPOSE[]; /* "commlab-boot": bound into the handshake's MACs */

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
    pid_t local_pid;        /* the same, as this host's kernel knows it: joined on the
                               Unix rendezvous (SO_PEERCRED); 0: elsewhere, or TCP */
} boot_conn;

struct boot {
    real_world w;
    unsigned char digest[AUTH_HASH_BYTES];
    unsigned char secret[AUTH_KEY_BYTES];  /* the base key: stretched COMMLAB_SECRET, or
                                              drawn by rank 0 on a Unix rendezvous */
    unsigned char job_id[WIRE_NONCE];      /* drawn by rank 0, sent with GO */
    unsigned char job_key[AUTH_KEY_BYTES]; /* secret bound to job_id: boot_secret() */
    bool unix_bound;                       /* rank 0 made the Unix socket's file */
    bool unix_made;                        /* rank 0 made a fresh folder for it */
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
/* One frame, blocking up to the job_now() deadline.  0, CL_ETIMEOUT or
 * CL_EIO. */
int boot__send_frame(const boot *b, int fd, int kind, const void *body, size_t len,
                     double deadline);
/* The rendezvous's socket address, or CL_EINVAL with d saying why. */
int boot__rdv_addr(const boot *b, struct sockaddr_storage *sa, socklen_t *len, int *family,
                   cl_diag *d);
/* "HOST:PORT" or "the local socket PATH", into buf. */
const char *boot__rdv_name(const boot *b, char *buf, size_t cap);
/* The other end of fd, printable ("a local process" when unknown). */
void boot__peer_name(int fd, char *buf, size_t cap);

/* admit.c: rank 0 takes every other rank in through the listening socket
 * lfd (the caller closes it), up to the join timeout.  0, or a CL_E* with
 * d saying why (CL_EINVAL: a rank started wrong, which was told). */
int boot__admit(boot *b, int lfd, cl_diag *d);

#endif
