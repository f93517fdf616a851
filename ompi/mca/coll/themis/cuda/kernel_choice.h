// cuda/kernel_choice.h: which reduction kernel (cuda/reduce_kernels.h) computes an
// (op, datatype) pair exactly as Open MPI's host functions do.
#pragma once

#include "coll_themis_prelude.h"

#if THEMIS_HAVE_CUDA

#include <cstddef>
#include <optional>

#include "ompi/op/op.h"

namespace themis {
namespace cuda {

struct KernelChoice {
    int op;   // enum themis_reduce_op
    int type; // enum themis_reduce_type
    size_t element_size;
};

// The kernel for `op` over `dtype` elements `extent` bytes apart; none for user ops, pairs,
// complex, bool, long double, Fortran types, gaps between elements, and the 8- and 16-bit
// integer sums (see the .cpp): the host reduces those.
std::optional<KernelChoice> choose_kernel(ompi_op_t *op, ompi_datatype_t *dtype, size_t extent);

} // namespace cuda
} // namespace themis

#endif // THEMIS_HAVE_CUDA
