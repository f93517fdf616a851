// stage: transfers of block spans, shared by the per-dimension algorithms.
#include "stage.h"

#include "engine.h"

namespace themis {

char *StageContext::at(const ByteRange &range) const {
    return hooks_ ? hooks_->locate(*op_, range) : work_ + range.offset;
}

namespace {

// Whether each range starts where the one before it ends.
bool adjacent(const ByteRange *ranges, size_t count) {
    for (size_t i = 1; i < count; ++i)
        if (ranges[i].offset != ranges[i - 1].offset + ranges[i - 1].length) return false;
    return true;
}

} // namespace

Transfer::Transfer(const StageContext &ctx, Kind kind, int peer, int lo, int hi, int tag)
    : ctx_(&ctx), kind_(kind) {
    const PlanOp &op = ctx.op();
    ranges_ = op.ranges.data() + op.block_begin[lo];
    count_ = op.block_begin[hi] - op.block_begin[lo];
    for (size_t i = 0; i < count_; ++i) bytes_ += ranges_[i].length;
    if (bytes_ == 0) { // both sides see the same empty span: nothing to move
        done_ = true;
        return;
    }
    const int dim = op.dim;
    if (!ctx.hooks() && count_ <= ctx.transport().max_segments(dim)) {
        start_vectored(peer, tag);
        return;
    }
    // One range, or adjacent ranges in the work buffer itself, move in place; received
    // Reduce-Scatter data always lands in a temporary buffer first.
    const bool direct =
        (count_ == 1 || (!ctx.hooks() && adjacent(ranges_, count_))) && kind != Kind::ReceiveReduce;
    char *buf = direct ? ctx.at(ranges_[0]) : nullptr;
    if (!direct) temp_ = static_cast<char *>(ctx.memory().acquire(bytes_));
    try {
        if (kind == Kind::Send) {
            if (!direct) { // pack the span into one message
                size_t pos = 0;
                for (size_t i = 0; i < count_; ++i) {
                    ctx.memory().copy(temp_ + pos, ctx.at(ranges_[i]), ranges_[i].length);
                    pos += ranges_[i].length;
                }
            }
            req_ = ctx.transport().isend(dim, peer, direct ? buf : temp_, bytes_, tag);
        } else {
            req_ = ctx.transport().irecv(dim, peer, direct ? buf : temp_, bytes_, tag);
        }
    } catch (...) { // not constructed: the destructor will not give the buffer back
        release_temp();
        throw;
    }
}

Transfer::Transfer(Transfer &&other) noexcept
    : ctx_(other.ctx_), kind_(other.kind_), ranges_(other.ranges_), count_(other.count_),
      bytes_(other.bytes_), temp_(other.temp_), req_(other.req_), done_(other.done_) {
    other.temp_ = nullptr;
    other.req_ = nullptr;
    other.done_ = true;
}

// The transport moves the ranges where they are, and reduces into them: no temporary.
void Transfer::start_vectored(int peer, int tag) {
    // The list is read during the call only: on the stack unless it is long.
    constexpr size_t kOnStack = 64;
    Segment on_stack[kOnStack];
    std::vector<Segment> on_heap(count_ > kOnStack ? count_ : 0);
    Segment *segments = count_ > kOnStack ? on_heap.data() : on_stack;
    for (size_t i = 0; i < count_; ++i) segments[i] = {ctx_->at(ranges_[i]), ranges_[i].length};
    const int dim = ctx_->op().dim;
    if (kind_ == Kind::Send)
        req_ = ctx_->transport().isendv(dim, peer, segments, count_, tag);
    else
        req_ = ctx_->transport().irecvv(dim, peer, segments, count_, tag,
                                        kind_ == Kind::ReceiveReduce ? &ctx_->reducer() : nullptr);
}

Transfer::~Transfer() { release_temp(); }

void Transfer::release_temp() {
    if (temp_) ctx_->memory().release(temp_, bytes_);
    temp_ = nullptr;
}

bool Transfer::done() {
    if (!done_ && ctx_->transport().test(req_)) {
        finish();
        done_ = true;
        release_temp();
    }
    return done_;
}

// Unpacks or reduces a received temporary buffer into the work buffer.
void Transfer::finish() {
    if (kind_ == Kind::Send || !temp_) return;
    size_t pos = 0;
    for (size_t i = 0; i < count_; ++i) {
        char *dst = ctx_->at(ranges_[i]);
        if (kind_ == Kind::ReceiveReduce)
            ctx_->reducer().reduce(dst, temp_ + pos, ranges_[i].length);
        else
            ctx_->memory().copy(dst, temp_ + pos, ranges_[i].length);
        pos += ranges_[i].length;
    }
}

void StageAlgorithm::send(int peer, int lo, int hi, int step) {
    sends_.emplace_back(ctx_, Transfer::Kind::Send, peer, lo, hi, ctx_.tag_base() + step);
}

void StageAlgorithm::receive(int peer, int lo, int hi, int step) {
    const auto kind = phase_info(ctx_.op().phase).reduces ? Transfer::Kind::ReceiveReduce
                                                          : Transfer::Kind::ReceiveCopy;
    receives_.emplace_back(ctx_, kind, peer, lo, hi, ctx_.tag_base() + step);
}

bool StageAlgorithm::all_done(std::vector<Transfer> &transfers) {
    bool all = true;
    for (Transfer &t : transfers) all = t.done() && all;
    return all;
}

} // namespace themis
