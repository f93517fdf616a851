// coll_themis_reduction.cpp: one-vector reductions prepared for the engine
// (coll_themis_reduction.h).
#include "coll_themis_reduction.h"

#include <stdexcept>

#include "coll_themis_op.h"

namespace themis {

void plan_vector(Context &ctx, Collective coll, Call &call, size_t extent, int count) {
    ctx.plan_request(call.request, coll, extent);
    call.request.block_counts.assign(1, static_cast<uint64_t>(count));
}

namespace {

// A temporary work buffer of `bytes` for the call, given back when it ends.
char *temporary_work(Context &ctx, Call &call, size_t bytes) {
    HostMemory &memory = ctx.memory();
    call.temp = {&memory, static_cast<char *>(memory.acquire(bytes)), bytes};
    call.work = call.temp.buf;
    return call.work;
}

} // namespace

void prepare_vector_reduction(Context &ctx, Collective coll, const void *sbuf, void *rbuf,
                              int count, ompi_datatype_t *dtype, ompi_op_t *op, Call &call) {
    const size_t extent = element_extent(dtype);
    const size_t bytes = extent * static_cast<size_t>(count);
    size_t type_size = 0;
    ompi_datatype_type_size(dtype, &type_size);
    plan_vector(ctx, coll, call, extent, count);
    call.reduce_with(op, dtype, extent);
    if (rbuf == nullptr) { // no result here: reduce a copy of the input
        ompi_datatype_copy_content_same_ddt(dtype, count, temporary_work(ctx, call, bytes),
                                            const_cast<void *>(sbuf));
        return;
    }
    if (sbuf != MPI_IN_PLACE)
        ompi_datatype_copy_content_same_ddt(dtype, count, rbuf, const_cast<void *>(sbuf));
    call.work = static_cast<char *>(rbuf);
    // Gaps between the fields (MPI_SHORT_INT) or after them (MPI_DOUBLE_INT): work in a
    // temporary buffer, so rbuf's gaps are never written, nor the bytes past its end.
    if (type_size < extent) {
        ompi_datatype_copy_content_same_ddt(dtype, count, temporary_work(ctx, call, bytes), rbuf);
        call.copy_out = {dtype, static_cast<size_t>(count), rbuf, call.work};
    }
}

} // namespace themis
