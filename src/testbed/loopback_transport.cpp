// loopback_transport: in-process message matching (see loopback_transport.h).
#include "testbed/loopback_transport.h"

#include <cstring>
#include <stdexcept>
#include <string>

namespace themis {

struct LoopbackNetwork::Pending {
    void *buf;
    size_t bytes;
    bool done = false;
    std::vector<char> eager; // an eager send's copy of its data, owned by the network
    bool owned_by_network = false;
};

class LoopbackNetwork::Endpoint : public Transport {
  public:
    Endpoint(LoopbackNetwork &net, int rank) : net_(net), rank_(rank) {}
    Request isend(int dim, int peer, const void *buf, size_t bytes, int tag) override {
        return net_.post(true, rank_, dim, peer, const_cast<void *>(buf), bytes, tag);
    }
    Request irecv(int dim, int peer, void *buf, size_t bytes, int tag) override {
        return net_.post(false, rank_, dim, peer, buf, bytes, tag);
    }
    bool test(Request req) override {
        auto *p = static_cast<Pending *>(req);
        if (!p->done) return false;
        delete p;
        return true;
    }
    void progress() override {}
    const char *name() const override { return "loopback"; }

  private:
    LoopbackNetwork &net_;
    int rank_;
};

LoopbackNetwork::LoopbackNetwork(const Topology &topo, bool rendezvous)
    : topo_(topo), rendezvous_(rendezvous) {
    for (int r = 0; r < topo.size(); ++r)
        endpoints_.push_back(std::make_unique<Endpoint>(*this, r));
}

LoopbackNetwork::~LoopbackNetwork() {
    for (auto *queues : {&sends_, &receives_})
        for (auto &kv : *queues)
            for (Pending *p : kv.second) delete p;
}

Transport &LoopbackNetwork::transport(int rank) { return *endpoints_.at(rank); }

size_t LoopbackNetwork::unmatched() const {
    size_t n = 0;
    for (auto *queues : {&sends_, &receives_})
        for (auto &kv : *queues) n += kv.second.size();
    return n;
}

Transport::Request LoopbackNetwork::post(bool is_send, int me, int dim, int peer, void *buf,
                                         size_t bytes, int tag) {
    const int other = topo_.with_coord(me, dim, peer);
    const Key key = is_send ? Key{me, other, dim, tag} : Key{other, me, dim, tag};
    auto *p = new Pending{buf, bytes, false, {}, false};
    auto &opposite = (is_send ? receives_ : sends_)[key];
    if (opposite.empty()) {
        Pending *queued = p;
        if (is_send && !rendezvous_) { // eager: queue a copy, the send is complete
            queued = new Pending{nullptr, bytes, false, {}, false};
            queued->eager.assign(static_cast<char *>(buf), static_cast<char *>(buf) + bytes);
            queued->buf = queued->eager.data();
            queued->owned_by_network = true;
            p->done = true;
        }
        (is_send ? sends_ : receives_)[key].push_back(queued);
        return p;
    }
    Pending *match = opposite.front();
    opposite.pop_front();
    Pending *send = is_send ? p : match, *recv = is_send ? match : p;
    if (send->bytes > recv->bytes) { // shorter is fine, as in MPI
        const std::string what = "loopback: message of " + std::to_string(send->bytes) +
                                 " bytes matched a receive of " + std::to_string(recv->bytes);
        opposite.push_front(match); // leave the queue as it was
        delete p;
        throw std::logic_error(what);
    }
    if (send->bytes) std::memcpy(recv->buf, send->buf, send->bytes);
    ++messages_;
    recv->done = true;
    if (send->owned_by_network)
        delete send;
    else
        send->done = true;
    return p;
}

} // namespace themis
