// stage: transfers of block spans, shared by the per-dimension algorithms.
#include "stage.h"

#include "engine.h"

namespace themis {

char *StageContext::at(const ByteRange &range) const {
    return hooks ? hooks->locate(op, range) : work + range.offset;
}

namespace {

// Whether each range starts where the one before it ends.
bool adjacent(const ByteRange *ranges, size_t count) {
    for (size_t i = 1; i < count; ++i)
        if (ranges[i].offset != ranges[i - 1].offset + ranges[i - 1].length) return false;
    return true;
}

} // namespace

Transfer::Transfer(StageContext &ctx, Kind kind, int peer, int lo, int hi, int tag)
    : ctx_(ctx), kind_(kind) {
    const PlanOp &op = ctx.op;
    ranges_ = op.ranges.data() + op.block_begin[lo];
    count_ = op.block_begin[hi] - op.block_begin[lo];
    for (size_t i = 0; i < count_; ++i) bytes_ += ranges_[i].length;
    if (bytes_ == 0) { // both sides see the same empty span: nothing to move
        done_ = true;
        return;
    }
    const int dim = op.dim;
    if (!ctx.hooks && count_ <= ctx.transport.max_segments(dim)) {
        start_vectored(peer, tag);
        return;
    }
    // One range, or adjacent ranges in the work buffer itself, move in place; received
    // Reduce-Scatter data always lands in a temporary buffer first.
    const bool direct =
        (count_ == 1 || (!ctx.hooks && adjacent(ranges_, count_))) && kind != Kind::ReceiveReduce;
    char *buf = direct ? ctx.at(ranges_[0]) : nullptr;
    if (!direct) temp_ = static_cast<char *>(ctx.memory.acquire(bytes_));
    if (kind == Kind::Send) {
        if (!direct) { // pack the span into one message
            size_t pos = 0;
            for (size_t i = 0; i < count_; ++i) {
                ctx.memory.copy(temp_ + pos, ctx.at(ranges_[i]), ranges_[i].length);
                pos += ranges_[i].length;
            }
        }
        req_ = ctx.transport.isend(dim, peer, direct ? buf : temp_, bytes_, tag);
    } else {
        req_ = ctx.transport.irecv(dim, peer, direct ? buf : temp_, bytes_, tag);
    }
}

// The transport moves the ranges where they are, and reduces into them: no temporary.
void Transfer::start_vectored(int peer, int tag) {
    std::vector<Segment> segments(count_);
    for (size_t i = 0; i < count_; ++i) segments[i] = {ctx_.at(ranges_[i]), ranges_[i].length};
    const int dim = ctx_.op.dim;
    if (kind_ == Kind::Send)
        req_ = ctx_.transport.isendv(dim, peer, segments.data(), count_, tag);
    else
        req_ = ctx_.transport.irecvv(dim, peer, segments.data(), count_, tag,
                                     kind_ == Kind::ReceiveReduce ? &ctx_.reducer : nullptr);
}

Transfer::~Transfer() {
    if (temp_) ctx_.memory.release(temp_, bytes_);
}

bool Transfer::done() {
    if (!done_ && ctx_.transport.test(req_)) {
        finish();
        done_ = true;
    }
    return done_;
}

// Unpacks or reduces a received temporary buffer into the work buffer.
void Transfer::finish() {
    if (kind_ == Kind::Send || !temp_) return;
    size_t pos = 0;
    for (size_t i = 0; i < count_; ++i) {
        char *dst = ctx_.at(ranges_[i]);
        if (kind_ == Kind::ReceiveReduce)
            ctx_.reducer.reduce(dst, temp_ + pos, ranges_[i].length);
        else
            ctx_.memory.copy(dst, temp_ + pos, ranges_[i].length);
        pos += ranges_[i].length;
    }
}

std::unique_ptr<Transfer> StageAlgorithm::send(int peer, int lo, int hi, int step) {
    return std::make_unique<Transfer>(ctx_, Transfer::Kind::Send, peer, lo, hi,
                                      ctx_.tag_base + step);
}

std::unique_ptr<Transfer> StageAlgorithm::receive(int peer, int lo, int hi, int step) {
    auto kind = ctx_.op.phase == Phase::ReduceScatter ? Transfer::Kind::ReceiveReduce
                                                      : Transfer::Kind::ReceiveCopy;
    return std::make_unique<Transfer>(ctx_, kind, peer, lo, hi, ctx_.tag_base + step);
}

bool StageAlgorithm::all_done(std::vector<std::unique_ptr<Transfer>> &transfers) {
    bool all = true;
    for (auto &t : transfers) all = t->done() && all;
    return all;
}

} // namespace themis
