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

// A call's receive counts, one per communicator rank: the user's array, borrowed while the
// entry point runs (a blocking call copies nothing), or all equal
// (MPI_Reduce_scatter_block). A copy owns its counts: a held call, a nonblocking one or a
// persistent request may outlive the user's array.
class Counts {
  public:
    static Counts of(const int *counts, int n) { return Counts(counts, 0, n); }
    static Counts all(int count, int n) { return Counts(nullptr, count, n); }
    Counts(const Counts &other)
        : user_(nullptr), same_(other.same_), n_(other.n_), own_(other.list()) {}
    Counts &operator=(const Counts &) = delete;

    int operator[](int rank) const {
        return user_ ? user_[rank] : own_.empty() ? same_ : own_[rank];
    }
    int size() const { return n_; }
    // The counts as an array (not of MPI_Reduce_scatter_block's, which has none).
    const int *data() const { return user_ ? user_ : own_.data(); }
    size_t total() const {
        size_t sum = 0;
        for (int r = 0; r < n_; ++r) sum += static_cast<size_t>((*this)[r]);
        return sum;
    }

  private:
    Counts(const int *user, int same, int n) : user_(user), same_(same), n_(n) {}
    std::vector<int> list() const { return user_ ? std::vector<int>(user_, user_ + n_) : own_; }

    const int *user_;
    int same_;
    int n_;
    std::vector<int> own_;
};

// The request (sizes in topology position order) and, in call.scratch, where each block
// starts in communicator rank order (elements; n + 1 of them, the last the total).
void plan_reduce_scatter(Context &ctx, const Counts &rcounts, size_t extent, Call &call) {
    const RankLayout &layout = ctx.layout();
    const int n = rcounts.size();
    std::vector<uint64_t> &displ = call.scratch;
    displ.assign(size_t(n) + 1, 0);
    for (int r = 0; r < n; ++r) displ[r + 1] = displ[r] + static_cast<uint64_t>(rcounts[r]);
    PlanRequest &req = call.request;
    ctx.plan_request(req, Collective::ReduceScatter, extent);
    req.block_counts.resize(size_t(n));
    req.block_displs.resize(size_t(n));
    for (int p = 0; p < n; ++p) {
        req.block_counts[p] = static_cast<uint64_t>(rcounts[layout.rank_at[p]]);
        req.block_displs[p] = displ[layout.rank_at[p]];
    }
}

void prepare_reduce_scatter(Context &ctx, const void *sbuf, void *rbuf, const Counts &rcounts,
                            ompi_datatype_t *dtype, ompi_op_t *op, Call &call) {
    const int n = rcounts.size();
    const size_t extent = element_extent(dtype);
    plan_reduce_scatter(ctx, rcounts, extent, call);
    const std::vector<uint64_t> &displ = call.scratch;
    const size_t bytes = displ[n] * extent;
    HostMemory &memory = ctx.memory();
    call.temp = {&memory, static_cast<char *>(memory.acquire(bytes)), bytes};
    call.work = call.temp.buf;
    const void *input = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    ompi_datatype_copy_content_same_ddt(dtype, displ[n], call.work, input);
    call.reduce_with(op, dtype, extent);
    const int me = ctx.layout().rank_at[ctx.position()];
    call.copy_out = {dtype, static_cast<size_t>(rcounts[me]), rbuf, call.work + displ[me] * extent};
}

#if THEMIS_HAVE_CUDA
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

#endif

// MPI_Reduce_scatter's row of the collectives' table (coll_themis_entry.h); a copy of the
// arguments owns its counts (Counts).
struct ReduceScatter {
    struct Args {
        const void *sbuf;
        void *rbuf;
        Counts counts;
        ompi_datatype_t *dtype;
        ompi_op_t *op;
    };
    static constexpr int slot = THEMIS_COLL_REDUCE_SCATTER;
    static const char *unsupported(const Args &a, ompi_communicator_t *) {
        return reduction_unsupported(a.dtype, a.op);
    }
    static size_t bytes(const Args &a, ompi_communicator_t *) {
        return type_bytes(a.dtype, a.counts.total());
    }
    static void prepare(Context &ctx, const Args &a, Call &call) {
        prepare_reduce_scatter(ctx, a.sbuf, a.rbuf, a.counts, a.dtype, a.op, call);
    }
#if THEMIS_HAVE_CUDA
    static void prepare_device(Context &ctx, const Args &a, Call &call) {
        prepare_reduce_scatter_device(ctx, a.sbuf, a.rbuf, a.counts, a.dtype, a.op, call);
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

THEMIS_ENTRY_POINTS(reduce_scatter, ReduceScatter,
                    (ReduceScatter::Args{sbuf, rbuf, Counts::of(rcounts, ompi_comm_size(comm)),
                                         dtype, op}))
THEMIS_ENTRY_POINTS(reduce_scatter_block, ReduceScatterBlock,
                    (ReduceScatter::Args{sbuf, rbuf, Counts::all(rcount, ompi_comm_size(comm)),
                                         dtype, op}))
