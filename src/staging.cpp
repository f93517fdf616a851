// staging: chunk-by-chunk staging of a plan's data in bounded host buffers (see staging.h).
#include "staging.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>

namespace themis {

// ---------------------------------------------------------------------------------------
// DeferredHostCopier

void DeferredHostCopier::copy(Direction dir, void *dst, const void *src, size_t bytes) {
    queue_[dir].push_back({dst, src, bytes});
    ++queued_[dir];
}

size_t DeferredHostCopier::progress(size_t max_copies) {
    size_t ran = 0;
    for (int dir = 0; dir < 2; ++dir) {
        for (size_t i = 0; i < max_copies && !queue_[dir].empty(); ++i, ++ran) {
            const Copy c = queue_[dir].front();
            queue_[dir].pop_front();
            if (c.bytes) std::memcpy(c.dst, c.src, c.bytes);
            ++done_[dir];
        }
    }
    return ran;
}

// ---------------------------------------------------------------------------------------
// Footprints

namespace {

// The union of `ranges`, ascending, adjacent and overlapping ranges merged.
std::vector<ByteRange> union_of(std::vector<ByteRange> ranges) {
    std::sort(ranges.begin(), ranges.end(),
              [](const ByteRange &a, const ByteRange &b) { return a.offset < b.offset; });
    std::vector<ByteRange> out;
    for (const ByteRange &r : ranges) {
        if (r.length == 0) continue;
        if (!out.empty() && r.offset <= out.back().offset + out.back().length) {
            const uint64_t end =
                std::max(out.back().offset + out.back().length, r.offset + r.length);
            out.back().length = end - out.back().offset;
        } else {
            out.push_back(r);
        }
    }
    return out;
}

// `ranges` placed in the staging buffer laid out by `runs`.
std::vector<StagedRange> place(const std::vector<ByteRange> &ranges,
                               const std::vector<StagedRange> &runs) {
    std::vector<StagedRange> out;
    for (const ByteRange &r : union_of(ranges)) {
        auto it =
            std::upper_bound(runs.begin(), runs.end(), r.offset,
                             [](uint64_t off, const StagedRange &run) { return off < run.offset; });
        if (it == runs.begin() || r.offset + r.length > (it - 1)->offset + (it - 1)->length)
            throw std::logic_error("staging: a range outside its chunk's pieces");
        --it;
        out.push_back({r.offset, r.length, it->slot + (r.offset - it->offset)});
    }
    return out;
}

std::vector<ByteRange> block_ranges(const PlanOp &op, int block) {
    return std::vector<ByteRange>(op.ranges.begin() + op.block_begin[block],
                                  op.ranges.begin() + op.block_begin[block + 1]);
}

} // namespace

std::vector<ChunkFootprint> chunk_footprints(const Plan &plan) {
    const size_t chunks = plan.schedule.size();
    std::vector<std::vector<ByteRange>> all(chunks);
    std::vector<int> first(chunks, -1), last(chunks, -1);
    for (size_t i = 0; i < plan.ops.size(); ++i) {
        const PlanOp &op = plan.ops[i];
        all.at(op.chunk).insert(all[op.chunk].end(), op.ranges.begin(), op.ranges.end());
        if (first[op.chunk] < 0) first[op.chunk] = static_cast<int>(i);
        last[op.chunk] = static_cast<int>(i);
    }
    std::vector<ChunkFootprint> out(chunks);
    for (size_t k = 0; k < chunks; ++k) {
        ChunkFootprint &f = out[k];
        for (const ByteRange &r : union_of(all[k])) {
            f.runs.push_back({r.offset, r.length, f.bytes});
            f.bytes += r.length;
        }
        if (first[k] < 0) continue;
        // A first phase that widens (All-Gather) needs only this rank's own piece to
        // start: its first stage's own block. A last phase that narrows (Reduce-Scatter)
        // leaves only this rank's piece meaningful: its last stage's own block.
        // Everything else needs (or yields) the whole chunk, a tree's casts too.
        const PlanOp &head = plan.ops[first[k]], &tail = plan.ops[last[k]];
        std::vector<ByteRange> whole;
        for (const StagedRange &r : f.runs) whole.push_back({r.offset, r.length});
        const CollectiveInfo &info = collective_info(plan.collective);
        const PhaseInfo &first_phase = phase_info(info.phases.front());
        const PhaseInfo &last_phase = phase_info(info.phases.back());
        const bool whole_in = first_phase.narrows || first_phase.rooted;
        const bool whole_out = !last_phase.narrows || last_phase.rooted;
        f.initial = place(whole_in ? whole : block_ranges(head, head.my_block), f.runs);
        f.result = place(whole_out ? whole : block_ranges(tail, tail.my_block), f.runs);
    }
    return out;
}

uint64_t minimum_staging_budget(const Plan &plan, const std::vector<ChunkFootprint> &chunks,
                                int max_active) {
    size_t dims = 0;
    for (const auto &q : plan.dim_queue) dims += q.empty() ? 0 : 1;
    const size_t pinned = static_cast<size_t>(std::max(1, max_active) + 1) * dims;
    std::vector<uint64_t> sizes;
    for (const auto &c : chunks) sizes.push_back(c.bytes);
    std::sort(sizes.begin(), sizes.end(), std::greater<uint64_t>());
    uint64_t sum = 0;
    for (size_t i = 0; i < sizes.size() && i < pinned; ++i) sum += sizes[i];
    return sum;
}

// ---------------------------------------------------------------------------------------
// Stager

Stager::Stager(Memory &staging, AsyncCopier &copier, const StagingConfig &config)
    : staging_(staging), copier_(copier), config_(config) {}

Stager::~Stager() {
    // After a failure mid-run copies may still be in flight into or out of our buffers.
    if (used_ == 0) return;
    try {
        copier_.wait_all();
    } catch (...) {
        return; // the copy engine is broken: better to leak the buffers than reuse them
    }
    for (size_t k = 0; k < chunks_.size(); ++k)
        if (chunks_[k].slot) release(static_cast<int>(k));
}

void Stager::begin(const Plan &plan) {
    if (plan_) throw std::logic_error("staging: a Stager serves one execution");
    plan_ = &plan;
    footprint_ = chunk_footprints(plan);
    chunks_.assign(footprint_.size(), Chunk());
    first_op_.assign(footprint_.size(), -1);
    for (size_t i = 0; i < plan.ops.size(); ++i)
        if (first_op_[plan.ops[i].chunk] < 0) first_op_[plan.ops[i].chunk] = static_cast<int>(i);
    for (size_t k = 0; k < chunks_.size(); ++k)
        if (first_op_[k] < 0) { // no stage on this rank: nothing to move
            chunks_[k].state = State::Done;
            ++done_;
        }
    queue_pos_.assign(plan.ops.size(), 0);
    for (const auto &queue : plan.dim_queue)
        for (size_t p = 0; p < queue.size(); ++p) queue_pos_[queue[p]] = p;
    started_.assign(plan.dim_queue.size(), 0);
    stats_.budget =
        std::max(config_.budget, minimum_staging_budget(plan, footprint_, config_.max_active));
}

void Stager::copy_ranges(AsyncCopier::Direction dir, int chunk,
                         const std::vector<StagedRange> &ranges, const StagingRegion &region) {
    char *slot = chunks_[chunk].slot;
    for (const StagedRange &r : ranges) {
        const uint64_t lo = std::max(r.offset, region.origin);
        const uint64_t hi = std::min(r.offset + r.length, region.end);
        if (lo >= hi) continue;
        if (!region.base)
            throw std::logic_error("staging: no buffer to copy chunk data to or from");
        char *outside = region.base + (lo - region.origin);
        char *inside = slot + r.slot + (lo - r.offset);
        if (dir == AsyncCopier::ToStaging)
            copier_.copy(dir, inside, outside, hi - lo);
        else
            copier_.copy(dir, outside, inside, hi - lo);
    }
    chunks_[chunk].fence = copier_.fence(dir);
    moving_.push_back(chunk);
}

void Stager::release(int k) {
    Chunk &c = chunks_[k];
    staging_.release(c.slot, footprint_[k].bytes);
    c.slot = nullptr;
    used_ -= footprint_[k].bytes;
}

void Stager::progress() {
    for (size_t i = 0; i < moving_.size();) {
        const int k = moving_[i];
        Chunk &c = chunks_[k];
        const auto dir = c.state == State::Loading ? AsyncCopier::ToStaging : AsyncCopier::ToHome;
        if (!copier_.passed(dir, c.fence)) {
            ++i;
            continue;
        }
        moving_[i] = moving_.back();
        moving_.pop_back();
        if (c.state == State::Loading) {
            c.state = State::Resident;
            continue;
        }
        freeing_ -= footprint_[k].bytes;
        release(k);
        if (c.state == State::Evicting) {
            c.state = State::Home;
        } else {
            c.state = State::Done;
            ++done_;
        }
    }
}

bool Stager::ready(const PlanOp &op) {
    progress();
    Chunk &c = chunks_[op.chunk];
    if (c.state == State::Home) admit(op.chunk);
    if (c.state != State::Resident) {
        c.wanted = true;
        return false;
    }
    c.wanted = false;
    c.running = true;
    ++started_[op.dim];
    return true;
}

bool Stager::admit(int k) {
    const uint64_t need = footprint_[k].bytes;
    if (used_ + need > stats_.budget) {
        make_room(need, k);
        return false; // once the evictions have completed
    }
    Chunk &c = chunks_[k];
    c.slot = static_cast<char *>(staging_.acquire(need));
    used_ += need;
    stats_.peak_bytes = std::max(stats_.peak_bytes, used_);
    const auto &ranges = c.loaded_before ? footprint_[k].runs : footprint_[k].initial;
    const auto &region = c.loaded_before ? config_.home : config_.source;
    c.state = State::Loading;
    copy_ranges(AsyncCopier::ToStaging, k, ranges, region);
    c.loaded_before = true;
    ++stats_.loads;
    for (const auto &r : ranges) stats_.load_bytes += r.length;
    progress(); // a copy engine may be done at once
    return true;
}

// Evicts idle resident chunks until `need` bytes will fit once the copies out complete.
void Stager::make_room(uint64_t need, int for_chunk) {
    while (used_ - freeing_ + need > stats_.budget) {
        // The idle chunk needed last: its next stage furthest from its queue's head.
        int victim = -1;
        size_t furthest = 0;
        for (size_t k = 0; k < chunks_.size(); ++k) {
            const Chunk &c = chunks_[k];
            if (c.state != State::Resident || c.running || c.wanted || int(k) == for_chunk)
                continue;
            const PlanOp &next = plan_->ops[first_op_[k] + c.stages_done];
            const size_t distance = queue_pos_[first_op_[k] + c.stages_done] - started_[next.dim];
            if (victim < 0 || distance > furthest) {
                victim = static_cast<int>(k);
                furthest = distance;
            }
        }
        if (victim < 0) return; // wait for running stages to finish
        evict(victim);
    }
}

void Stager::evict(int k) {
    Chunk &c = chunks_[k];
    c.state = State::Evicting;
    freeing_ += footprint_[k].bytes;
    ++stats_.evictions;
    stats_.eviction_bytes += footprint_[k].bytes;
    copy_ranges(AsyncCopier::ToHome, k, footprint_[k].runs, config_.home);
}

char *Stager::locate(const PlanOp &op, const ByteRange &range) {
    const Chunk &c = chunks_.at(op.chunk);
    if (c.state != State::Resident || !c.running)
        throw std::logic_error("staging: chunk " + std::to_string(op.chunk) + " is not staged");
    const auto &runs = footprint_[op.chunk].runs;
    auto it =
        std::upper_bound(runs.begin(), runs.end(), range.offset,
                         [](uint64_t off, const StagedRange &run) { return off < run.offset; });
    if (it == runs.begin() || range.offset + range.length > (it - 1)->offset + (it - 1)->length)
        throw std::logic_error("staging: range outside chunk " + std::to_string(op.chunk));
    --it;
    return c.slot + it->slot + (range.offset - it->offset);
}

void Stager::stage_done(const PlanOp &op) {
    Chunk &c = chunks_[op.chunk];
    c.running = false;
    ++c.stages_done;
}

void Stager::chunk_finished(int k) {
    Chunk &c = chunks_[k];
    c.state = State::Storing;
    freeing_ += footprint_[k].bytes;
    for (const auto &r : footprint_[k].result) stats_.store_bytes += r.length;
    copy_ranges(AsyncCopier::ToHome, k, footprint_[k].result, config_.result);
    progress();
}

void Stager::finish() {
    copier_.wait_all();
    progress();
    if (!finished())
        throw std::logic_error("staging: " + std::to_string(chunks_.size() - done_) +
                               " chunks did not finish");
}

} // namespace themis
