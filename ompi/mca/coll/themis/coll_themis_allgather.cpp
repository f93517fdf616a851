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

#if THEMIS_HAVE_CUDA
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

#endif

// The elements of an allgather's whole result.
size_t allgather_elements(int rcount, ompi_communicator_t *comm) {
    return static_cast<size_t>(rcount) * ompi_comm_size(comm);
}

// MPI_Allgather's row of the collectives' table (coll_themis_entry.h).
struct Allgather {
    struct Args {
        const void *sbuf;
        int scount;
        ompi_datatype_t *sdtype;
        void *rbuf;
        int rcount;
        ompi_datatype_t *rdtype;
    };
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
#if THEMIS_HAVE_CUDA
    static void prepare_device(Context &ctx, const Args &a, Call &call) {
        prepare_allgather_device(ctx, a.sbuf, a.scount, a.sdtype, a.rbuf, a.rcount, a.rdtype, call);
    }
    static cuda::HostCopies host_copies(const Args &a, ompi_communicator_t *comm) {
        return allgather_copies(a.sbuf, a.scount, a.sdtype, a.rbuf, a.rcount, a.rdtype, comm);
    }
#endif
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
