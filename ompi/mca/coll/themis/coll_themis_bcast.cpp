// coll_themis_bcast.cpp: MPI_Bcast. Every chunk is scattered from the root over the
// dimensions in its own order, then all-gathered over them reversed.
//
// The buffer moves as bytes. A datatype whose elements lie in one contiguous run runs in
// place in the user's buffer; any other (a vector, a struct with gaps) is packed
// (MPI_PACKED) into a temporary buffer at the root, and unpacked from one at the other
// ranks once the call is complete.
#include "coll_themis_bcast.h"

#include <memory>
#include <stdexcept>
#include <vector>

#include "coll_themis_entry.h"
#include "cuda/collectives.h"

namespace themis {

char *contiguous_run(void *buff, int count, ompi_datatype_t *dtype) {
    if (!ompi_datatype_is_contiguous_memory_layout(dtype, count)) return nullptr;
    ptrdiff_t true_lb = 0, true_extent = 0;
    ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
    return static_cast<char *>(buff) + true_lb;
}

namespace {

// Packs (pack: into `packed`) or unpacks (from it) the call's elements.
void convert(void *buff, int count, ompi_datatype_t *dtype, std::vector<char> &packed, bool pack) {
    const int rc = pack ? ompi_datatype_sndrcv(buff, count, dtype, packed.data(),
                                               static_cast<int>(packed.size()), &ompi_mpi_packed.dt)
                        : ompi_datatype_sndrcv(packed.data(), static_cast<int>(packed.size()),
                                               &ompi_mpi_packed.dt, buff, count, dtype);
    if (rc != OMPI_SUCCESS)
        throw std::runtime_error(pack ? "packing the buffer failed"
                                      : "unpacking the buffer failed");
}

} // namespace

void prepare_bcast(Context &ctx, void *buff, int count, ompi_datatype_t *dtype, int root,
                   Call &call) {
    const size_t bytes = type_bytes(dtype, static_cast<size_t>(count));
    ctx.plan_request(call.request, Collective::Bcast, 1);
    call.request.block_counts.assign(1, bytes);
    call.request.root = ctx.layout().position_of[root];
    call.reduce_nothing();
    if (char *run = contiguous_run(buff, count, dtype)) {
        call.work = run;
        return;
    }
    auto packed = std::make_shared<std::vector<char>>(bytes);
    call.work = packed->data();
    if (ctx.layout().rank_at[ctx.position()] == root) {
        convert(buff, count, dtype, *packed, true);
        call.then([packed] {}); // kept until the call is complete
        return;
    }
    call.then([=] { convert(buff, count, dtype, *packed, false); });
}

} // namespace themis

using namespace themis;

namespace {

// MPI_Bcast's row of the collectives' table (coll_themis_entry.h).
struct Bcast {
    using Args = BcastArgs;
    static constexpr int slot = THEMIS_COLL_BCAST;
    static const char *unsupported(const Args &, ompi_communicator_t *) { return nullptr; }
    static size_t bytes(const Args &a, ompi_communicator_t *) {
        return type_bytes(a.dtype, static_cast<size_t>(a.count));
    }
    static void prepare(Context &ctx, const Args &a, Call &call) {
        prepare_bcast(ctx, a.rbuf, a.count, a.dtype, a.root, call);
    }
    static int below(mca_coll_themis_module_t *b, const Args &a, const void *, void *r,
                     ompi_request_t **request) {
        return request ? b->previous_ibcast(r, a.count, a.dtype, a.root, b->comm, request,
                                            b->previous_ibcast_module)
                       : b->previous_bcast(r, a.count, a.dtype, a.root, b->comm,
                                           b->previous_bcast_module);
    }
    static int below_init(mca_coll_themis_module_t *b, const Args &a, const void *, void *r,
                          ompi_info_t *info, ompi_request_t **request) {
        return b->previous_bcast_init(r, a.count, a.dtype, a.root, b->comm, info, request,
                                      b->previous_bcast_init_module);
    }
    static std::vector<opal_object_t *> objects(const Args &a, ompi_communicator_t *comm) {
        return themis::objects(comm, a.dtype);
    }
};

} // namespace

THEMIS_ENTRY_POINTS(bcast, Bcast, (Bcast::Args{buff, buff, count, dtype, root}))
