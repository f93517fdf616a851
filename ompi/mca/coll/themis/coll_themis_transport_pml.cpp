// coll_themis_transport_pml.cpp: nonblocking PML point-to-point for the engine.
#include "coll_themis_transport_pml.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "ompi/mca/bml/base/base.h"
#include "ompi/mca/bml/bml.h"
#include "ompi/mca/pml/base/base.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/proc/proc.h"
#include "opal/runtime/opal_progress.h"

namespace themis {

namespace {

// Largest part: what one MPI count of bytes can carry, rounded down to a power of two.
constexpr size_t kMaxPartBytes = size_t(1) << 30;

void check(int rc, const char *what) {
    if (rc != OMPI_SUCCESS)
        throw std::runtime_error(std::string("PML ") + what + " failed with error " +
                                 std::to_string(rc));
}

} // namespace

PmlTransport::PmlTransport(ompi_communicator_t *comm, const RankLayout &layout, int my_position,
                           std::vector<size_t> part_bytes)
    : comm_(comm), part_bytes_(std::move(part_bytes)) {
    for (size_t &bytes : part_bytes_)
        bytes = bytes == 0 ? kMaxPartBytes : std::min(bytes, kMaxPartBytes);
    const Topology &topo = layout.topology;
    for (int d = 0; d < topo.num_dims(); ++d) {
        rank_of_peer_.emplace_back();
        for (int c = 0; c < topo.dim(d).peers; ++c)
            rank_of_peer_.back().push_back(layout.rank_at[topo.with_coord(my_position, d, c)]);
    }
}

int PmlTransport::peer_rank(int dim, int peer) const {
    return rank_of_peer_[size_t(dim)][size_t(peer)];
}

int PmlTransport::wire_tag(int dim, int tag) { return (dim << kTagBits) | tag; }

// Posts one PML operation per part of at most part_bytes; post(offset, bytes, &req).
template <typename Post>
Transport::Request PmlTransport::post_parts(size_t bytes, size_t part_bytes, Post post) {
    std::unique_ptr<Parts> req;
    if (spare_.empty()) {
        req = std::make_unique<Parts>();
    } else {
        req = std::move(spare_.back());
        spare_.pop_back();
    }
    size_t off = 0;
    do {
        ompi_request_t *r = nullptr;
        const size_t n = std::min(part_bytes, bytes - off);
        post(off, static_cast<int>(n), &r);
        req->push_back(r);
        off += n;
    } while (off < bytes);
    return req.release();
}

Transport::Request PmlTransport::isend(int dim, int peer, const void *buf, size_t bytes, int tag) {
    const int dst = peer_rank(dim, peer);
    return post_parts(bytes, part_bytes_[dim], [&](size_t off, int n, ompi_request_t **r) {
        check(MCA_PML_CALL(isend(static_cast<const char *>(buf) + off, n, &ompi_mpi_byte.dt, dst,
                                 wire_tag(dim, tag), MCA_PML_BASE_SEND_STANDARD, comm_, r)),
              "isend");
    });
}

Transport::Request PmlTransport::irecv(int dim, int peer, void *buf, size_t bytes, int tag) {
    const int src = peer_rank(dim, peer);
    return post_parts(bytes, part_bytes_[dim], [&](size_t off, int n, ompi_request_t **r) {
        check(MCA_PML_CALL(irecv(static_cast<char *>(buf) + off, n, &ompi_mpi_byte.dt, src,
                                 wire_tag(dim, tag), comm_, r)),
              "irecv");
    });
}

bool PmlTransport::test(Request handle) {
    auto *req = static_cast<Parts *>(handle);
    for (ompi_request_t *r : *req)
        if (!REQUEST_COMPLETE(r)) return false;
    int error = OMPI_SUCCESS;
    for (ompi_request_t *&r : *req) {
        if (r->req_status.MPI_ERROR != OMPI_SUCCESS) error = r->req_status.MPI_ERROR;
        ompi_request_free(&r);
    }
    req->clear(); // kept, with its room, for a later message
    spare_.emplace_back(req);
    check(error, "transfer");
    return true;
}

void PmlTransport::progress() { opal_progress(); }

size_t tcp_eager_bytes(ompi_communicator_t *comm, int rank) {
    // ob1 sends eagerly what fits in btl_eager_limit with its largest header, which is
    // well under this allowance.
    constexpr size_t kOb1HeaderAllowance = 1024;
    if (std::strcmp(mca_pml_base_selected_component.pmlm_version.mca_component_name, "ob1") != 0)
        return 0;
    // ob1 adds a peer on another node to the BML at its first message; asking for the
    // endpoint adds it now, as that first message would, so that the answer does not
    // depend on which peers earlier collectives happened to reach.
    ompi_proc_t *proc = ompi_comm_peer_lookup(comm, rank);
    mca_bml_base_endpoint_t *endpoint = proc ? mca_bml_base_get_endpoint(proc) : nullptr;
    if (endpoint == nullptr) return 0;
    const size_t btls = mca_bml_base_btl_array_get_size(&endpoint->btl_eager);
    size_t limit = btls == 0 ? 0 : SIZE_MAX;
    for (size_t i = 0; i < btls; ++i) {
        const mca_btl_base_module_t *btl =
            mca_bml_base_btl_array_get_index(&endpoint->btl_eager, i)->btl;
        if (std::strcmp(btl->btl_component->btl_version.mca_component_name, "tcp") != 0) return 0;
        limit = std::min(limit, btl->btl_eager_limit);
    }
    return limit > 2 * kOb1HeaderAllowance ? limit - kOb1HeaderAllowance : 0;
}

} // namespace themis
