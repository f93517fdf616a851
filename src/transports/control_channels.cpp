// control_channels: small control messages sorted by kind (see control_channels.h).
#include "transports/control_channels.h"

#include <cstring>
#include <stdexcept>

namespace themis {

ControlChannels::~ControlChannels() {
    try {
        while (!progress()) base_.progress();
    } catch (...) { // a failed peer: nothing more to wait for
    }
}

void ControlChannels::expect(int dim, int peer, int tag) {
    Channel &c = channels_[Key{dim, peer, tag}];
    c.posted.push_back(Slot{std::vector<char>(kControlBytes), nullptr});
    Slot &s = c.posted.back();
    s.request = base_.irecv(dim, peer, s.message.data(), kControlBytes, tag);
}

bool ControlChannels::take(int dim, int peer, int tag, uint32_t kind, std::vector<char> &out) {
    auto it = channels_.find(Key{dim, peer, tag});
    if (it == channels_.end()) throw std::logic_error("control message taken but never expected");
    Channel &c = it->second;
    // Receives complete in posting order (MPI's non-overtaking rule per peer and tag).
    while (!c.posted.empty() && base_.test(c.posted.front().request)) {
        std::vector<char> &m = c.posted.front().message;
        ControlHeader h;
        std::memcpy(&h, m.data(), sizeof h);
        if (h.magic != magic_) throw std::runtime_error("malformed control message from a peer");
        c.arrived[h.kind].push_back(std::move(m));
        c.posted.pop_front();
    }
    auto q = c.arrived.find(kind);
    if (q == c.arrived.end()) return false;
    out = std::move(q->second.front());
    q->second.pop_front();
    if (q->second.empty()) c.arrived.erase(q);
    if (c.posted.empty() && c.arrived.empty()) channels_.erase(it);
    return true;
}

void ControlChannels::post(int dim, int peer, int tag, const void *message, size_t bytes) {
    if (bytes > kControlBytes || bytes < sizeof(ControlHeader))
        throw std::logic_error("control message of a wrong size");
    const char *p = static_cast<const char *>(message);
    outgoing_.push_back(Outgoing{std::vector<char>(p, p + bytes), nullptr});
    Outgoing &o = outgoing_.back();
    o.request = base_.isend(dim, peer, o.message.data(), bytes, tag);
}

bool ControlChannels::progress() {
    for (auto it = outgoing_.begin(); it != outgoing_.end();)
        it = base_.test(it->request) ? outgoing_.erase(it) : std::next(it);
    return outgoing_.empty();
}

} // namespace themis
