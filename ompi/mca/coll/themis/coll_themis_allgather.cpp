// coll_themis_allgather.cpp: MPI_Allgather.
//
// Runs in place in rbuf, moving bytes: the receive datatype must be contiguous for
// the whole buffer (anything else goes to the previous module). This rank's
// contribution is first placed in its block, converted from the send datatype.
#include "coll_themis_entry.h"
#include "coll_themis_op.h"

#include <vector>

#include "opal/util/output.h"

using namespace themis;

namespace {

const char *unsupported_layout(ompi_datatype_t *rdtype, size_t elements) {
    ptrdiff_t lb = 0, extent = 0;
    ompi_datatype_get_extent(rdtype, &lb, &extent);
    if (lb != 0 || !ompi_datatype_is_contiguous_memory_layout(rdtype, elements))
        return "receive datatype not contiguous";
    return nullptr;
}

void allgather(Context &ctx, const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf,
               int rcount, ompi_datatype_t *rdtype) {
    const RankLayout &layout = ctx.layout();
    const int n = static_cast<int>(layout.rank_at.size());
    const uint64_t block = element_extent(rdtype) * static_cast<uint64_t>(rcount);
    const int me = layout.rank_at[ctx.position()];
    char *mine = static_cast<char *>(rbuf) + me * block;
    if (sbuf != MPI_IN_PLACE) {
        int rc = ompi_datatype_sndrcv(sbuf, scount, sdtype, mine, rcount, rdtype);
        if (rc != OMPI_SUCCESS) throw std::runtime_error("copying the send buffer failed");
    }
    std::vector<uint64_t> displs(n);
    for (int p = 0; p < n; ++p) displs[p] = static_cast<uint64_t>(layout.rank_at[p]) * block;
    PlanRequest req = ctx.request(Collective::AllGather, 1, std::vector<uint64_t>(n, block));
    req.block_displs = displs;
    NoReducer none;
    ctx.run(req, static_cast<char *>(rbuf), none);
}

} // namespace

extern "C" int mca_coll_themis_allgather(const void *sbuf, int scount,
                                         struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                         struct ompi_datatype_t *rdtype,
                                         struct ompi_communicator_t *comm,
                                         mca_coll_base_module_t *module) {
    size_t type_size = 0;
    ompi_datatype_type_size(rdtype, &type_size);
    const size_t elements = static_cast<size_t>(rcount) * ompi_comm_size(comm);
    const char *unsupported = unsupported_layout(rdtype, elements);
    if (!unsupported) unsupported = too_small(type_size * elements);
    return run_or_delegate(
        module, comm, THEMIS_COLL_ALLGATHER, "MPI_Allgather", unsupported,
        [&](Context &ctx) { allgather(ctx, sbuf, scount, sdtype, rbuf, rcount, rdtype); },
        [&](mca_coll_themis_module_t *m) {
            return m->previous_allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                                         m->previous_allgather_module);
        });
}
