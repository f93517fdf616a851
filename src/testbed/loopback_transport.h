// loopback_transport: every rank of a topology inside one process, for tests and tools.
//
// Messages match on (source, destination, dimension, tag) in posting order, as MPI's
// do. In rendezvous mode a send completes only once its receive has taken the data,
// the strictest behaviour a real transport can show; in eager mode it completes at once.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "topology.h"
#include "transport.h"

namespace themis {

class LoopbackNetwork {
  public:
    LoopbackNetwork(const Topology &topo, bool rendezvous);
    ~LoopbackNetwork();
    Transport &transport(int rank);
    size_t messages() const { return messages_; }
    // Sends and receives posted but not yet matched (zero once everything completed).
    size_t unmatched() const;

  private:
    class Endpoint;
    struct Pending;
    using Key = std::tuple<int, int, int, int>; // source, destination, dim, tag
    Transport::Request post(bool is_send, int me, int dim, int peer, void *buf, size_t bytes,
                            int tag);

    Topology topo_;
    bool rendezvous_;
    std::vector<std::unique_ptr<Endpoint>> endpoints_;
    std::map<Key, std::deque<Pending *>> sends_, receives_;
    size_t messages_ = 0;
};

} // namespace themis
