// control_channels: the small messages of a rendezvous protocol, over another transport.
//
// A rendezvous transport (cma_transport.h, and CUDA IPC in the glue) moves a message's
// bytes itself and only sends small control messages ("here is my buffer", "done reading
// it") through the transport it wraps, on the message's own (dimension, peer, tag). Both
// directions of an exchange may share a tag (two peers sending each other a block in the
// same step), so a party cannot know which of its peer's control messages comes first:
// each party posts one receive per control message it expects, in order, every one big
// enough for any control message, and sorts what arrives by its kind.
//
// Every control message starts with a ControlHeader and is at most kControlBytes long, so
// it never needs the wrapped transport to cut it into parts (its smallest part is 1 KiB).
//
// Buffers and channels are kept for reuse: once as many are in use as a call needs, the
// exchanges of repeated calls allocate nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "transport.h"

namespace themis {

constexpr size_t kControlBytes = 1024;

struct ControlHeader {
    uint32_t magic = 0;
    uint32_t kind = 0;
};

class ControlChannels {
  public:
    // `magic`: what every control message of the protocol starts with.
    ControlChannels(Transport &base, uint32_t magic) : base_(base), magic_(magic) {}
    // Waits for the control messages still on their way out.
    ~ControlChannels();
    ControlChannels(const ControlChannels &) = delete;
    ControlChannels &operator=(const ControlChannels &) = delete;

    // Posts the receive of one control message from (dim, peer, tag).
    void expect(int dim, int peer, int tag);
    // True, and the message in `out` (its earlier contents dropped), once a control message
    // of `kind` has arrived from (dim, peer, tag) (one expect() each). Throws on a message of
    // another protocol.
    bool take(int dim, int peer, int tag, uint32_t kind, std::vector<char> &out);
    // Sends `bytes` (<= kControlBytes, a ControlHeader first) to (dim, peer, tag); the
    // bytes are copied, the send completes on its own.
    void post(int dim, int peer, int tag, const void *message, size_t bytes);
    // Completes what post() sent; true when nothing is left on its way out.
    bool progress();

  private:
    using Buffer = std::vector<char>;
    struct Posted {
        Buffer message;
        Transport::Request request;
    };
    // The control messages of one (dim, peer, tag): receives posted, in posting order, and
    // messages arrived, in arrival order; free (in_use false) once both are empty.
    struct Channel {
        int dim = 0, peer = 0, tag = 0;
        bool in_use = false;
        std::vector<Posted> posted;
        std::vector<Buffer> arrived;
    };
    // The channel of (dim, peer, tag), or nullptr; made (from a free one) when `make`.
    Channel *channel(int dim, int peer, int tag, bool make);
    // A buffer of kControlBytes from the pool, or new; back into the pool.
    Buffer buffer();
    void recycle(Buffer &&buffer);

    Transport &base_;
    uint32_t magic_;
    std::vector<std::unique_ptr<Channel>> channels_;
    std::vector<Posted> outgoing_;
    std::vector<Buffer> spare_;
};

} // namespace themis
