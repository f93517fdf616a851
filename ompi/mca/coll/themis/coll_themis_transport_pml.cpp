// coll_themis_transport_pml.cpp: nonblocking PML point-to-point for the engine.
#include "coll_themis_transport_pml.h"

#include <climits>
#include <stdexcept>
#include <string>

#include "ompi/mca/pml/pml.h"
#include "opal/runtime/opal_progress.h"

namespace themis {

namespace {

// A message larger than one MPI count can carry travels as several parts.
constexpr size_t kPartBytes = size_t(1) << 30;

struct PmlRequest {
    std::vector<ompi_request_t *> parts;
};

void check(int rc, const char *what) {
    if (rc != OMPI_SUCCESS)
        throw std::runtime_error(std::string("PML ") + what + " failed with error " +
                                 std::to_string(rc));
}

} // namespace

PmlTransport::PmlTransport(ompi_communicator_t *comm, const RankLayout &layout, int my_position)
    : comm_(comm), layout_(layout), my_position_(my_position) {}

int PmlTransport::peer_rank(int dim, int peer) const {
    return layout_.rank_at[layout_.topology.with_coord(my_position_, dim, peer)];
}

int PmlTransport::wire_tag(int dim, int tag) { return (dim << kTagBits) | tag; }

// Posts one PML operation per part of at most kPartBytes; post(offset, bytes, &req).
template <typename Post> Transport::Request post_parts(size_t bytes, Post post) {
    auto *req = new PmlRequest;
    size_t off = 0;
    do {
        ompi_request_t *r = nullptr;
        const size_t n = std::min(kPartBytes, bytes - off);
        post(off, static_cast<int>(n), &r);
        req->parts.push_back(r);
        off += n;
    } while (off < bytes);
    return req;
}

Transport::Request PmlTransport::isend(int dim, int peer, const void *buf, size_t bytes, int tag) {
    const int dst = peer_rank(dim, peer);
    return post_parts(bytes, [&](size_t off, int n, ompi_request_t **r) {
        check(MCA_PML_CALL(isend(static_cast<const char *>(buf) + off, n, &ompi_mpi_byte.dt, dst,
                                 wire_tag(dim, tag), MCA_PML_BASE_SEND_STANDARD, comm_, r)),
              "isend");
    });
}

Transport::Request PmlTransport::irecv(int dim, int peer, void *buf, size_t bytes, int tag) {
    const int src = peer_rank(dim, peer);
    return post_parts(bytes, [&](size_t off, int n, ompi_request_t **r) {
        check(MCA_PML_CALL(irecv(static_cast<char *>(buf) + off, n, &ompi_mpi_byte.dt, src,
                                 wire_tag(dim, tag), comm_, r)),
              "irecv");
    });
}

bool PmlTransport::test(Request handle) {
    auto *req = static_cast<PmlRequest *>(handle);
    for (ompi_request_t *r : req->parts)
        if (!REQUEST_COMPLETE(r)) return false;
    int error = OMPI_SUCCESS;
    for (ompi_request_t *&r : req->parts) {
        if (r->req_status.MPI_ERROR != OMPI_SUCCESS) error = r->req_status.MPI_ERROR;
        ompi_request_free(&r);
    }
    delete req;
    check(error, "transfer");
    return true;
}

void PmlTransport::progress() { opal_progress(); }

} // namespace themis
