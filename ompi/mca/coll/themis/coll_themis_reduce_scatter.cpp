// coll_themis_reduce_scatter.cpp: MPI_Reduce_scatter and MPI_Reduce_scatter_block.
//
// The input is copied into a temporary work buffer (the reductions happen there, and
// MPI forbids touching sbuf); rank r's block of the result lies where MPI puts it,
// at the sum of the counts of the ranks before r, whatever order each chunk visits
// the dimensions in. At the end the rank's own block is copied to rbuf.
#include "coll_themis_reduce_scatter.h"

#include <vector>

#include "coll_themis_entry.h"
#include "coll_themis_op.h"
#include "cuda/collectives.h"

namespace themis {

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

} // namespace themis

using namespace themis;

namespace {

// MPI_Reduce_scatter's row of the collectives' table (coll_themis_entry.h); a copy of the
// arguments owns its counts (Counts).
struct ReduceScatter {
    using Args = ReduceScatterArgs;
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
