// coll_themis_reduce_scatter.cpp: MPI_Reduce_scatter and MPI_Reduce_scatter_block.
//
// The input is copied into a temporary work buffer (the reductions happen there, and
// MPI forbids touching sbuf); rank r's block of the result lies where MPI puts it,
// at the sum of the counts of the ranks before r, whatever order each chunk visits
// the dimensions in. At the end the rank's own block is copied to rbuf.
#include "coll_themis_entry.h"
#include "coll_themis_op.h"

#include <numeric>
#include <vector>

#include "opal/util/output.h"

using namespace themis;

namespace {

// The request, with `displ` (communicator rank order, elements) where each block starts.
PlanRequest request_for(Context &ctx, const std::vector<int> &rcounts, size_t extent,
                        std::vector<uint64_t> &displ) {
    const RankLayout &layout = ctx.layout();
    const int n = static_cast<int>(rcounts.size());
    displ.assign(n + 1, 0); // in communicator rank order
    for (int r = 0; r < n; ++r) displ[r + 1] = displ[r] + static_cast<uint64_t>(rcounts[r]);
    std::vector<uint64_t> counts(n), displs(n); // in topology position order
    for (int p = 0; p < n; ++p) {
        counts[p] = static_cast<uint64_t>(rcounts[layout.rank_at[p]]);
        displs[p] = displ[layout.rank_at[p]];
    }
    PlanRequest req = ctx.request(Collective::ReduceScatter, extent, counts);
    req.block_displs = displs;
    return req;
}

Prepared prepare_reduce_scatter(Context &ctx, const void *sbuf, void *rbuf,
                                const std::vector<int> &rcounts, ompi_datatype_t *dtype,
                                ompi_op_t *op) {
    const int n = static_cast<int>(rcounts.size());
    std::vector<uint64_t> displ;
    const size_t extent = element_extent(dtype);
    Prepared p;
    p.request = request_for(ctx, rcounts, extent, displ);
    const size_t bytes = displ[n] * extent;
    HostMemory *memory = &ctx.memory();
    char *work = p.work = static_cast<char *>(memory->acquire(bytes));
    const void *input = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    ompi_datatype_copy_content_same_ddt(dtype, displ[n], work, input);
    p.reducer = std::make_unique<OpReducer>(op, dtype, extent);
    const int me = ctx.layout().rank_at[ctx.position()];
    const int own = rcounts[me];
    char *result = work + displ[me] * extent;
    p.finish = [=] {
        ompi_datatype_copy_content_same_ddt(dtype, own, static_cast<char *>(rbuf), result);
        memory->release(work, bytes);
    };
    return p;
}

#if THEMIS_HAVE_CUDA
// With device buffers (coll_themis_cuda.h): the work buffer is a device temporary that
// the plan runs on (direct), or that holds evicted chunks while the input is staged.
Prepared prepare_reduce_scatter_device(Context &ctx, const void *sbuf, void *rbuf,
                                       const std::vector<int> &rcounts, ompi_datatype_t *dtype,
                                       ompi_op_t *op) {
    const void *input = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    size_t type_size = 0;
    ompi_datatype_type_size(dtype, &type_size);
    const size_t extent = element_extent(dtype);
    const int me = ctx.layout().rank_at[ctx.position()];
    if (!cuda::on_device(input) || type_size < extent) {
        // Only the result is on the device, or a pair type with gaps (reduced on the host
        // anyway, and rbuf's gaps must stay as they are): the path above on host copies.
        const size_t total = std::accumulate(rcounts.begin(), rcounts.end(), size_t(0));
        const size_t own = static_cast<size_t>(rcounts[me]);
        auto s = std::make_shared<cuda::HostView>(sbuf, dtype, total, true);
        auto r =
            std::make_shared<cuda::HostView>(rbuf, dtype, sbuf == MPI_IN_PLACE ? total : own, true);
        Prepared p = prepare_reduce_scatter(ctx, s->get(), r->get(), rcounts, dtype, op);
        p.then([s, r, own] { r->copy_back(own); });
        return p;
    }
    const int n = static_cast<int>(rcounts.size());
    std::vector<uint64_t> displ;
    Prepared p;
    p.request = request_for(ctx, rcounts, extent, displ);
    ptrdiff_t lo = 0, in_span = 0, out_span = 0;
    cuda::span_of(dtype, displ[n], lo, in_span);
    cuda::span_of(dtype, static_cast<size_t>(rcounts[me]), lo, out_span);
    const uint64_t mine = displ[me] * extent;
    auto work = std::make_shared<cuda::DeviceBuffer>(displ[n] * extent);
    if (cuda::direct(ctx)) {
        cuda::copy(work->get(), input, static_cast<size_t>(in_span));
        p.work = work->get();
        p.reducer = std::make_unique<cuda::DeviceReducer>(op, dtype, extent);
        p.options.memory = &cuda::device_memory();
        p.then([work, rbuf, mine, out_span] {
            cuda::copy(rbuf, work->get() + mine, static_cast<size_t>(out_span));
        });
        return p;
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
    p.reducer = std::make_unique<OpReducer>(op, dtype, extent);
    p.options = staged->options();
    p.then([work, staged] { staged->finish(); });
    return p;
}

// Host copies of the buffers for the module below.
cuda::HostCopies reduce_scatter_copies(const void *sbuf, void *rbuf, const std::vector<int> &counts,
                                       ompi_datatype_t *dtype, ompi_communicator_t *comm) {
    const size_t total = std::accumulate(counts.begin(), counts.end(), size_t(0));
    const size_t own = static_cast<size_t>(counts[ompi_comm_rank(comm)]);
    const bool in_place = sbuf == MPI_IN_PLACE;
    return cuda::HostCopies{
        std::make_unique<cuda::HostView>(sbuf, dtype, total, true),
        std::make_unique<cuda::HostView>(rbuf, dtype, in_place ? total : own, in_place), own};
}

#endif

size_t total_of(const std::vector<int> &counts) {
    return std::accumulate(counts.begin(), counts.end(), size_t(0));
}

const char *unsupported_for(ompi_datatype_t *dtype, ompi_op_t *op, size_t elements) {
    size_t type_size = 0;
    ompi_datatype_type_size(dtype, &type_size);
    const char *why = reduction_unsupported(dtype, op);
    return why ? why : too_small(type_size * elements);
}

// MPI_Reduce_scatter's row of the collectives' table (coll_themis_entry.h); the counts are
// the call's own copy (a held call may outlive the user's array).
struct ReduceScatter {
    struct Args {
        const void *sbuf;
        void *rbuf;
        std::vector<int> counts;
        ompi_datatype_t *dtype;
        ompi_op_t *op;
    };
    static constexpr int slot = THEMIS_COLL_REDUCE_SCATTER;
    static const char *unsupported(const Args &a, ompi_communicator_t *) {
        return unsupported_for(a.dtype, a.op, total_of(a.counts));
    }
    static Prepared prepare(Context &ctx, const Args &a) {
        return prepare_reduce_scatter(ctx, a.sbuf, a.rbuf, a.counts, a.dtype, a.op);
    }
#if THEMIS_HAVE_CUDA
    static Prepared prepare_device(Context &ctx, const Args &a) {
        return prepare_reduce_scatter_device(ctx, a.sbuf, a.rbuf, a.counts, a.dtype, a.op);
    }
    static cuda::HostCopies host_copies(const Args &a, ompi_communicator_t *comm) {
        return reduce_scatter_copies(a.sbuf, a.rbuf, a.counts, a.dtype, comm);
    }
#endif
    static int below(mca_coll_themis_module_t *b, const Args &a, const void *s, void *r,
                     ompi_request_t **request) {
        return request ? b->previous_ireduce_scatter(s, r, a.counts.data(), a.dtype, a.op, b->comm,
                                                     request, b->previous_ireduce_scatter_module)
                       : b->previous_reduce_scatter(s, r, a.counts.data(), a.dtype, a.op, b->comm,
                                                    b->previous_reduce_scatter_module);
    }
    static int below_init(mca_coll_themis_module_t *b, const Args &a, const void *s, void *r,
                          ompi_info_t *info, ompi_request_t **request) {
        return b->previous_reduce_scatter_init(s, r, a.counts.data(), a.dtype, a.op, b->comm, info,
                                               request, b->previous_reduce_scatter_init_module);
    }
    static std::vector<opal_object_t *> objects(const Args &a, ompi_communicator_t *comm) {
        return themis::objects(comm, a.dtype, a.op);
    }
};

// MPI_Reduce_scatter_block: MPI_Reduce_scatter with equal counts, handed down as itself.
struct ReduceScatterBlock : ReduceScatter {
    static constexpr int slot = THEMIS_COLL_REDUCE_SCATTER_BLOCK;
    static int below(mca_coll_themis_module_t *b, const Args &a, const void *s, void *r,
                     ompi_request_t **request) {
        const int rcount = a.counts[0];
        return request ? b->previous_ireduce_scatter_block(s, r, rcount, a.dtype, a.op, b->comm,
                                                           request,
                                                           b->previous_ireduce_scatter_block_module)
                       : b->previous_reduce_scatter_block(s, r, rcount, a.dtype, a.op, b->comm,
                                                          b->previous_reduce_scatter_block_module);
    }
    static int below_init(mca_coll_themis_module_t *b, const Args &a, const void *s, void *r,
                          ompi_info_t *info, ompi_request_t **request) {
        return b->previous_reduce_scatter_block_init(s, r, a.counts[0], a.dtype, a.op, b->comm,
                                                     info, request,
                                                     b->previous_reduce_scatter_block_init_module);
    }
};

} // namespace

THEMIS_ENTRY_POINTS(
    reduce_scatter, ReduceScatter,
    (const void *sbuf, void *rbuf, const int *rcounts, ompi_datatype_t *dtype, ompi_op_t *op),
    (ReduceScatter::Args{sbuf, rbuf, std::vector<int>(rcounts, rcounts + ompi_comm_size(comm)),
                         dtype, op}))
THEMIS_ENTRY_POINTS(
    reduce_scatter_block, ReduceScatterBlock,
    (const void *sbuf, void *rbuf, int rcount, ompi_datatype_t *dtype, ompi_op_t *op),
    (ReduceScatter::Args{sbuf, rbuf, std::vector<int>(ompi_comm_size(comm), rcount), dtype, op}))
