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

ControlChannels::Buffer ControlChannels::buffer() {
    Buffer b;
    if (!spare_.empty()) {
        b = std::move(spare_.back());
        spare_.pop_back();
    }
    b.resize(kControlBytes); // within the room of any buffer that was used before
    return b;
}

void ControlChannels::recycle(Buffer &&buffer) { spare_.push_back(std::move(buffer)); }

ControlChannels::Channel *ControlChannels::channel(int dim, int peer, int tag, bool make) {
    Channel *free = nullptr;
    for (const std::unique_ptr<Channel> &c : channels_) {
        if (c->in_use && c->dim == dim && c->peer == peer && c->tag == tag) return c.get();
        if (!c->in_use && !free) free = c.get();
    }
    if (!make) return nullptr;
    if (!free) {
        channels_.push_back(std::make_unique<Channel>());
        free = channels_.back().get();
    }
    free->dim = dim;
    free->peer = peer;
    free->tag = tag;
    free->in_use = true;
    return free;
}

void ControlChannels::expect(int dim, int peer, int tag) {
    Channel &c = *channel(dim, peer, tag, true);
    c.posted.push_back(Posted{buffer(), nullptr});
    Posted &p = c.posted.back();
    p.request = base_.irecv(dim, peer, p.message.data(), kControlBytes, tag);
}

bool ControlChannels::take(int dim, int peer, int tag, uint32_t kind, std::vector<char> &out) {
    Channel *c = channel(dim, peer, tag, false);
    if (c == nullptr) throw std::logic_error("control message taken but never expected");
    // Receives complete in posting order (MPI's non-overtaking rule per peer and tag).
    size_t done = 0;
    while (done < c->posted.size() && base_.test(c->posted[done].request)) {
        Buffer &m = c->posted[done].message;
        ControlHeader h;
        std::memcpy(&h, m.data(), sizeof h);
        if (h.magic != magic_) throw std::runtime_error("malformed control message from a peer");
        c->arrived.push_back(std::move(m));
        ++done;
    }
    c->posted.erase(c->posted.begin(), c->posted.begin() + static_cast<long>(done));
    for (size_t i = 0; i < c->arrived.size(); ++i) {
        ControlHeader h;
        std::memcpy(&h, c->arrived[i].data(), sizeof h);
        if (h.kind != kind) continue;
        std::swap(out, c->arrived[i]);
        recycle(std::move(c->arrived[i])); // what `out` held
        c->arrived.erase(c->arrived.begin() + static_cast<long>(i));
        if (c->posted.empty() && c->arrived.empty()) c->in_use = false;
        return true;
    }
    return false;
}

void ControlChannels::post(int dim, int peer, int tag, const void *message, size_t bytes) {
    if (bytes > kControlBytes || bytes < sizeof(ControlHeader))
        throw std::logic_error("control message of a wrong size");
    Buffer b = buffer();
    std::memcpy(b.data(), message, bytes);
    b.resize(bytes);
    outgoing_.push_back(Posted{std::move(b), nullptr});
    Posted &o = outgoing_.back();
    o.request = base_.isend(dim, peer, o.message.data(), bytes, tag);
}

bool ControlChannels::progress() {
    size_t kept = 0;
    for (size_t i = 0; i < outgoing_.size(); ++i) {
        if (base_.test(outgoing_[i].request)) {
            recycle(std::move(outgoing_[i].message));
            continue;
        }
        if (kept != i) outgoing_[kept] = std::move(outgoing_[i]);
        ++kept;
    }
    outgoing_.resize(kept);
    return outgoing_.empty();
}

} // namespace themis
