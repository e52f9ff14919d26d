/*
 * mpib_dl.h - the MPI library, opened when the mpi backend first needs it
 * (real/dlib.h says why it is not linked in); internal to real/mpi/.
 *
 * Every file of real/mpi/ that calls MPI includes this header instead of
 * <mpi.h>: it includes <mpi.h>, then makes each MPI function the backend
 * calls, and each predefined object it names, a field of one table filled
 * by mpib__load, so calls read as MPI's own API.  Open MPI's predefined
 * handles are the addresses of objects in the library (MPI_COMM_WORLD is
 * &ompi_mpi_comm_world), so those objects are in the table too.  A name
 * left out is a link error (commlab is not linked with libmpi), so the
 * list cannot fall behind the code.
 *
 * mpib_init, mpib_library and mpib_limits call mpib__load first; before
 * it returned 0 the table's fields are NULL.
 */
#ifndef REAL_MPIB_DL_H
#define REAL_MPIB_DL_H

#include <mpi.h>

#include "core/diag.h"

/* Open MPI's soname since 3.0 (the ABI its 4.x and 5.x keep). */
#define MPIB_SONAME "libmpi.so.40"

/* The functions and objects of the library commlab names. */
#define MPIB_SYMS(X)                                                            \
    X(MPI_Init_thread) X(MPI_Finalize) X(MPI_Get_library_version)               \
    X(MPI_Comm_set_errhandler) X(MPI_Comm_rank) X(MPI_Comm_size)                \
    X(MPI_Comm_dup) X(MPI_Comm_free) X(MPI_Comm_split) X(MPI_Comm_group)        \
    X(MPI_Group_translate_ranks) X(MPI_Group_free)                              \
    X(MPI_Isend) X(MPI_Irecv) X(MPI_Test) X(MPI_Cancel) X(MPI_Request_free)     \
    X(MPI_Get_count) X(MPI_Error_class) X(MPI_Error_string)                     \
    X(MPI_Barrier) X(MPI_Bcast) X(MPI_Reduce) X(MPI_Allreduce)                  \
    X(MPI_Gatherv) X(MPI_Scatterv) X(MPI_Allgatherv) X(MPI_Reduce_scatter)      \
    X(MPI_Alltoallv) X(MPI_Op_create) X(MPI_Op_free)                            \
    X(MPI_T_init_thread) X(MPI_T_finalize) X(MPI_T_cvar_get_num)                \
    X(MPI_T_cvar_get_info) X(MPI_T_cvar_handle_alloc) X(MPI_T_cvar_handle_free) \
    X(MPI_T_cvar_read)                                                          \
    X(ompi_mpi_comm_world) X(ompi_mpi_comm_null) X(ompi_mpi_group_null)         \
    X(ompi_request_null) X(ompi_mpi_errors_return) X(ompi_mpi_op_sum)           \
    X(ompi_mpi_datatype_null) X(ompi_mpi_byte) X(ompi_mpi_int)                  \
    X(ompi_mpi_unsigned) X(ompi_mpi_unsigned_long)                              \
    X(ompi_mpi_unsigned_long_long) X(ompi_mpi_uint64_t) X(ompi_mpi_double)      \
    X(ompi_mpi_float) X(ompi_mpi_int32_t) X(ompi_mpi_int64_t) X(ompi_mpi_uint16_t) \
    X(ompi_mpi_op_prod) X(ompi_mpi_op_min) X(ompi_mpi_op_max) X(ompi_mpi_op_band) \
    X(ompi_mpi_op_bor) X(ompi_mpi_op_bxor)

typedef struct mpib_syms {
#define MPIB_SYM_FIELD(name) __typeof__(name) *name;
    MPIB_SYMS(MPIB_SYM_FIELD)
#undef MPIB_SYM_FIELD
} mpib_syms;

/* The table, process-wide as the library it points into is (mpib_lib.c). */
extern mpib_syms mpib__lib;

/* Opens the MPI library and fills mpib__lib, once: later calls return 0
 * at once.  RTLD_GLOBAL, as when it was linked in: components an Open MPI
 * build opens itself may resolve its symbols from the global scope
 * (Debian's 4.1 link libmpi themselves, and run with RTLD_LOCAL too).  0, or CL_ENOSYS with d naming the library and
 * why it could not be loaded (the table is left empty, the library closed). */
int mpib__load(cl_diag *d);

/* The names, through the table; not in mpib_lib.c's loader, which names
 * the table's fields (MPIB_LOADER). */
#ifndef MPIB_LOADER
#define MPI_Init_thread (*mpib__lib.MPI_Init_thread)
#define MPI_Finalize (*mpib__lib.MPI_Finalize)
#define MPI_Get_library_version (*mpib__lib.MPI_Get_library_version)
#define MPI_Comm_set_errhandler (*mpib__lib.MPI_Comm_set_errhandler)
#define MPI_Comm_rank (*mpib__lib.MPI_Comm_rank)
#define MPI_Comm_size (*mpib__lib.MPI_Comm_size)
#define MPI_Comm_dup (*mpib__lib.MPI_Comm_dup)
#define MPI_Comm_free (*mpib__lib.MPI_Comm_free)
#define MPI_Comm_split (*mpib__lib.MPI_Comm_split)
#define MPI_Comm_group (*mpib__lib.MPI_Comm_group)
#define MPI_Group_translate_ranks (*mpib__lib.MPI_Group_translate_ranks)
#define MPI_Group_free (*mpib__lib.MPI_Group_free)
#define MPI_Isend (*mpib__lib.MPI_Isend)
#define MPI_Irecv (*mpib__lib.MPI_Irecv)
#define MPI_Test (*mpib__lib.MPI_Test)
#define MPI_Cancel (*mpib__lib.MPI_Cancel)
#define MPI_Request_free (*mpib__lib.MPI_Request_free)
#define MPI_Get_count (*mpib__lib.MPI_Get_count)
#define MPI_Error_class (*mpib__lib.MPI_Error_class)
#define MPI_Error_string (*mpib__lib.MPI_Error_string)
#define MPI_Barrier (*mpib__lib.MPI_Barrier)
#define MPI_Bcast (*mpib__lib.MPI_Bcast)
#define MPI_Reduce (*mpib__lib.MPI_Reduce)
#define MPI_Allreduce (*mpib__lib.MPI_Allreduce)
#define MPI_Gatherv (*mpib__lib.MPI_Gatherv)
#define MPI_Scatterv (*mpib__lib.MPI_Scatterv)
#define MPI_Allgatherv (*mpib__lib.MPI_Allgatherv)
#define MPI_Reduce_scatter (*mpib__lib.MPI_Reduce_scatter)
#define MPI_Alltoallv (*mpib__lib.MPI_Alltoallv)
#define MPI_Op_create (*mpib__lib.MPI_Op_create)
#define MPI_Op_free (*mpib__lib.MPI_Op_free)
#define MPI_T_init_thread (*mpib__lib.MPI_T_init_thread)
#define MPI_T_finalize (*mpib__lib.MPI_T_finalize)
#define MPI_T_cvar_get_num (*mpib__lib.MPI_T_cvar_get_num)
#define MPI_T_cvar_get_info (*mpib__lib.MPI_T_cvar_get_info)
#define MPI_T_cvar_handle_alloc (*mpib__lib.MPI_T_cvar_handle_alloc)
#define MPI_T_cvar_handle_free (*mpib__lib.MPI_T_cvar_handle_free)
#define MPI_T_cvar_read (*mpib__lib.MPI_T_cvar_read)
#define ompi_mpi_comm_world (*mpib__lib.ompi_mpi_comm_world)
#define ompi_mpi_comm_null (*mpib__lib.ompi_mpi_comm_null)
#define ompi_mpi_group_null (*mpib__lib.ompi_mpi_group_null)
#define ompi_request_null (*mpib__lib.ompi_request_null)
#define ompi_mpi_errors_return (*mpib__lib.ompi_mpi_errors_return)
#define ompi_mpi_op_sum (*mpib__lib.ompi_mpi_op_sum)
#define ompi_mpi_datatype_null (*mpib__lib.ompi_mpi_datatype_null)
#define ompi_mpi_byte (*mpib__lib.ompi_mpi_byte)
#define ompi_mpi_int (*mpib__lib.ompi_mpi_int)
#define ompi_mpi_unsigned (*mpib__lib.ompi_mpi_unsigned)
#define ompi_mpi_unsigned_long (*mpib__lib.ompi_mpi_unsigned_long)
#define ompi_mpi_unsigned_long_long (*mpib__lib.ompi_mpi_unsigned_long_long)
#define ompi_mpi_uint64_t (*mpib__lib.ompi_mpi_uint64_t)
#define ompi_mpi_double (*mpib__lib.ompi_mpi_double)
#define ompi_mpi_float (*mpib__lib.ompi_mpi_float)
#define ompi_mpi_int32_t (*mpib__lib.ompi_mpi_int32_t)
#define ompi_mpi_int64_t (*mpib__lib.ompi_mpi_int64_t)
#define ompi_mpi_uint16_t (*mpib__lib.ompi_mpi_uint16_t)
#define ompi_mpi_op_prod (*mpib__lib.ompi_mpi_op_prod)
#define ompi_mpi_op_min (*mpib__lib.ompi_mpi_op_min)
#define ompi_mpi_op_max (*mpib__lib.ompi_mpi_op_max)
#define ompi_mpi_op_band (*mpib__lib.ompi_mpi_op_band)
#define ompi_mpi_op_bor (*mpib__lib.ompi_mpi_op_bor)
#define ompi_mpi_op_bxor (*mpib__lib.ompi_mpi_op_bxor)
#endif

#endif
