/*
 * commlab.h - the API a communication pattern is written against.
 *
 * A pattern is one rank's program: a plain C function that receives a
 * communicator and the run's arguments.  The same function runs under every
 * backend: modeled (sim: ranks are coroutines in virtual time) or measured
 * (shm, tcp, rdma, mpi: ranks are processes timed by the wall clock).
 * Nothing here knows which backend runs; this is the only header a pattern
 * includes.
 *
 * Conventions
 *   - Functions that can fail return 0 or a negative CL_E* code.  A failed
 *     call changes nothing the caller can see and leaves no request behind.
 *   - Times are double seconds, sizes are size_t bytes.
 *   - A buffer handed to a send or receive belongs to the operation from the
 *     call until the matching cl_wait/cl_waitall/cl_test reports completion:
 *     do not write a send buffer or read a receive buffer before then.
 *   - In size-only runs (cl_payload() is false, `--no-payload`) cl_alloc
 *     returns NULL and no byte moves; buffers may then be NULL.
 */
#ifndef COMMLAB_H
#define COMMLAB_H

#include <stdbool.h>
#include <stddef.h>

/* ---- errors: one table makes the enum, cl_strerror() and cl_errname() ---- */

#define CL_ERRNO_MAP(X)                                                   \
    X(INVAL, -1, "invalid argument")                                      \
    X(NOMEM, -2, "out of memory")                                         \
    X(RANGE, -3, "value out of range")                                    \
    X(PARSE, -4, "cannot parse")                                          \
    X(IO, -5, "input/output error")                                       \
    X(NOENT, -6, "no such entry")                                         \
    X(TRUNC, -7, "receive buffer smaller than the message")               \
    X(DEADLOCK, -8, "deadlock: no rank can make progress")                \
    X(CHECK, -9, "data check failed")                                     \
    X(NOSYS, -10, "not implemented")                                      \
    X(PEER, -11, "a peer rank failed")                                    \
    X(STACK, -12, "rank stack overflow")                                  \
    X(PROTO, -13, "protocol error")                                       \
    X(CONFIG, -14, "bad configuration")                                   \
    X(TIMEOUT, -15, "timed out")

typedef enum cl_errno {
    CL_OK = 0,
#define CL__ERRNO_ENUM(name, code, text) CL_E##name = (code),
    CL_ERRNO_MAP(CL__ERRNO_ENUM)
#undef CL__ERRNO_ENUM
} cl_errno;

/* Text for an error code; never NULL, "unknown error" for unknown codes. */
const char *cl_strerror(int err);
/* Name of an error code, "CL_EINVAL"; "CL_OK" for 0, "CL_E?" if unknown. */
const char *cl_errname(int err);


/* ---- handles ---- */

typedef struct cl_comm cl_comm;       /* a communicator: a rank's view of a group */
typedef struct cl_request cl_request; /* one non-blocking operation in flight */

#define CL_ANY_SOURCE (-1) /* a receive that takes a message from any rank */
#define CL_ANY_TAG (-1)    /* a receive that takes any tag */

typedef struct cl_status {
    int source;   /* rank (in the communicator) the message came from */
    int tag;      /* the message's tag */
    size_t bytes; /* bytes received (0 for a send) */
} cl_status;

/* ---- element types and reduction operators ----
 * A reduction combines every rank's buffer element by element.  The types
 * and operators are those of PyTorch's ReduceOp and the dtypes training
 * reduces in; bf16 is bfloat16 (8 exponent bits, 8 significant) and f16
 * IEEE binary16.  Floating-point results are rounded to nearest even; bf16
 * and f16 are computed in float and rounded once, which gives the same
 * result as computing in the type itself.  The bitwise operators take
 * integer types only.  Integer sum and product wrap around (two's
 * complement) rather than overflow. */
typedef enum cl_dtype { CL_F64, CL_F32, CL_BF16, CL_F16, CL_I32, CL_I64 } cl_dtype;
typedef enum cl_op {
    CL_OP_SUM,
    CL_OP_AVG,  /* a sum, divided by the rank count at the end (cl_reduce_finish) */
    CL_OP_PROD,
    CL_OP_MIN,
    CL_OP_MAX,
    CL_OP_BAND, /* bitwise and, or, xor: integer types only */
    CL_OP_BOR,
    CL_OP_BXOR,
} cl_op;

/* One training step (the training-step pattern, chapter 07), read from a
 * step file by core/step.h: the model, how it is laid out on the ranks,
 * and the sizes derived from them.  Rank r of a world of tp x dp x pp
 * ranks is tensor-parallel rank r % tp, data-parallel replica
 * (r / tp) % dp and pipeline stage r / (tp dp). */
typedef struct cl_step_rank cl_step_rank;

/* A pattern: one rank's program for one iteration (its arguments,
 * cl_args, below).  Returns 0, a CL_E* code from a failed call, or
 * CL_ECHECK after cl_fail(). */
typedef struct cl_args cl_args;
typedef int cl_pattern_fn(cl_comm *c, const cl_args *a);

typedef struct cl_step {
    int layers;          /* transformer layers of the model */
    int tp, dp, pp;      /* tensor-parallel, data-parallel, pipeline ranks */
    int microbatches;    /* per step, per data-parallel replica */
    bool one_f_one_b;    /* the pipeline's schedule: 1F1B (true) or GPipe */
    int zero;            /* ZeRO stage: 0 (replicated), 1 and 2 (gradients
                            reduce-scattered, parameters all-gathered) or 3
                            (parameters sharded, gathered per layer) */
    bool overlap;        /* ZeRO 0-2: buckets start during the last backward */
    size_t dtype_bytes;  /* bytes of one element: 2 (bf16), 4 (f32) or 8 (f64) */
    double t_fwd, t_bwd; /* seconds of compute per layer per microbatch, on one rank */
    size_t bucket;       /* bytes per data-parallel gradient bucket (ZeRO 0-2) */
    size_t layer_bytes;  /* parameters of one layer on one rank: 12 h^2 dtype / tp */
    size_t act_bytes;    /* activations of a microbatch between stages: s b h dtype */
    size_t tp_bytes;     /* one tensor-parallel all-reduce: s b h dtype */
    /* The collectives' algorithms (chapter 04's patterns; NULL: ring): the
     * tensor-parallel all-reduce, the gradient buckets' all-reduce (ZeRO 0
     * without overlap), ZeRO 3's all-gather and reduce-scatter; and the
     * names of the first two, for what is printed. */
    cl_pattern_fn *tp_allreduce, *dp_allreduce, *dp_allgather, *dp_reducescatter;
    const char *tp_algo, *dp_algo;
    cl_step_rank *out;   /* per world rank, written by that rank when not NULL:
                            what it sent and computed (memory the ranks share
                            with the caller: the simulator's, or pages mapped
                            shared before a measured run forks its ranks) */
} cl_step;

/* What one rank of a training step did, bytes it posted per kind. */
struct cl_step_rank {
    unsigned long long tp, pp, dp; /* bytes sent: tensor-parallel all-reduces,
                                      pipeline activations and gradients,
                                      data-parallel (or ZeRO-3) collectives */
    double compute;      /* seconds of cl_compute for the layers */
    double pipe_end;     /* seconds from the step's start to its last backward */
    double tp_wait, pp_wait, dp_wait; /* seconds it waited in each kind's calls:
                                         the communication nothing hid */
    int peak_microbatches; /* the most microbatches whose activations it held */
    double end;          /* seconds from the step's start to its end: its
                            compute and its three waits, on sim exactly */
};

/* The run's arguments, the same on every rank. */
typedef struct cl_args {
    size_t bytes;     /* message size of this run, bytes */
    int iteration;    /* 0, 1, ... for timed iterations; negative for warm-up */
    int microbatches; /* pipeline: microbatches per iteration */
    double compute;   /* pipeline: seconds of compute per stage per microbatch */
    size_t chunk;     /* chunked, broadcast-chain: bytes per piece (0: bytes / 8) */
    int pieces;       /* relay-chunked: pieces; overlap: gradient buckets (0: the pattern's default) */
    int group;        /* allreduce-hierarchical: ranks per group (0: one group of all) */
    const char *fix;  /* deadlock: NULL, "order" or "nonblocking" */
    const char *schedule; /* pipeline: NULL (gpipe), "gpipe" or "1f1b" */
    cl_op op;         /* reductions: the operator (--op; 0: sum) */
    cl_dtype dtype;   /* reductions: the element type (--dtype; 0: f64) */
    const cl_step *step; /* training-step: the step (`commlab step`); NULL for others */
} cl_args;

/* A pattern in a file of its own (`commlab run ./mine.c`) defines this one
 * function; commlab compiles the file with -DCL_STUDENT, so a definition
 * with another signature is a compile error rather than a crash. */
#ifdef CL_STUDENT
cl_pattern_fn pattern;
#endif

/* Returns from the calling function when call fails. */
#define CL_TRY(call)                  \
    do {                              \
        int cl__err = (call);         \
        if (cl__err)                  \
            return cl__err;           \
    } while (0)

/* ---- who am I ---- */

int cl_rank(const cl_comm *c); /* 0 .. cl_size(c) - 1; cannot fail */
int cl_size(const cl_comm *c); /* ranks in the communicator; cannot fail */
/* Bytes this rank has posted to send on c (cl_send, cl_isend) since c was
 * made; a group's count starts at 0 and counts only its own sends.
 * Cannot fail. */
unsigned long long cl_sent_bytes(const cl_comm *c);

/* ---- point-to-point ----
 * Tags are >= 0.  A message of n bytes up to the eager limit completes at
 * the sender once injected; above it the send waits for the matching
 * receive (rendezvous) and returns when the data has arrived.  Messages
 * between one pair with one tag arrive in the order they were sent.  A
 * receive buffer smaller than the matched message fails with CL_ETRUNC. */

int cl_send(cl_comm *c, const void *buf, size_t bytes, int dst, int tag);
int cl_recv(cl_comm *c, void *buf, size_t bytes, int src, int tag, cl_status *st);

/* Non-blocking: *req is set on success and must be completed by cl_wait,
 * cl_waitall or a cl_test that reports done; the buffer belongs to the
 * operation until then.  On failure *req is NULL and nothing was posted. */
int cl_isend(cl_comm *c, const void *buf, size_t bytes, int dst, int tag, cl_request **req);
int cl_irecv(cl_comm *c, void *buf, size_t bytes, int src, int tag, cl_request **req);

/* Blocks until *req completes, frees it and sets *req = NULL.  st may be
 * NULL.  A NULL *req returns 0 at once. */
int cl_wait(cl_comm *c, cl_request **req, cl_status *st);
/* Waits for all n requests (NULL entries are skipped); sts may be NULL or
 * an array of n.  Returns the first error of any request. */
int cl_waitall(cl_comm *c, int n, cl_request **reqs, cl_status *sts);
/* Sets *done; when true the request was completed and freed as by cl_wait. */
int cl_test(cl_comm *c, cl_request **req, bool *done, cl_status *st);

/* ---- groups and collectives ---- */

/* Every rank of c waits until all have arrived (dissemination: log2(size)
 * rounds of point-to-point messages). */
int cl_barrier(cl_comm *c);
/* A sub-communicator of the n ranks listed (ranks of c, no duplicates),
 * like torch's new_group: every rank of c calls it with the same list, in
 * the same order relative to its other cl_group calls.  Members get a new
 * communicator in *out (rank = position in the list); others get NULL.
 * Free with cl_group_free. */
int cl_group(cl_comm *c, const int *ranks, int n, cl_comm **out);
void cl_group_free(cl_comm *group);

/* ---- reducing ---- */

/* Bytes of one element of t (8, 4, 2, 2, 4, 8); 0 for an unknown type. */
size_t cl_dtype_size(cl_dtype t);
/* "f64", "f32", "bf16", "f16", "i32", "i64"; "sum", "avg", "prod", "min",
 * "max", "band", "bor", "bxor"; "?" when unknown.  Cannot fail. */
const char *cl_dtype_name(cl_dtype t);
const char *cl_op_name(cl_op op);
/* dst[i] = dst[i] op src[i] for i < count elements of type t (avg adds;
 * see cl_reduce_finish).  dst and src are the same buffer or do not
 * overlap, each on a boundary of its element size.  Measured, it computes
 * and takes the time computing takes; modeled, it computes and advances
 * this rank's clock by count * cl_dtype_size(t) bytes times the device's
 * gamma (seconds per byte reduced: 1 / the reduce_bandwidth of the tier
 * or topology).  In size-only runs (NULL buffers) it computes nothing and
 * costs the same.  CL_EINVAL (nothing done) for an unknown type or
 * operator, a bitwise operator on a floating type, a misaligned buffer,
 * or a NULL one where buffers are real. */
int cl_reduce_local(cl_comm *c, void *dst, const void *src, size_t count, cl_dtype t, cl_op op);
/* The last step of a reduction over n ranks of the count elements of buf:
 * for avg each becomes itself / n (floating types: rounded once; integer
 * types: truncated toward zero), costing what a cl_reduce_local of them
 * costs; for every other operator it does nothing.  CL_EINVAL as
 * cl_reduce_local, or for n < 1. */
int cl_reduce_finish(cl_comm *c, void *buf, size_t count, cl_dtype t, cl_op op, int n);
/* Element i of a buffer of type t, as a double (an i64 beyond 2^53 is
 * rounded).  Cannot fail; t must be known. */
double cl_value(cl_dtype t, const void *buf, size_t i);
/* Stores v into element i: rounded to nearest even in a floating type
 * (beyond its range: infinity), rounded to nearest and clamped to the
 * range of an integer type (NaN: 0).  Cannot fail; t must be known. */
void cl_set_value(cl_dtype t, void *buf, size_t i, double v);

/* ---- time, memory, output ---- */

/* Modeled: advances this rank's clock; measured: busy work that long. */
int cl_compute(cl_comm *c, double seconds);
/* Seconds on the backend's clock (virtual or CLOCK_MONOTONIC). */
double cl_now(const cl_comm *c);
/* Memory for buffers, freed by commlab when the pattern returns: on a
 * 64-byte line, and on a page from a page up (measured backends).  NULL in
 * size-only runs (cl_payload false) and when out of memory (the run then
 * fails with CL_ENOMEM).  Zeroed while cl_checking() is true; in the
 * other timed iterations of a measured run the same call of the previous
 * iteration hands back its block as it was, so the clock does not time
 * page faults and zeroing. */
void *cl_alloc(cl_comm *c, size_t bytes);
/* Memory for the pattern's own arrays of count elements of size bytes (a
 * request per peer, a buffer pointer per rank, a list of ranks): freed
 * when the pattern returns, like cl_alloc's blocks, but handed out in
 * size-only runs too, and never named as a buffer by --debug.  Write an
 * element before reading it.  NULL when out of memory (the run then fails
 * with CL_ENOMEM) or when count * size overflows. */
void *cl_array(cl_comm *c, size_t count, size_t size);
/* True when this iteration checks data: always modeled; measured, in the
 * warm-up and the first timed iteration (every iteration with --check).
 * cl_fill and cl_verify do nothing when it is false, so the timed
 * iterations measure communication, not the checks. */
bool cl_checking(const cl_comm *c);
/* False in size-only runs: buffers are NULL and data checks are skipped. */
bool cl_payload(const cl_comm *c);
/* Offset into a buffer that may be NULL in size-only runs. */
#define CL_AT(buf, offset) ((buf) ? (void *)((char *)(buf) + (offset)) : NULL)
/* Prints one line prefixed "rank N: "; only during the first timed
 * iteration, so repeated iterations do not flood the output.  It goes to
 * stdout beside a table, to stderr when the results are --csv or --json. */
void cl_printf(cl_comm *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Fills buf with bytes derived from seed (a fast deterministic stream);
 * a NULL buf, or an iteration that does not check (cl_checking), does
 * nothing.  Cannot fail. */
void cl_fill(const cl_comm *c, void *buf, size_t bytes, unsigned long long seed);
/* Checks buf against cl_fill(seed); on a difference reports the first
 * differing byte through cl_fail ("what": the buffer's role) and returns
 * CL_ECHECK.  A NULL buf (size-only run) or an iteration that does not
 * check passes. */
int cl_verify(cl_comm *c, const void *buf, size_t bytes, unsigned long long seed,
              const char *what);
/* Reports a failed data check ("rank 2: expected 30, got 20") and returns
 * CL_ECHECK for the pattern to return. */
int cl_fail(cl_comm *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* COMMLAB_H */
