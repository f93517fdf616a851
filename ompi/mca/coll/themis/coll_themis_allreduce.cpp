// coll_themis_allreduce.cpp: MPI_Allreduce.
//
// The result is built in place in rbuf (after copying sbuf there): every chunk is
// reduce-scattered and all-gathered over the dimensions in its own order. A datatype
// with gaps (e.g. MPI_SHORT_INT, MPI_DOUBLE_INT) runs in a temporary buffer, so themis
// never writes into rbuf's gaps or past the end of the user's buffer.
#include "coll_themis_entry.h"
#include "coll_themis_op.h"

#include <memory>

#include "opal/util/output.h"

using namespace themis;

namespace {

// The request: one block of `count` elements.
void plan_allreduce(Context &ctx, Call &call, size_t extent, int count) {
    ctx.plan_request(call.request, Collective::AllReduce, extent);
    call.request.block_counts.assign(1, static_cast<uint64_t>(count));
}

void prepare_allreduce(Context &ctx, const void *sbuf, void *rbuf, int count,
                       ompi_datatype_t *dtype, ompi_op_t *op, Call &call) {
    const size_t extent = element_extent(dtype);
    size_t type_size = 0;
    ompi_datatype_type_size(dtype, &type_size);
    if (sbuf != MPI_IN_PLACE) ompi_datatype_copy_content_same_ddt(dtype, count, rbuf, sbuf);

    plan_allreduce(ctx, call, extent, count);
    call.reduce_with(op, dtype, extent);
    call.work = static_cast<char *>(rbuf);
    // Gaps between the fields (MPI_SHORT_INT) or after them (MPI_DOUBLE_INT): work in a
    // temporary buffer, so rbuf's gaps are never written, nor the bytes past its end.
    if (type_size < extent) {
        const size_t bytes = extent * static_cast<size_t>(count);
        HostMemory &memory = ctx.memory();
        call.temp = {&memory, static_cast<char *>(memory.acquire(bytes)), bytes};
        call.work = call.temp.buf;
        ompi_datatype_copy_content_same_ddt(dtype, count, call.work, rbuf);
        call.copy_out = {dtype, static_cast<size_t>(count), rbuf, call.work};
    }
}

#if THEMIS_HAVE_CUDA
// MPI_Allreduce with a device buffer (coll_themis_cuda.h). Predefined datatypes only (the
// eligibility above); past the first test, without gaps: count x extent bytes of data.
void prepare_allreduce_device(Context &ctx, const void *sbuf, void *rbuf, int count,
                              ompi_datatype_t *dtype, ompi_op_t *op, Call &call) {
    size_t type_size = 0;
    ompi_datatype_type_size(dtype, &type_size);
    const size_t extent = element_extent(dtype);
    if (!cuda::on_device(rbuf) || type_size < extent) {
        // Only the input is on the device, or a pair type with gaps (reduced on the host
        // anyway, and rbuf's gaps must stay as they are): the path above on host copies.
        auto s = std::make_shared<cuda::HostView>(sbuf, dtype, static_cast<size_t>(count), true);
        auto r = std::make_shared<cuda::HostView>(rbuf, dtype, static_cast<size_t>(count), true);
        prepare_allreduce(ctx, s->get(), r->get(), count, dtype, op, call);
        call.then([s, r, count] { r->copy_back(static_cast<size_t>(count)); });
        return;
    }
    const void *input = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    ptrdiff_t lo = 0, span = 0;
    cuda::span_of(dtype, static_cast<size_t>(count), lo, span);
    const size_t bytes = extent * static_cast<size_t>(count);
    if (static_cast<size_t>(span) != bytes)
        throw std::logic_error("datatype with gaps on the device path");
    plan_allreduce(ctx, call, extent, count);
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

// Host copies of the buffers for the module below.
cuda::HostCopies allreduce_copies(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype) {
    const size_t n = static_cast<size_t>(count);
    return cuda::HostCopies{std::make_unique<cuda::HostView>(sbuf, dtype, n, true),
                            std::make_unique<cuda::HostView>(rbuf, dtype, n, sbuf == MPI_IN_PLACE),
                            n};
}
#endif

// MPI_Allreduce's row of the collectives' table (coll_themis_entry.h).
struct Allreduce {
    struct Args {
        const void *sbuf;
        void *rbuf;
        int count;
        ompi_datatype_t *dtype;
        ompi_op_t *op;
    };
    static constexpr int slot = THEMIS_COLL_ALLREDUCE;
    static const char *unsupported(const Args &a, ompi_communicator_t *) {
        return reduction_unsupported(a.dtype, a.op);
    }
    static size_t bytes(const Args &a, ompi_communicator_t *) {
        return type_bytes(a.dtype, static_cast<size_t>(a.count));
    }
    static void prepare(Context &ctx, const Args &a, Call &call) {
        prepare_allreduce(ctx, a.sbuf, a.rbuf, a.count, a.dtype, a.op, call);
    }
#if THEMIS_HAVE_CUDA
    static void prepare_device(Context &ctx, const Args &a, Call &call) {
        prepare_allreduce_device(ctx, a.sbuf, a.rbuf, a.count, a.dtype, a.op, call);
    }
    static cuda::HostCopies host_copies(const Args &a, ompi_communicator_t *) {
        return allreduce_copies(a.sbuf, a.rbuf, a.count, a.dtype);
    }
#endif
    static int below(mca_coll_themis_module_t *b, const Args &a, const void *s, void *r,
                     ompi_request_t **request) {
        return request ? b->previous_iallreduce(s, r, a.count, a.dtype, a.op, b->comm, request,
                                                b->previous_iallreduce_module)
                       : b->previous_allreduce(s, r, a.count, a.dtype, a.op, b->comm,
                                               b->previous_allreduce_module);
    }
    static int below_init(mca_coll_themis_module_t *b, const Args &a, const void *s, void *r,
                          ompi_info_t *info, ompi_request_t **request) {
        return b->previous_allreduce_init(s, r, a.count, a.dtype, a.op, b->comm, info, request,
                                          b->previous_allreduce_init_module);
    }
    static std::vector<opal_object_t *> objects(const Args &a, ompi_communicator_t *comm) {
        return themis::objects(comm, a.dtype, a.op);
    }
};

} // namespace

THEMIS_ENTRY_POINTS(allreduce, Allreduce,
                    (const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype,
                     ompi_op_t *op),
                    (Allreduce::Args{sbuf, rbuf, count, dtype, op}))
