// cma_transport: the node-local single-copy transport.
//
// Ranks of one node read their peers' memory directly with Linux's cross-memory attach
// (process_vm_readv): a message's bytes cross once, from where the sender keeps them to
// where the receiver wants them, by the receiver's CPU. Only small control messages travel
// through the transport this one wraps (control_channels.h), on the message's own
// (dimension, peer, tag):
//
//   sender                                    receiver
//   "ready": pid, its segments' addresses ->  process_vm_readv straight into its segments
//                                             (or, reducing, 64 KiB at a time into a
//                                             scratch buffer that stays in cache, each
//                                             piece reduced into its destination)
//   buffer free again  <-------------------   "done"
//
// So a stage's span of blocks moves without packing or unpacking, whatever ranges it is
// made of (up to max_segments of them), and a Reduce-Scatter step reads the peer's block
// once and reduces it in cache, where a message through the PML lands in a temporary
// buffer of the whole size first. Messages of at most kInlineBytes travel inside the
// "ready" message instead (one small message, no round trip).
//
// Dimensions whose peers are not on this node go to the wrapped transport unchanged. The
// peers' memory must be readable: same user, and, under Yama's ptrace_scope 1, this
// process having allowed it (allow_peer_reads); cma_probe checks both at set-up.
#pragma once

#include <sys/uio.h>

#include <memory>
#include <string>
#include <vector>

#include "transports/control_channels.h"
#include "transport.h"

namespace themis {

class CmaTransport : public Transport {
  public:
    // node_dims[d]: dimension d's peers share this node (read through CMA).
    CmaTransport(Transport &base, std::vector<bool> node_dims);
    ~CmaTransport() override;

    Request isend(int dim, int peer, const void *buf, size_t bytes, int tag) override;
    Request irecv(int dim, int peer, void *buf, size_t bytes, int tag) override;
    size_t max_segments(int dim) const override;
    Request isendv(int dim, int peer, const Segment *segments, size_t count, int tag) override;
    Request irecvv(int dim, int peer, const Segment *segments, size_t count, int tag,
                   Reducer *reducer) override;
    bool test(Request req) override;
    void progress() override;
    const char *name() const override { return "cma"; }

    // Messages of at most this many bytes travel inside the control message.
    static size_t inline_bytes();

  private:
    struct Req;
    // A message's request, from the kept ones if any; back to them once complete.
    Req *new_req(int kind, int dim, int peer, int tag, size_t bytes);
    void recycle(Req *r);
    bool advance(Req &r);
    bool receive(Req &r);
    void read_peer(const Req &r, const std::vector<char> &ready);

    Transport &base_;
    std::vector<bool> node_dims_;
    ControlChannels channels_;
    std::vector<char> scratch_; // reduction pieces
    // Kept from message to message, so that repeated calls allocate nothing: the requests
    // of completed messages, the control message going out and the one taken in, the
    // segments read (theirs, mine) and one read's iovecs.
    std::vector<std::unique_ptr<Req>> spare_;
    std::vector<char> out_, in_;
    std::vector<iovec> theirs_, mine_, lv_, rv_;
};

// Lets processes of this user read this one's memory where Yama's ptrace_scope would
// otherwise allow only its ancestors to (as Open MPI's vader does for its CMA).
void allow_peer_reads();

// Whether this process can read `bytes` at `address` in process `pid` into `out`; `why`
// says what failed.
bool cma_read(int pid, const void *address, void *out, size_t bytes, std::string &why);

} // namespace themis
