// coll_themis_op.cpp: eligibility of datatypes and ops for themis's reductions.
#include "coll_themis_op.h"

namespace themis {

const char *reduction_unsupported(ompi_datatype_t *dtype, ompi_op_t *op) {
    if (!ompi_op_is_commute(op)) return "non-commutative op";
    if (!ompi_datatype_is_predefined(dtype)) return "derived datatype";
    ptrdiff_t true_lb = 0, true_extent = 0;
    ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
    if (true_lb != 0) return "datatype with a non-zero lower bound";
    return nullptr;
}

size_t element_extent(ompi_datatype_t *dtype) {
    ptrdiff_t lb = 0, extent = 0;
    ompi_datatype_get_extent(dtype, &lb, &extent);
    return static_cast<size_t>(extent);
}

} // namespace themis
