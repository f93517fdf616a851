// cuda/kernel_choice.cpp: (op, datatype) -> reduction kernel (see kernel_choice.h).
#include "cuda/kernel_choice.h"

#include "cuda/reduce_kernels.h"

namespace themis {
namespace cuda {

namespace {

int kernel_op(ompi_op_t *op) {
    if (op == &ompi_mpi_op_sum.op) return THEMIS_REDUCE_SUM;
    if (op == &ompi_mpi_op_prod.op) return THEMIS_REDUCE_PROD;
    if (op == &ompi_mpi_op_min.op) return THEMIS_REDUCE_MIN;
    if (op == &ompi_mpi_op_max.op) return THEMIS_REDUCE_MAX;
    return -1;
}

// The kernel type of a predefined datatype, by the C type Open MPI's op framework uses
// for it; -1 for everything else.
int kernel_type(ompi_datatype_t *dtype) {
    if (!ompi_datatype_is_predefined(dtype) || dtype->id < 0 ||
        dtype->id >= OMPI_DATATYPE_MAX_PREDEFINED)
        return -1;
    switch (ompi_op_ddt_map[dtype->id]) {
    case OMPI_OP_BASE_TYPE_INT8_T: return THEMIS_REDUCE_I8;
    case OMPI_OP_BASE_TYPE_UINT8_T: return THEMIS_REDUCE_U8;
    case OMPI_OP_BASE_TYPE_INT16_T: return THEMIS_REDUCE_I16;
    case OMPI_OP_BASE_TYPE_UINT16_T: return THEMIS_REDUCE_U16;
    case OMPI_OP_BASE_TYPE_INT32_T: return THEMIS_REDUCE_I32;
    case OMPI_OP_BASE_TYPE_UINT32_T: return THEMIS_REDUCE_U32;
    case OMPI_OP_BASE_TYPE_INT64_T: return THEMIS_REDUCE_I64;
    case OMPI_OP_BASE_TYPE_UINT64_T: return THEMIS_REDUCE_U64;
    case OMPI_OP_BASE_TYPE_LONG: return sizeof(long) == 8 ? THEMIS_REDUCE_I64 : THEMIS_REDUCE_I32;
    case OMPI_OP_BASE_TYPE_UNSIGNED_LONG:
        return sizeof(long) == 8 ? THEMIS_REDUCE_U64 : THEMIS_REDUCE_U32;
    case OMPI_OP_BASE_TYPE_FLOAT: return THEMIS_REDUCE_F32;
    case OMPI_OP_BASE_TYPE_DOUBLE: return THEMIS_REDUCE_F64;
    default: return -1;
    }
}

// Bytes per element of each enum themis_reduce_type.
const size_t kElementSize[THEMIS_REDUCE_TYPES] = {4, 8, 2, 2, 1, 1, 2, 2, 4, 4, 8, 8};

} // namespace

std::optional<KernelChoice> choose_kernel(ompi_op_t *op, ompi_datatype_t *dtype, size_t extent) {
    const int kop = kernel_op(op), ktype = kernel_type(dtype);
    if (kop < 0 || ktype < 0 || kElementSize[ktype] != extent) return std::nullopt;
    // 8- and 16-bit integer sums stay with Open MPI: its vectorised op component
    // saturates them (ompi issue 8045), and every rank, whatever its memory, must
    // compute what the host would.
    if (kop == THEMIS_REDUCE_SUM && ktype >= THEMIS_REDUCE_I8 && ktype <= THEMIS_REDUCE_U16)
        return std::nullopt;
    return KernelChoice{kop, ktype, kElementSize[ktype]};
}

} // namespace cuda
} // namespace themis
