/* mpib_coll.c - `run COLLECTIVE --backend mpi --library`: the MPI
 * library's own collective as a rank program, beside chapter 04's
 * hand-written algorithms.  Each starts from the data the chapter's
 * algorithms start from and checks what they check (coll.h: the same
 * blocks, seeds and results, in the run's type and operator), so a row of
 * the library is the same work as a row of an algorithm.
 *
 * The call is the blocking one (MPI_Allreduce, not MPI_Iallreduce): it is
 * the one a program calls and the one the library tunes (Open MPI's
 * non-blocking collectives run other algorithms).  A rank inside it is
 * not polled, so the watchdog cannot stop it there; every rank makes the
 * same call, so it cannot deadlock, and a rank that dies ends the job
 * through its guardian and mpirun (cli/row_mpi.h).  The call's name is
 * the rank's current call, for the report of a rank that hangs in it. */
#ifdef CL_HAVE_MPI
#include "real/mpi/mpib.h"

#include <limits.h>
#include <string.h>

#include "chapters/04-collectives/coll.h"
#include "core/comm.h"
#include "core/reduce.h"
#include "real/mpi/mpib_impl.h"
#include "real/rank.h"

/* Says that a count does not fit MPI's int; CL_ERANGE.  Called only on a
 * communicator of this backend (after enter). */
static int too_large(cl_comm *c, size_t units, const char *call)
{
    rank_detail(c->world->backend, "%s counts in an int: %zu units is more than %d", call,
                units, INT_MAX);
    return CL_ERANGE;
}

/* The communicator of c's context; CL_EINVAL when c is not this
 * backend's (the library's rows are offered on --backend mpi only). */
static int comm_of(cl_comm *c, MPI_Comm *comm)
{
    *comm = mpib__comm(c);
    return *comm == MPI_COMM_NULL ? CL_EINVAL : 0;
}

/* The library's call named call is about to run: the rank's current call,
 * for the report of a rank that hangs in it. */
static void begin(cl_comm *c, const char *call)
{
    c->world->call.name = call;
}

/* It returned e: 0, or CL_EIO with MPI's words for the run's report. */
static int end(cl_comm *c, int e)
{
    const char *call = c->world->call.name;
    c->world->call.name = NULL;
    if (e == MPI_SUCCESS)
        return 0;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(e, msg, &len) != MPI_SUCCESS)
        len = 0;
    msg[len] = 0;
    rank_detail(c->world->backend, "%s failed: %s", call, len ? msg : "MPI error");
    return CL_EIO;
}

/* counts[j] and displs[j]: block j of total units cut into k (coll.h);
 * each of k ints, from cl_alloc.  CL_ERANGE past int. */
static int blocks(cl_comm *c, size_t total, int **counts, int **displs, const char *call)
{
    int k = cl_size(c);
    if (total > INT_MAX)
        return too_large(c, total, call);
    *counts = cl_alloc(c, (size_t)k * sizeof **counts);
    *displs = cl_alloc(c, (size_t)k * sizeof **displs);
    if (!*counts || !*displs)
        return CL_ENOMEM;
    for (int j = 0; j < k; j++) {
        (*counts)[j] = (int)coll_len(total, k, j);
        (*displs)[j] = (int)coll_first(total, k, j);
    }
    return 0;
}

/* ---- the reductions: the run's type and operator as MPI's ---- */

/* bf16 and f16 are not MPI types: their elements travel as MPI_UINT16_T
 * and a user operator combines them with commlab's own arithmetic
 * (core/reduce.h), one function per type and operator as MPI passes
 * none of its own. */
#define HALF_OP(name, t, op)                                                          \
    static void name(void *in, void *inout, int *len, MPI_Datatype *type)             \
    {                                                                                 \
        (void)type;                                                                   \
        reduce_apply(inout, in, (size_t)*len, t, op);                                 \
    }
HALF_OP(bf16_sum, CL_BF16, CL_OP_SUM)
HALF_OP(bf16_prod, CL_BF16, CL_OP_PROD)
HALF_OP(bf16_min, CL_BF16, CL_OP_MIN)
HALF_OP(bf16_max, CL_BF16, CL_OP_MAX)
HALF_OP(f16_sum, CL_F16, CL_OP_SUM)
HALF_OP(f16_prod, CL_F16, CL_OP_PROD)
HALF_OP(f16_min, CL_F16, CL_OP_MIN)
HALF_OP(f16_max, CL_F16, CL_OP_MAX)

/* The MPI type and operator of a run's reduction (avg: MPI_SUM, divided
 * after), a user operator made for bf16 and f16 (*made: free it with
 * MPI_Op_free).  Made before the call, so the call alone is MPI's work
 * and the operator's making the pattern's. */
typedef struct lib_red {
    coll_red r;
    MPI_Datatype type;
    MPI_Op op;
    bool made;
} lib_red;

static int lib_red_init(cl_comm *c, lib_red *l, const cl_args *a)
{
    static MPI_User_function *const half[2][4] = {
        {bf16_sum, bf16_prod, bf16_min, bf16_max},
        {f16_sum, f16_prod, f16_min, f16_max},
    };
    l->made = false;
    switch (a->dtype) {
    case CL_F64: l->type = MPI_DOUBLE; break;
    case CL_F32: l->type = MPI_FLOAT; break;
    case CL_I32: l->type = MPI_INT32_T; break;
    case CL_I64: l->type = MPI_INT64_T; break;
    case CL_BF16: case CL_F16: l->type = MPI_UINT16_T; break;
    }
    switch (a->op) {
    case CL_OP_SUM: case CL_OP_AVG: l->op = MPI_SUM; break;
    case CL_OP_PROD: l->op = MPI_PROD; break;
    case CL_OP_MIN: l->op = MPI_MIN; break;
    case CL_OP_MAX: l->op = MPI_MAX; break;
    case CL_OP_BAND: l->op = MPI_BAND; break;
    case CL_OP_BOR: l->op = MPI_BOR; break;
    case CL_OP_BXOR: l->op = MPI_BXOR; break;
    }
    if (a->dtype != CL_BF16 && a->dtype != CL_F16)
        return 0;
    int which = a->op == CL_OP_PROD ? 1 : a->op == CL_OP_MIN ? 2 : a->op == CL_OP_MAX ? 3 : 0;
    begin(c, "MPI_Op_create");
    CL_TRY(end(c, MPI_Op_create(half[a->dtype == CL_F16][which], 1, &l->op)));
    l->made = true;
    return 0;
}

/* The operator is given back whatever the call returned: err. */
static int lib_red_release(lib_red *l, int err)
{
    if (l->made)
        MPI_Op_free(&l->op);
    return err;
}

static int lib_allreduce(cl_comm *c, const cl_args *a)
{
    lib_red l;
    MPI_Comm comm;
    CL_TRY(comm_of(c, &comm));
    coll_red *r = &l.r;
    *r = coll_red_of(a);
    size_t count = coll_count(r, a->bytes);
    if (count > INT_MAX)
        return too_large(c, count, "MPI_Allreduce");
    void *x = cl_alloc(c, count * r->size);
    coll_reduce_init(c, r, x, count);
    CL_TRY(lib_red_init(c, &l, a));
    begin(c, "MPI_Allreduce");
    int err = end(c, MPI_Allreduce(MPI_IN_PLACE, x, (int)count, l.type, l.op, comm));
    CL_TRY(lib_red_release(&l, err));
    CL_TRY(coll_finish(c, r, x, count, cl_size(c)));
    return coll_reduce_verify(c, r, x, 0, count, "result");
}

static int lib_reducescatter(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), *counts, *displs;
    lib_red l;
    MPI_Comm comm;
    CL_TRY(comm_of(c, &comm));
    coll_red *r = &l.r;
    *r = coll_red_of(a);
    size_t count = coll_count(r, a->bytes);
    CL_TRY(blocks(c, count, &counts, &displs, "MPI_Reduce_scatter"));
    void *x = cl_alloc(c, count * r->size);
    void *mine = cl_alloc(c, (size_t)counts[rank] * r->size);
    coll_reduce_init(c, r, x, count);
    CL_TRY(lib_red_init(c, &l, a));
    begin(c, "MPI_Reduce_scatter");
    int err = end(c, MPI_Reduce_scatter(x, mine, counts, l.type, l.op, comm));
    CL_TRY(lib_red_release(&l, err));
    CL_TRY(coll_finish(c, r, mine, (size_t)counts[rank], cl_size(c)));
    return coll_reduce_verify(c, r, mine, (size_t)displs[rank], (size_t)counts[rank],
                              "reduced block");
}

static int lib_reduce(cl_comm *c, const cl_args *a)
{
    lib_red l;
    MPI_Comm comm;
    CL_TRY(comm_of(c, &comm));
    coll_red *r = &l.r;
    *r = coll_red_of(a);
    size_t count = coll_count(r, a->bytes);
    if (count > INT_MAX)
        return too_large(c, count, "MPI_Reduce");
    void *x = cl_alloc(c, count * r->size);
    coll_reduce_init(c, r, x, count);
    bool root = cl_rank(c) == 0;
    CL_TRY(lib_red_init(c, &l, a));
    begin(c, "MPI_Reduce");
    int err = end(c, MPI_Reduce(root ? MPI_IN_PLACE : x, root ? x : NULL, (int)count, l.type,
                                l.op, 0, comm));
    CL_TRY(lib_red_release(&l, err));
    if (!root)
        return 0;
    CL_TRY(coll_finish(c, r, x, count, cl_size(c)));
    return coll_reduce_verify(c, r, x, 0, count, "result at rank 0");
}

static int lib_broadcast(cl_comm *c, const cl_args *a)
{
    MPI_Comm comm;
    CL_TRY(comm_of(c, &comm));
    if (a->bytes > INT_MAX)
        return too_large(c, a->bytes, "MPI_Bcast");
    unsigned char *x = cl_alloc(c, a->bytes);
    if (cl_rank(c) == 0)
        cl_fill(c, x, a->bytes, coll_seed(0, 0));
    begin(c, "MPI_Bcast");
    CL_TRY(end(c, MPI_Bcast(x, (int)a->bytes, MPI_BYTE, 0, comm)));
    return cl_verify(c, x, a->bytes, coll_seed(0, 0), "broadcast buffer");
}

static int lib_allgather(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c), *counts, *displs;
    size_t n = a->bytes;
    MPI_Comm comm;
    CL_TRY(comm_of(c, &comm));
    CL_TRY(blocks(c, n, &counts, &displs, "MPI_Allgatherv"));
    unsigned char *x = cl_alloc(c, n);
    cl_fill(c, CL_AT(x, coll_first(n, k, rank)), coll_len(n, k, rank), coll_seed(rank, rank));
    begin(c, "MPI_Allgatherv");
    CL_TRY(end(c, MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, x, counts, displs,
                                 MPI_BYTE, comm)));
    return coll_gathered_verify(c, x, n);
}

static int lib_gather(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c), *counts, *displs;
    size_t n = a->bytes;
    MPI_Comm comm;
    CL_TRY(comm_of(c, &comm));
    CL_TRY(blocks(c, n, &counts, &displs, "MPI_Gatherv"));
    unsigned char *x = cl_alloc(c, n);
    unsigned char *mine = CL_AT(x, coll_first(n, k, rank));
    cl_fill(c, mine, coll_len(n, k, rank), coll_seed(rank, rank));
    begin(c, "MPI_Gatherv");
    CL_TRY(end(c, MPI_Gatherv(rank == 0 ? MPI_IN_PLACE : mine, counts[rank], MPI_BYTE, x,
                              counts, displs, MPI_BYTE, 0, comm)));
    return rank == 0 ? coll_gathered_verify(c, x, n) : 0;
}

static int lib_scatter(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c), *counts, *displs;
    size_t n = a->bytes;
    MPI_Comm comm;
    CL_TRY(comm_of(c, &comm));
    CL_TRY(blocks(c, n, &counts, &displs, "MPI_Scatterv"));
    unsigned char *x = cl_alloc(c, rank == 0 ? n : coll_len(n, k, rank));
    for (int d = 0; rank == 0 && d < k; d++)
        cl_fill(c, CL_AT(x, coll_first(n, k, d)), coll_len(n, k, d), coll_seed(0, d));
    begin(c, "MPI_Scatterv");
    CL_TRY(end(c, MPI_Scatterv(x, counts, displs, MPI_BYTE, rank == 0 ? MPI_IN_PLACE : x,
                               counts[rank], MPI_BYTE, 0, comm)));
    return cl_verify(c, x, coll_len(n, k, rank), coll_seed(0, rank), "scattered block");
}

static int lib_alltoall(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), k = cl_size(c), *scounts, *sdispls, *rcounts, *rdispls;
    size_t n = a->bytes, mine = coll_len(n, k, rank); /* every block this rank receives */
    MPI_Comm comm;
    CL_TRY(comm_of(c, &comm));
    CL_TRY(blocks(c, n, &scounts, &sdispls, "MPI_Alltoallv"));
    CL_TRY(blocks(c, (size_t)k * mine, &rcounts, &rdispls, "MPI_Alltoallv"));
    unsigned char *out = cl_alloc(c, n), *in = cl_alloc(c, (size_t)k * mine);
    for (int d = 0; d < k; d++)
        cl_fill(c, CL_AT(out, coll_first(n, k, d)), coll_len(n, k, d), coll_seed(rank, d));
    begin(c, "MPI_Alltoallv");
    CL_TRY(end(c, MPI_Alltoallv(out, scounts, sdispls, MPI_BYTE, in, rcounts, rdispls, MPI_BYTE,
                                comm)));
    for (int s = 0; s < k; s++)
        CL_TRY(cl_verify(c, CL_AT(in, (size_t)s * mine), mine, coll_seed(s, rank),
                         "received block"));
    return 0;
}

/* A barrier moves no data: that every rank returns is its check. */
static int lib_barrier(cl_comm *c, const cl_args *a)
{
    (void)a;
    MPI_Comm comm;
    CL_TRY(comm_of(c, &comm));
    begin(c, "MPI_Barrier");
    return end(c, MPI_Barrier(comm));
}

static const struct {
    const char *collective; /* core/pattern.h's name */
    cl_pattern_fn *fn;
} calls[] = {
    {"broadcast", lib_broadcast}, {"reduce", lib_reduce},
    {"gather", lib_gather},       {"scatter", lib_scatter},
    {"allgather", lib_allgather}, {"reducescatter", lib_reducescatter},
    {"allreduce", lib_allreduce}, {"alltoall", lib_alltoall},
    {"barrier", lib_barrier},
};

cl_pattern_fn *mpib_coll_find(const char *collective)
{
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++)
        if (strcmp(calls[i].collective, collective) == 0)
            return calls[i].fn;
    return NULL;
}
#endif
