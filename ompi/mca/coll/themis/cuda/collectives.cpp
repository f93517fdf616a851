// cuda/collectives.cpp: the collectives with device buffers (cuda/collectives.h).
#include "cuda/collectives.h"

#include <memory>
#include <stdexcept>
#include <vector>

#include "cuda/buffers.h"

namespace themis {

namespace {

// ---- One-vector reductions (MPI_Allreduce, MPI_Reduce).
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

// ---- MPI_Reduce_scatter (and _block).
// With device buffers (cuda/buffers.h): the work buffer is a device temporary that
// the plan runs on (direct), or that holds evicted chunks while the input is staged.
void prepare_reduce_scatter_device(Context &ctx, const void *sbuf, void *rbuf,
                                   const Counts &rcounts, ompi_datatype_t *dtype, ompi_op_t *op,
                                   Call &call) {
    const void *input = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    size_t type_size = 0;
    ompi_datatype_type_size(dtype, &type_size);
    const size_t extent = element_extent(dtype);
    const int me = ctx.layout().rank_at[ctx.position()];
    if (!cuda::on_device(input) || type_size < extent) {
        // Only the result is on the device, or a pair type with gaps (reduced on the host
        // anyway, and rbuf's gaps must stay as they are): the path above on host copies.
        const size_t total = rcounts.total();
        const size_t own = static_cast<size_t>(rcounts[me]);
        auto s = std::make_shared<cuda::HostView>(sbuf, dtype, total, true);
        auto r =
            std::make_shared<cuda::HostView>(rbuf, dtype, sbuf == MPI_IN_PLACE ? total : own, true);
        prepare_reduce_scatter(ctx, s->get(), r->get(), rcounts, dtype, op, call);
        call.then([s, r, own] { r->copy_back(own); });
        return;
    }
    const int n = rcounts.size();
    plan_reduce_scatter(ctx, rcounts, extent, call);
    const std::vector<uint64_t> &displ = call.scratch;
    ptrdiff_t lo = 0, in_span = 0, out_span = 0;
    cuda::span_of(dtype, displ[n], lo, in_span);
    cuda::span_of(dtype, static_cast<size_t>(rcounts[me]), lo, out_span);
    const uint64_t mine = displ[me] * extent;
    auto work = std::make_shared<cuda::DeviceBuffer>(displ[n] * extent);
    if (cuda::direct(ctx)) {
        cuda::copy(work->get(), input, static_cast<size_t>(in_span));
        call.work = work->get();
        call.reduce_with(std::make_unique<cuda::DeviceReducer>(op, dtype, extent));
        call.options.memory = &cuda::device_memory();
        call.then([work, rbuf, mine, out_span] {
            cuda::copy(rbuf, work->get() + mine, static_cast<size_t>(out_span));
        });
        return;
    }
    // In place, results written to rbuf would overwrite input not yet staged: stage from
    // a copy then.
    const char *source = static_cast<const char *>(input);
    if (sbuf == MPI_IN_PLACE) {
        cuda::copy(work->get(), input, static_cast<size_t>(in_span));
        source = work->get();
    }
    auto staged = std::make_shared<cuda::StagedRun>(
        StagingRegion{const_cast<char *>(source), 0, uint64_t(in_span)},
        StagingRegion{work->get(), 0, displ[n] * extent},
        StagingRegion{static_cast<char *>(rbuf), mine, mine + uint64_t(out_span)});
    call.reduce_with(op, dtype, extent);
    call.options = staged->options();
    call.then([work, staged] { staged->finish(); });
}

// Host copies of the buffers for the module below.
cuda::HostCopies reduce_scatter_copies(const void *sbuf, void *rbuf, const Counts &counts,
                                       ompi_datatype_t *dtype, ompi_communicator_t *comm) {
    const size_t total = counts.total();
    const size_t own = static_cast<size_t>(counts[ompi_comm_rank(comm)]);
    const bool in_place = sbuf == MPI_IN_PLACE;
    return cuda::HostCopies{
        std::make_unique<cuda::HostView>(sbuf, dtype, total, true),
        std::make_unique<cuda::HostView>(rbuf, dtype, in_place ? total : own, in_place), own};
}

// ---- MPI_Allgather.
// This rank's contribution, converted from the send datatype, into its block `mine` of
// rbuf, whatever memory either is in.
void place_contribution(const void *sbuf, int scount, ompi_datatype_t *sdtype, char *mine,
                        bool mine_on_device, int rcount, ompi_datatype_t *rdtype) {
    const size_t block = element_extent(rdtype) * static_cast<size_t>(rcount);
    size_t ssize = 0;
    ptrdiff_t true_lb = 0, true_extent = 0;
    ompi_datatype_type_size(sdtype, &ssize);
    ompi_datatype_get_true_extent(sdtype, &true_lb, &true_extent);
    if (mine_on_device && true_lb == 0 && ssize * static_cast<size_t>(scount) == block &&
        ompi_datatype_is_contiguous_memory_layout(sdtype, scount)) {
        cuda::copy(mine, sbuf, block); // the same bytes: no conversion
        return;
    }
    // Convert on the host.
    cuda::HostView s(sbuf, sdtype, static_cast<size_t>(scount), true);
    std::vector<char> host(mine_on_device ? block : 0);
    char *dst = mine_on_device ? host.data() : mine;
    if (ompi_datatype_sndrcv(s.get(), scount, sdtype, dst, rcount, rdtype) != OMPI_SUCCESS)
        throw std::runtime_error("copying the send buffer failed");
    if (mine_on_device) cuda::copy(mine, host.data(), block);
}

// MPI_Allgather with a device buffer (cuda/buffers.h).
void prepare_allgather_device(Context &ctx, const void *sbuf, int scount, ompi_datatype_t *sdtype,
                              void *rbuf, int rcount, ompi_datatype_t *rdtype, Call &call) {
    const int n = static_cast<int>(ctx.layout().rank_at.size());
    const uint64_t block = element_extent(rdtype) * static_cast<uint64_t>(rcount);
    const int me = ctx.layout().rank_at[ctx.position()];
    const bool on_device = cuda::on_device(rbuf);
    if (sbuf != MPI_IN_PLACE)
        place_contribution(sbuf, scount, sdtype, static_cast<char *>(rbuf) + me * block, on_device,
                           rcount, rdtype);
    // From here on the plan of the host path, in place; only where the bytes are differs.
    prepare_allgather(ctx, MPI_IN_PLACE, scount, sdtype, rbuf, rcount, rdtype, call);
    if (!on_device) return; // only the send buffer was on the device
    if (cuda::direct(ctx)) {
        call.options.memory = &cuda::device_memory();
        return;
    }
    const StagingRegion all{static_cast<char *>(rbuf), 0, block * n};
    auto staged = std::make_shared<cuda::StagedRun>(all, all, all);
    call.work = nullptr;
    call.options = staged->options();
    call.then([staged] { staged->finish(); });
}

// Host copies of the buffers for the module below.
cuda::HostCopies allgather_copies(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf,
                                  int rcount, ompi_datatype_t *rdtype, ompi_communicator_t *comm) {
    const size_t elements = static_cast<size_t>(rcount) * ompi_comm_size(comm);
    return cuda::HostCopies{
        std::make_unique<cuda::HostView>(sbuf, sdtype, static_cast<size_t>(scount), true),
        std::make_unique<cuda::HostView>(rbuf, rdtype, elements, sbuf == MPI_IN_PLACE), elements};
}

// ---- MPI_Bcast.
// MPI_Bcast with a device buffer (cuda/buffers.h): one contiguous run moves through the
// transport or is staged, like an All-Gather's buffer; any other datatype on a host copy.
void prepare_bcast_device(Context &ctx, void *buff, int count, ompi_datatype_t *dtype, int root,
                          Call &call) {
    char *run = contiguous_run(buff, count, dtype);
    if (run == nullptr || !cuda::on_device(buff)) {
        const bool is_root = ctx.layout().rank_at[ctx.position()] == root;
        auto view =
            std::make_shared<cuda::HostView>(buff, dtype, static_cast<size_t>(count), is_root);
        prepare_bcast(ctx, view->get(), count, dtype, root, call);
        call.then([view, count] { view->copy_back(static_cast<size_t>(count)); });
        return;
    }
    prepare_bcast(ctx, buff, count, dtype, root, call);
    if (cuda::direct(ctx)) {
        call.options.memory = &cuda::device_memory();
        return;
    }
    const StagingRegion all{run, 0, type_bytes(dtype, static_cast<size_t>(count))};
    auto staged = std::make_shared<cuda::StagedRun>(all, all, all);
    call.work = nullptr;
    call.options = staged->options();
    call.then([staged] { staged->finish(); });
}

} // namespace

void prepare_on_device(Context &ctx, const VectorReductionArgs &a, Call &call) {
    prepare_vector_reduction_device(ctx, Collective::AllReduce, a.sbuf, a.rbuf, a.count, a.dtype,
                                    a.op, call);
}

void prepare_on_device(Context &ctx, const ReduceArgs &a, Call &call) {
    prepare_vector_reduction_device(ctx, Collective::Reduce, a.sbuf, reduce_result(ctx, a), a.count,
                                    a.dtype, a.op, call);
    call.request.root = ctx.layout().position_of[a.root];
}

void prepare_on_device(Context &ctx, const ReduceScatterArgs &a, Call &call) {
    prepare_reduce_scatter_device(ctx, a.sbuf, a.rbuf, a.counts, a.dtype, a.op, call);
}

void prepare_on_device(Context &ctx, const AllgatherArgs &a, Call &call) {
    prepare_allgather_device(ctx, a.sbuf, a.scount, a.sdtype, a.rbuf, a.rcount, a.rdtype, call);
}

void prepare_on_device(Context &ctx, const BcastArgs &a, Call &call) {
    prepare_bcast_device(ctx, a.rbuf, a.count, a.dtype, a.root, call);
}

cuda::HostCopies host_copies(const VectorReductionArgs &a, ompi_communicator_t *) {
    return vector_reduction_copies(a.sbuf, a.rbuf, a.count, a.dtype);
}

cuda::HostCopies host_copies(const ReduceArgs &a, ompi_communicator_t *comm) {
    // Elsewhere than at the root rbuf is not significant (and may be anything).
    const bool root = ompi_comm_rank(comm) == a.root;
    return vector_reduction_copies(a.sbuf, root ? a.rbuf : nullptr, a.count, a.dtype);
}

cuda::HostCopies host_copies(const ReduceScatterArgs &a, ompi_communicator_t *comm) {
    return reduce_scatter_copies(a.sbuf, a.rbuf, a.counts, a.dtype, comm);
}

cuda::HostCopies host_copies(const AllgatherArgs &a, ompi_communicator_t *comm) {
    return allgather_copies(a.sbuf, a.scount, a.sdtype, a.rbuf, a.rcount, a.rdtype, comm);
}

cuda::HostCopies host_copies(const BcastArgs &a, ompi_communicator_t *comm) {
    const bool root = ompi_comm_rank(comm) == a.root;
    const size_t n = static_cast<size_t>(a.count);
    return cuda::HostCopies{std::make_unique<cuda::HostView>(nullptr, a.dtype, 0, false),
                            std::make_unique<cuda::HostView>(a.rbuf, a.dtype, n, root), n};
}

} // namespace themis
