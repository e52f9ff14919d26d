/*
 * world.h - which rank of which world this process is, when something other
 * than commlab started it.
 *
 * A local run forks every rank itself (real/launch.c).  A run spread over
 * processes started elsewhere - one per host by hand, by torchrun's
 * convention, by mpirun or by srun - has one commlab process per rank; each
 * learns its rank, the world's size and where rank 0 holds the rendezvous
 * (real/boot.c) from, in this order:
 *
 *   --rank R --world N [--master HOST:PORT]     the command line
 *   RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT   torchrun's convention
 *   OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE   Open MPI's mpirun
 *   PMI_RANK, PMI_SIZE                           PMI launchers (MPICH's hydra)
 *   SLURM_PROCID, SLURM_NTASKS                   Slurm's srun
 *
 * Where the rendezvous is.  With a master address (--master, or
 * MASTER_ADDR and MASTER_PORT), rank 0 listens there over TCP and every
 * process proves COMMLAB_SECRET (at least 16 characters, shared by hand)
 * in a challenge-response; a run whose master is not a loopback address
 * refuses to start without it.  With no secret and a loopback master, or
 * with no master under a launcher that placed every rank on this host
 * (Open MPI's local size, Slurm's node count), the rendezvous is a Unix
 * socket named after the launcher's job, or the port, in a folder only
 * this user can enter: $XDG_RUNTIME_DIR/commlab when $XDG_RUNTIME_DIR is
 * a folder of this user's that no one else may enter; else a fresh folder
 * rank 0 makes with mkdtemp ($TMPDIR or /tmp, commlab-UID.XXXXXX), which
 * the others find by looking for a folder of that name that is theirs,
 * closed to others and holds the socket (real/boot.c).  No name another
 * user could make first is needed, so none can be squatted; another user
 * can neither take the socket's name nor reach it, and each side checks
 * the other's user id (SO_PEERCRED) before anything is said.  Rank 0 then
 * draws the job's secret and hands it out there.
 *
 * The key.  COMMLAB_SECRET is stretched by PBKDF2-HMAC-SHA256 (real/auth.h,
 * WORLD_KDF_ROUNDS rounds) salted with the launcher's job id (Slurm's job
 * and step, Open MPI's job, PMI's name space, torchrun's run id; none by
 * hand), so that guessing a weak secret from a recorded handshake costs
 * that much per guess, and two jobs of one launcher given one secret
 * derive different keys.  A random secret of 128 bits or more (`openssl
 * rand -hex 16`) is what the documentation asks for; the stretching does
 * not make a guessable one safe.  The caller takes COMMLAB_SECRET out of
 * the environment (world_args.secret), so that nothing it starts inherits
 * it.

 * Nothing here has global state: the environment is read through the
 * caller's lookup function, so tests can pass their own.
 */
#ifndef REAL_WORLD_H
#define REAL_WORLD_H

#include <stdbool.h>

#include "commlab.h"
#include "core/diag.h"
#include "real/auth.h"

#define WORLD_MAX_RANKS 4096
#define WORLD_KDF_ROUNDS 200000 /* PBKDF2 rounds: about 0.2 s once per process */
#define WORLD_UNIX_PATH 108     /* bytes of a Unix socket's path, its NUL included */

typedef enum world_rdv {
    WORLD_RDV_TCP,  /* rank 0 listens on master_host:master_port */
    WORLD_RDV_UNIX, /* a Unix socket at unix_path, in the private unix_dir: this host only */
} world_rdv;

typedef struct real_world {
    int rank, size;     /* 0 <= rank < size <= WORLD_MAX_RANKS */
    int local_rank;     /* among this host's ranks, or -1 when unknown */
    char source[64];    /* where rank and size came from: "Open MPI", ... */
    world_rdv rdv;
    char master_host[256];
    char master_port[8];
    char unix_dir[64];               /* the folder only this user may enter; with
                                        unix_fresh, mkdtemp's template until made */
    char unix_name[48];              /* the socket's name in unix_dir */
    char unix_path[WORLD_UNIX_PATH]; /* unix_dir/unix_name; "" while not known */
    bool unix_fresh;                 /* rank 0 makes a fresh unix_dir, the others find it */
    char job_id[96];       /* the launcher's job ("" by hand): salts the key */
    bool have_secret;      /* secret holds the key stretched from COMMLAB_SECRET (TCP) */
    unsigned char secret[AUTH_KEY_BYTES];
    double join_timeout;   /* seconds for every rank to reach the rendezvous */
} real_world;

/* What the command line said; -1 and NULL for what it did not. */
typedef struct world_args {
    int rank, world;
    const char *master;     /* "HOST:PORT" or "[V6]:PORT" */
    double join_timeout;    /* 0: the default, 60 s */
    const char *secret;     /* COMMLAB_SECRET, taken out of the environment by the
                               caller; NULL: none */
} world_args;

typedef const char *world_getenv_fn(const char *name);

/* Fills *w from a and the environment (get; a->secret for the secret).
 * Returns 0 with w->size == 0 when
 * nothing names a world (a plain local run), 0 with w filled for a world,
 * or CL_EINVAL with d saying which variable or option is wrong or missing. */
int world_detect(real_world *w, const world_args *a, world_getenv_fn *get, cl_diag *d);

/* Whether host ("localhost", or a numeric address) is a loopback address. */
bool world_is_loopback(const char *host);

/* Wipes the secret. */
void world_release(real_world *w);

#endif
