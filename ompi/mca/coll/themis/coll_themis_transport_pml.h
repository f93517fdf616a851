// coll_themis_transport_pml.h: themis::Transport over Open MPI's PML.
//
// Messages run on the context's private communicator (a dup of the user's, so no
// other traffic can match them) with tag (dimension << kTagBits) | engine tag, which
// stays below 2^24 as pml/ucx requires. A peer is named by its coordinate in a
// dimension and found through the rank layout.
#pragma once

#include "coll_themis_prelude.h"

#include "ompi/communicator/communicator.h"
#include "ompi/request/request.h"

#include "rank_layout.h"
#include "transport.h"

namespace themis {

class PmlTransport : public Transport {
  public:
    PmlTransport(ompi_communicator_t *comm, const RankLayout &layout, int my_position);
    Request isend(int dim, int peer, const void *buf, size_t bytes, int tag) override;
    Request irecv(int dim, int peer, void *buf, size_t bytes, int tag) override;
    bool test(Request req) override;
    void progress() override;

  private:
    int peer_rank(int dim, int peer) const;
    static int wire_tag(int dim, int tag);

    ompi_communicator_t *comm_;
    const RankLayout &layout_;
    int my_position_;
};

} // namespace themis
