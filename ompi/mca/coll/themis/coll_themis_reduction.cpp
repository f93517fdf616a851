// coll_themis_reduction.cpp: one-vector reductions prepared for the engine
// (coll_themis_reduction.h).
#include "coll_themis_reduction.h"

#include <memory>
#include <stdexcept>

#include "coll_themis_op.h"

namespace themis {

namespace {

// The request: one block of `count` elements.
void plan_vector(Context &ctx, Collective coll, Call &call, size_t extent, int count) {
    ctx.plan_request(call.request, coll, extent);
    call.request.block_counts.assign(1, static_cast<uint64_t>(count));
}

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

#if THEMIS_HAVE_CUDA
void prepare_vector_reduction_device(Context &ctx, Collective coll, const void *sbuf, void *rbuf,
                                     int count, ompi_datatype_t *dtype, ompi_op_t *op, Call &call) {
    size_t type_size = 0;
    ompi_datatype_type_size(dtype, &type_size);
    const size_t extent = element_extent(dtype);
    const size_t n = static_cast<size_t>(count);
    if (rbuf == nullptr || !cuda::on_device(rbuf) || type_size < extent) {
        // No result here, only the input on the device, or a pair type with gaps (reduced
        // on the host anyway, and rbuf's gaps must stay as they are): the host path on host
        // copies.
        auto s = std::make_shared<cuda::HostView>(sbuf, dtype, n, true);
        auto r = rbuf ? std::make_shared<cuda::HostView>(rbuf, dtype, n, true) : nullptr;
        prepare_vector_reduction(ctx, coll, s->get(), r ? r->get() : nullptr, count, dtype, op,
                                 call);
        call.then([s, r, n] {
            if (r) r->copy_back(n);
        });
        return;
    }
    const void *input = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    ptrdiff_t lo = 0, span = 0;
    cuda::span_of(dtype, n, lo, span);
    const size_t bytes = extent * n;
    if (static_cast<size_t>(span) != bytes)
        throw std::logic_error("datatype with gaps on the device path");
    plan_vector(ctx, coll, call, extent, count);
    if (cuda::direct(ctx)) { // the transport moves device memory: run on it
        cuda::copy(rbuf, input, bytes);
        call.work = static_cast<char *>(rbuf);
        call.reduce_with(std::make_unique<cuda::DeviceReducer>(op, dtype, extent));
        call.options.memory = &cuda::device_memory();
        return;
    }
    // Staged: chunks come in from the input, results go out to rbuf, which also holds
    // chunks evicted meanwhile.
    const StagingRegion source{static_cast<char *>(const_cast<void *>(input)), 0, bytes};
    const StagingRegion home{static_cast<char *>(rbuf), 0, bytes};
    auto staged = std::make_shared<cuda::StagedRun>(source, home, home);
    call.reduce_with(op, dtype, extent);
    call.options = staged->options();
    call.then([staged] { staged->finish(); });
}

cuda::HostCopies vector_reduction_copies(const void *sbuf, void *rbuf, int count,
                                         ompi_datatype_t *dtype) {
    const size_t n = static_cast<size_t>(count);
    return cuda::HostCopies{std::make_unique<cuda::HostView>(sbuf, dtype, n, true),
                            std::make_unique<cuda::HostView>(rbuf, dtype, n, sbuf == MPI_IN_PLACE),
                            n};
}
#endif

} // namespace themis
