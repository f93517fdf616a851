// coll_themis_transport_pml.h: themis::Transport over Open MPI's PML.
//
// Messages run on a private communicator (the set-up's duplicate of the user's, so no
// other traffic can match them; it outlives the transport) with tag (dimension << kTagBits) |
// engine tag, which stays below 2^24 as pml/ucx requires. A peer is named by its coordinate in a
// dimension and found through the rank layout. A message longer than its dimension's
// part size travels as several parts of at most that size, same tag, matched in order
// (MPI's non-overtaking rule); sender and receiver must use the same part sizes. A
// message's request (its parts' PML requests) is kept for a later message once complete:
// the messages of repeated calls allocate nothing here.
#pragma once

#include "coll_themis_prelude.h"

#include "ompi/communicator/communicator.h"
#include "ompi/request/request.h"

#include <memory>
#include <vector>

#include "rank_layout.h"
#include "transport.h"

namespace themis {

class PmlTransport : public Transport {
  public:
    // Runs on `comm` (not freed here). part_bytes: per dimension, the largest message;
    // 0 = the largest one MPI count of bytes carries (1 GiB here).
    PmlTransport(ompi_communicator_t *comm, const RankLayout &layout, int my_position,
                 std::vector<size_t> part_bytes);
    PmlTransport(const PmlTransport &) = delete;
    PmlTransport &operator=(const PmlTransport &) = delete;
    Request isend(int dim, int peer, const void *buf, size_t bytes, int tag) override;
    Request irecv(int dim, int peer, void *buf, size_t bytes, int tag) override;
    bool test(Request req) override;
    void progress() override;
    const char *name() const override { return "pml"; }

  private:
    using Parts = std::vector<ompi_request_t *>; // a message's request: its parts' requests
    int peer_rank(int dim, int peer) const;
    static int wire_tag(int dim, int tag);
    template <typename Post> Request post_parts(size_t bytes, size_t part_bytes, Post post);

    ompi_communicator_t *comm_;
    std::vector<std::vector<int>> rank_of_peer_; // per dimension and coordinate: its rank
    std::vector<size_t> part_bytes_;             // per dimension
    std::vector<std::unique_ptr<Parts>> spare_;  // requests of completed messages
};

// The largest message Open MPI's ob1 sends to `rank` of `comm` without a rendezvous
// round trip when every BTL it uses for that peer's first fragments is the TCP BTL;
// 0 otherwise (another PML, another BTL, or a peer ob1 cannot reach).
size_t tcp_eager_bytes(ompi_communicator_t *comm, int rank);

} // namespace themis
