// stage: what every per-dimension algorithm shares: the op's blocks, and transfers of
// a span of consecutive blocks that pack, unpack or reduce as needed.
//
// A span [lo, hi) of blocks is a slice of PlanOp::ranges. A span of one range, or of
// ranges adjacent in the work buffer, moves straight from or into it; other spans go
// through a temporary buffer (packed before sending, unpacked after receiving). Received
// Reduce-Scatter data lands in a temporary buffer and is reduced into the work buffer when
// it arrives. A transport that takes lists of segments on the op's dimension
// (Transport::max_segments) gets the ranges as they are, and reduces into them itself.
//
// Nothing here allocates once warm: an algorithm object runs stage after stage
// (StageAlgorithm::restart; the engine keeps finished ones for its next stages), and its
// transfers live in lists that keep their room from one stage to the next.
#pragma once

#include <memory>
#include <vector>

#include "plan.h"
#include "transport.h"

namespace themis {

class ChunkHooks; // engine.h

// What one stage runs on. Pointers inside, so that an algorithm object can be given the
// next stage's context (StageAlgorithm::restart).
class StageContext {
  public:
    StageContext(Transport &transport, Reducer &reducer, Memory &memory, char *work,
                 const PlanOp &op, int peers, int tag_base, ChunkHooks *hooks = nullptr)
        : transport_(&transport), reducer_(&reducer), memory_(&memory), work_(work), op_(&op),
          peers_(peers), tag_base_(tag_base), hooks_(hooks) {}

    Transport &transport() const { return *transport_; }
    Reducer &reducer() const { return *reducer_; }
    Memory &memory() const { return *memory_; }
    const PlanOp &op() const { return *op_; }
    int peers() const { return peers_; }         // n_d
    int tag_base() const { return tag_base_; }   // tags tag_base .. tag_base + peers - 1
    ChunkHooks *hooks() const { return hooks_; } // set: bytes are where hooks->locate() says
    // Where the bytes of `range` (one of op().ranges) are: in the work buffer the op's
    // ranges refer to, or where the hooks say.
    char *at(const ByteRange &range) const;

  private:
    Transport *transport_;
    Reducer *reducer_;
    Memory *memory_;
    char *work_;
    const PlanOp *op_;
    int peers_;
    int tag_base_;
    ChunkHooks *hooks_;
};

// One message of a stage: a span of blocks sent to, or received from, one peer. Its
// temporary buffer (if any) goes back once it is done.
class Transfer {
  public:
    enum class Kind { Send, ReceiveCopy, ReceiveReduce };
    // Starts the message; `ctx` must outlive the transfer.
    Transfer(const StageContext &ctx, Kind kind, int peer, int lo, int hi, int tag);
    ~Transfer();
    // Moved only while its list grows (before it has room for a stage's transfers).
    Transfer(Transfer &&other) noexcept;
    Transfer(const Transfer &) = delete;
    Transfer &operator=(const Transfer &) = delete;
    Transfer &operator=(Transfer &&) = delete;

    // True once the message has completed and its data is in place.
    bool done();

  private:
    void start_vectored(int peer, int tag);
    void finish();
    void release_temp();

    const StageContext *ctx_;
    Kind kind_;
    const ByteRange *ranges_;
    size_t count_;
    size_t bytes_ = 0;
    char *temp_ = nullptr;
    Transport::Request req_ = nullptr;
    bool done_ = false;
};

// A per-dimension algorithm running one stage at a time: a small state machine.
class StageAlgorithm {
  public:
    explicit StageAlgorithm(const StageContext &ctx) : ctx_(ctx) {}
    virtual ~StageAlgorithm() = default;
    StageAlgorithm(const StageAlgorithm &) = delete;
    StageAlgorithm &operator=(const StageAlgorithm &) = delete;
    // Advances the stage; true once it is complete.
    virtual bool progress() = 0;
    // Lets go of the stage's transfers (once complete, or abandoned).
    void clear() {
        receives_.clear();
        sends_.clear();
    }
    // Runs the stage `ctx` from its start, as a new object of the same algorithm would.
    void restart(const StageContext &ctx) {
        clear();
        ctx_ = ctx;
        reset();
    }

  protected:
    // Puts the algorithm's own state back to the start of a stage over ctx_.
    virtual void reset() = 0;
    int me() const { return ctx_.op().my_block; }
    int n() const { return ctx_.peers(); }
    int wrap(int j) const { return ((j % n()) + n()) % n(); }
    // Whether the stage keeps one block (RS) rather than collecting them all.
    bool narrows() const { return phase_info(ctx_.op().phase).narrows; }
    int root() const { return ctx_.op().root_block; } // a group cast's source peer
    // Starts a send (receive) of blocks [lo, hi) with the peer, on the step's tag, at the
    // end of sends_ (receives_).
    void send(int peer, int lo, int hi, int step);
    void receive(int peer, int lo, int hi, int step);
    // True when every transfer in the list is done.
    static bool all_done(std::vector<Transfer> &transfers);
    // True when every transfer of both lists is done (each one asked, receives first).
    bool step_done() {
        const bool received = all_done(receives_);
        return all_done(sends_) && received;
    }

    StageContext ctx_;
    std::vector<Transfer> receives_, sends_; // the step's (or the stage's) messages
};

// The algorithms and their factory: algorithms/registry.h.

} // namespace themis
