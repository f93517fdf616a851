// coll_themis_allgather.cpp: MPI_Allgather.
//
// Runs in place in rbuf, moving bytes: the receive datatype must be contiguous for
// the whole buffer (anything else goes to the previous module). This rank's
// contribution is first placed in its block, converted from the send datatype.
#include "coll_themis_allgather.h"

#include <vector>

#include "coll_themis_entry.h"
#include "coll_themis_op.h"
#include "cuda/collectives.h"

namespace themis {

void prepare_allgather(Context &ctx, const void *sbuf, int scount, ompi_datatype_t *sdtype,
                       void *rbuf, int rcount, ompi_datatype_t *rdtype, Call &call) {
    const RankLayout &layout = ctx.layout();
    const int n = static_cast<int>(layout.rank_at.size());
    const uint64_t block = element_extent(rdtype) * static_cast<uint64_t>(rcount);
    const int me = layout.rank_at[ctx.position()];
    char *mine = static_cast<char *>(rbuf) + me * block;
    if (sbuf != MPI_IN_PLACE) {
        int rc = ompi_datatype_sndrcv(sbuf, scount, sdtype, mine, rcount, rdtype);
        if (rc != OMPI_SUCCESS) throw std::runtime_error("copying the send buffer failed");
    }
    PlanRequest &req = call.request;
    ctx.plan_request(req, Collective::AllGather, 1);
    req.block_counts.assign(size_t(n), block);
    req.block_displs.resize(size_t(n));
    for (int p = 0; p < n; ++p)
        req.block_displs[p] = static_cast<uint64_t>(layout.rank_at[p]) * block;
    call.work = static_cast<char *>(rbuf);
    call.reduce_nothing();
}

} // namespace themis

using namespace themis;

namespace {

const char *unsupported_layout(ompi_datatype_t *rdtype, size_t elements) {
    ptrdiff_t lb = 0, extent = 0;
    ompi_datatype_get_extent(rdtype, &lb, &extent);
    if (lb != 0 || !ompi_datatype_is_contiguous_memory_layout(rdtype, elements))
        return "receive datatype not contiguous";
    return nullptr;
}

// The elements of an allgather's whole result.
size_t allgather_elements(int rcount, ompi_communicator_t *comm) {
    return static_cast<size_t>(rcount) * ompi_comm_size(comm);
}

// MPI_Allgather's row of the collectives' table (coll_themis_entry.h).
struct Allgather {
    using Args = AllgatherArgs;
    static constexpr int slot = THEMIS_COLL_ALLGATHER;
    static const char *unsupported(const Args &a, ompi_communicator_t *comm) {
        return unsupported_layout(a.rdtype, allgather_elements(a.rcount, comm));
    }
    static size_t bytes(const Args &a, ompi_communicator_t *comm) {
        return type_bytes(a.rdtype, allgather_elements(a.rcount, comm));
    }
    static void prepare(Context &ctx, const Args &a, Call &call) {
        prepare_allgather(ctx, a.sbuf, a.scount, a.sdtype, a.rbuf, a.rcount, a.rdtype, call);
    }
    static int below(mca_coll_themis_module_t *b, const Args &a, const void *s, void *r,
                     ompi_request_t **request) {
        return request ? b->previous_iallgather(s, a.scount, a.sdtype, r, a.rcount, a.rdtype,
                                                b->comm, request, b->previous_iallgather_module)
                       : b->previous_allgather(s, a.scount, a.sdtype, r, a.rcount, a.rdtype,
                                               b->comm, b->previous_allgather_module);
    }
    static int below_init(mca_coll_themis_module_t *b, const Args &a, const void *s, void *r,
                          ompi_info_t *info, ompi_request_t **request) {
        return b->previous_allgather_init(s, a.scount, a.sdtype, r, a.rcount, a.rdtype, b->comm,
                                          info, request, b->previous_allgather_init_module);
    }
    static std::vector<opal_object_t *> objects(const Args &a, ompi_communicator_t *comm) {
        return themis::objects(comm, a.sdtype, a.rdtype);
    }
};

} // namespace

THEMIS_ENTRY_POINTS(allgather, Allgather,
                    (Allgather::Args{sbuf, scount, sdtype, rbuf, rcount, rdtype}))
