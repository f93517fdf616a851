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

void reduce_scatter(Context &ctx, const void *sbuf, void *rbuf, const std::vector<int> &rcounts,
                    ompi_datatype_t *dtype, ompi_op_t *op) {
    const RankLayout &layout = ctx.layout();
    const int n = static_cast<int>(rcounts.size());
    std::vector<uint64_t> displ(n + 1, 0); // in communicator rank order
    for (int r = 0; r < n; ++r) displ[r + 1] = displ[r] + static_cast<uint64_t>(rcounts[r]);
    std::vector<uint64_t> counts(n), displs(n); // in topology position order
    for (int p = 0; p < n; ++p) {
        counts[p] = static_cast<uint64_t>(rcounts[layout.rank_at[p]]);
        displs[p] = displ[layout.rank_at[p]];
    }

    const size_t extent = element_extent(dtype);
    const size_t bytes = displ[n] * extent;
    char *work = static_cast<char *>(ctx.memory().acquire(bytes));
    const void *input = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    ompi_datatype_copy_content_same_ddt(dtype, displ[n], work, input);
    PlanRequest req = ctx.request(Collective::ReduceScatter, extent, counts);
    req.block_displs = displs;
    OpReducer reducer(op, dtype, extent);
    ctx.run(req, work, reducer);
    const int me = layout.rank_at[ctx.position()];
    ompi_datatype_copy_content_same_ddt(dtype, rcounts[me], rbuf, work + displ[me] * extent);
    ctx.memory().release(work, bytes);
}

const char *unsupported_for(ompi_datatype_t *dtype, ompi_op_t *op, size_t elements) {
    size_t type_size = 0;
    ompi_datatype_type_size(dtype, &type_size);
    const char *why = reduction_unsupported(dtype, op);
    return why ? why : too_small(type_size * elements);
}

} // namespace

extern "C" int mca_coll_themis_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                              struct ompi_datatype_t *dtype,
                                              struct ompi_op_t *op,
                                              struct ompi_communicator_t *comm,
                                              mca_coll_base_module_t *module) {
    const std::vector<int> counts(rcounts, rcounts + ompi_comm_size(comm));
    const size_t total = std::accumulate(counts.begin(), counts.end(), size_t(0));
    return run_or_delegate(
        module, comm, THEMIS_COLL_REDUCE_SCATTER, "MPI_Reduce_scatter",
        unsupported_for(dtype, op, total),
        [&](Context &ctx) { reduce_scatter(ctx, sbuf, rbuf, counts, dtype, op); },
        [&](mca_coll_themis_module_t *m) {
            return m->previous_reduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm,
                                              m->previous_reduce_scatter_module);
        });
}

extern "C" int mca_coll_themis_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                                    struct ompi_datatype_t *dtype,
                                                    struct ompi_op_t *op,
                                                    struct ompi_communicator_t *comm,
                                                    mca_coll_base_module_t *module) {
    const std::vector<int> counts(ompi_comm_size(comm), rcount);
    return run_or_delegate(
        module, comm, THEMIS_COLL_REDUCE_SCATTER_BLOCK, "MPI_Reduce_scatter_block",
        unsupported_for(dtype, op, counts.size() * static_cast<size_t>(rcount)),
        [&](Context &ctx) { reduce_scatter(ctx, sbuf, rbuf, counts, dtype, op); },
        [&](mca_coll_themis_module_t *m) {
            return m->previous_reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm,
                                                    m->previous_reduce_scatter_block_module);
        });
}
