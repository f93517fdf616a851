// coll_themis_allreduce.cpp: MPI_Allreduce.
//
// The result is built in place in rbuf (after copying sbuf there): every chunk is
// reduce-scattered and all-gathered over the dimensions in its own order. A datatype
// whose last element is shorter than its extent (e.g. MPI_DOUBLE_INT) runs in a
// temporary buffer, so themis never writes past the end of the user's buffer.
#include "coll_themis_entry.h"
#include "coll_themis_op.h"

#include "opal/util/output.h"

using namespace themis;

namespace {

void allreduce(Context &ctx, const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype,
               ompi_op_t *op) {
    const size_t extent = element_extent(dtype);
    ptrdiff_t true_lb = 0, true_extent = 0;
    ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
    if (sbuf != MPI_IN_PLACE) ompi_datatype_copy_content_same_ddt(dtype, count, rbuf, sbuf);

    const size_t bytes = extent * static_cast<size_t>(count);
    const bool padded = static_cast<size_t>(true_extent) < extent;
    char *work = padded ? static_cast<char *>(ctx.memory().acquire(bytes)) : static_cast<char *>(rbuf);
    if (padded) ompi_datatype_copy_content_same_ddt(dtype, count, work, rbuf);
    OpReducer reducer(op, dtype, extent);
    ctx.run(ctx.request(Collective::AllReduce, extent, {static_cast<uint64_t>(count)}), work,
            reducer);
    if (padded) {
        ompi_datatype_copy_content_same_ddt(dtype, count, rbuf, work);
        ctx.memory().release(work, bytes);
    }
}

} // namespace

extern "C" int mca_coll_themis_allreduce(const void *sbuf, void *rbuf, int count,
                                         struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                         struct ompi_communicator_t *comm,
                                         mca_coll_base_module_t *module) {
    size_t type_size = 0;
    ompi_datatype_type_size(dtype, &type_size);
    const char *unsupported = reduction_unsupported(dtype, op);
    if (!unsupported) unsupported = too_small(type_size * static_cast<size_t>(count));
    return run_or_delegate(
        module, comm, THEMIS_COLL_ALLREDUCE, "MPI_Allreduce", unsupported,
        [&](Context &ctx) { allreduce(ctx, sbuf, rbuf, count, dtype, op); },
        [&](mca_coll_themis_module_t *m) {
            return m->previous_allreduce(sbuf, rbuf, count, dtype, op, comm,
                                         m->previous_allreduce_module);
        });
}
