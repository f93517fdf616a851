// stage: what every per-dimension algorithm shares: the op's blocks, and transfers of
// a span of consecutive blocks that pack, unpack or reduce as needed.
//
// A span [lo, hi) of blocks is a slice of PlanOp::ranges. A span of one range, or of
// ranges adjacent in the work buffer, moves straight from or into it; other spans go
// through a temporary buffer (packed before sending, unpacked after receiving). Received
// Reduce-Scatter data lands in a temporary buffer and is reduced into the work buffer when
// it arrives. A transport that takes lists of segments on the op's dimension
// (Transport::max_segments) gets the ranges as they are, and reduces into them itself.
#pragma once

#include <memory>
#include <vector>

#include "plan.h"
#include "transport.h"

namespace themis {

class ChunkHooks; // engine.h

struct StageContext {
    Transport &transport;
    Reducer &reducer;
    Memory &memory;
    char *work; // the buffer the op's ranges refer to
    const PlanOp &op;
    int peers;                   // n_d
    int tag_base;                // tags tag_base .. tag_base + peers - 1 belong to this op
    ChunkHooks *hooks = nullptr; // set: the bytes are where hooks->locate() says, not in work

    // Where the bytes of `range` (one of op.ranges) are.
    char *at(const ByteRange &range) const;
};

// One message of a stage: a span of blocks sent to, or received from, one peer.
class Transfer {
  public:
    enum class Kind { Send, ReceiveCopy, ReceiveReduce };
    Transfer(StageContext &ctx, Kind kind, int peer, int lo, int hi, int tag);
    ~Transfer();
    Transfer(const Transfer &) = delete;
    Transfer &operator=(const Transfer &) = delete;

    // True once the message has completed and its data is in place.
    bool done();

  private:
    void start_vectored(int peer, int tag);
    void finish();

    StageContext &ctx_;
    Kind kind_;
    const ByteRange *ranges_;
    size_t count_;
    size_t bytes_ = 0;
    char *temp_ = nullptr;
    Transport::Request req_ = nullptr;
    bool done_ = false;
};

// A per-dimension algorithm running one stage: a small state machine.
class StageAlgorithm {
  public:
    explicit StageAlgorithm(StageContext ctx) : ctx_(ctx) {}
    virtual ~StageAlgorithm() = default;
    // Advances the stage; true once it is complete.
    virtual bool progress() = 0;

  protected:
    int me() const { return ctx_.op.my_block; }
    int n() const { return ctx_.peers; }
    int wrap(int j) const { return ((j % n()) + n()) % n(); }
    std::unique_ptr<Transfer> send(int peer, int lo, int hi, int step);
    std::unique_ptr<Transfer> receive(int peer, int lo, int hi, int step);
    // True when every transfer in the list is done.
    static bool all_done(std::vector<std::unique_ptr<Transfer>> &transfers);

    StageContext ctx_;
};

// The algorithms and their factory: algorithms/registry.h.

} // namespace themis
