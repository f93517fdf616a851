// staging: a plan run over data that the transport cannot reach (device memory behind a
// transport without CUDA support), through a bounded set of host staging buffers.
//
// A Stager is the ChunkHooks of such a run. Each chunk's bytes are copied into a staging
// buffer before its first stage starts (ready() holds once the copy has completed) and
// copied back once its last stage has finished here, asynchronously, so that one chunk's
// copies overlap other chunks' communication:
//
//   chunk k:   copy in -> RS stages ... AG stages -> copy out
//   chunk k+1:    copy in -> RS stages ...           AG stages -> copy out
//
// Staging memory is bounded by a budget. When a chunk must come in and the budget is
// full, chunks that have no stage running are written back to their home and brought in
// again when their next stage comes: the staging buffers hold a moving window of chunks.
// The victim is the chunk whose next stage is furthest down its dimension's queue.
//
// Why not windows as separate, smaller collectives: that would change the messages, and
// a peer whose buffers are on the host (or staged with another budget) must see exactly
// the plan it runs itself. Here the plan, its ops and their order are untouched; only
// where this rank keeps its bytes changes. Deadlock freedom: at most K stages run per
// dimension and one op waits at the head of each queue, so (K + 1) x dims chunks are
// all that can ever be pinned at once; the budget is raised to hold the largest that
// many chunks, and every other resident chunk can always be evicted. Copies complete on
// their own, so waiting for them never depends on a peer.
//
// The copies go through an AsyncCopier (CUDA: one stream per direction and events;
// tests: DeferredHostCopier), the staging buffers come from a Memory (CUDA: pinned host
// memory; tests: HostMemory).
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <vector>

#include "engine.h"
#include "plan.h"
#include "transport.h"

namespace themis {

// Asynchronous copies between the data's home and staging buffers.
class AsyncCopier {
  public:
    enum Direction { ToStaging = 0, ToHome = 1 };
    using Fence = uint64_t;
    virtual ~AsyncCopier() = default;
    // Queues a copy. Copies of one direction complete in the order they were queued;
    // the buffers must stay valid until a later fence of that direction has passed.
    virtual void copy(Direction dir, void *dst, const void *src, size_t bytes) = 0;
    // A fence that passes once every copy queued so far in `dir` has completed.
    virtual Fence fence(Direction dir) = 0;
    // True once `fence` has passed; never blocks.
    virtual bool passed(Direction dir, Fence fence) = 0;
    // Blocks until every queued copy has completed.
    virtual void wait_all() = 0;
};

// Host copies that happen only when progress() runs them: the asynchronous behaviour of
// a copy engine (a copy's source is read, and its destination written, at some later
// time), on host memory.
class DeferredHostCopier : public AsyncCopier {
  public:
    void copy(Direction dir, void *dst, const void *src, size_t bytes) override;
    Fence fence(Direction dir) override { return queued_[dir]; }
    bool passed(Direction dir, Fence fence) override { return done_[dir] >= fence; }
    void wait_all() override { progress(std::numeric_limits<size_t>::max()); }

    // Runs up to `max_copies` of the oldest queued copies of each direction.
    size_t progress(size_t max_copies = 1);
    size_t pending() const { return queue_[0].size() + queue_[1].size(); }

  private:
    struct Copy {
        void *dst;
        const void *src;
        size_t bytes;
    };
    std::deque<Copy> queue_[2];
    Fence queued_[2] = {0, 0};
    Fence done_[2] = {0, 0};
};

// Where data lives outside staging: `base` holds the work buffer's byte `origin`, and
// the work offsets [origin, end) are there (copies are clipped to them: a datatype's
// trailing padding, or the blocks of other ranks, are not in every buffer).
struct StagingRegion {
    char *base = nullptr;
    uint64_t origin = 0;
    uint64_t end = std::numeric_limits<uint64_t>::max();
};

struct StagingConfig {
    StagingRegion source; // a chunk's first copy in comes from here
    StagingRegion home;   // evicted chunks go here and come back from here
    StagingRegion result; // a chunk's result goes here after its last stage
    uint64_t budget = 0;  // staging bytes at most (raised to minimum_staging_budget)
    int max_active = 1;   // the engine's K: stages in flight per dimension
};

// A range of the work buffer and where it sits in its chunk's staging buffer.
struct StagedRange {
    uint64_t offset = 0;
    uint64_t length = 0;
    uint64_t slot = 0;
};

// What staging moves of one chunk, derived from the plan alone.
struct ChunkFootprint {
    std::vector<StagedRange> runs;    // every byte of the chunk, coalesced, ascending
    std::vector<StagedRange> initial; // copied in the first time (All-Gather: own piece)
    std::vector<StagedRange> result;  // copied out at the end (Reduce-Scatter: own piece)
    uint64_t bytes = 0;               // size of its staging buffer
};

std::vector<ChunkFootprint> chunk_footprints(const Plan &plan);

// The least budget with which no execution of `plan` can wait forever (see above).
uint64_t minimum_staging_budget(const Plan &plan, const std::vector<ChunkFootprint> &chunks,
                                int max_active);

class Stager : public ChunkHooks {
  public:
    struct Stats {
        uint64_t budget = 0;                // in force: the configured budget or the minimum
        uint64_t peak_bytes = 0;            // most staging bytes held at once
        uint64_t loads = 0, load_bytes = 0; // copies in (first or again)
        uint64_t evictions = 0, eviction_bytes = 0; // write-backs to make room
        uint64_t store_bytes = 0;                   // results copied out
    };

    Stager(Memory &staging, AsyncCopier &copier, const StagingConfig &config);
    ~Stager() override;
    Stager(const Stager &) = delete;
    Stager &operator=(const Stager &) = delete;

    void begin(const Plan &plan) override;
    bool ready(const PlanOp &op) override;
    char *locate(const PlanOp &op, const ByteRange &range) override;
    void stage_done(const PlanOp &op) override;
    void chunk_finished(int chunk) override;

    // Notes completed copies and gives back the staging buffers they freed.
    void progress();
    // Once the execution is complete: waits until every result is in place and every
    // staging buffer is given back.
    void finish();
    // Every chunk's result is in place and no staging buffer is held.
    bool finished() const { return done_ == chunks_.size() && used_ == 0; }

    const Stats &stats() const { return stats_; }
    uint64_t bytes_in_use() const { return used_; }

  private:
    enum class State { Home, Loading, Resident, Evicting, Storing, Done };
    struct Chunk {
        State state = State::Home;
        bool loaded_before = false; // its current data is at home, not at the source
        bool running = false;       // one of its stages is in flight
        bool wanted = false;        // its next stage waits at the head of its queue
        int stages_done = 0;
        char *slot = nullptr;
        AsyncCopier::Fence fence = 0;
    };

    bool admit(int chunk);
    void make_room(uint64_t need, int for_chunk);
    void evict(int chunk);
    void copy_ranges(AsyncCopier::Direction dir, int chunk, const std::vector<StagedRange> &ranges,
                     const StagingRegion &region);
    void release(int chunk);

    Memory &staging_;
    AsyncCopier &copier_;
    StagingConfig config_;
    const Plan *plan_ = nullptr;
    std::vector<ChunkFootprint> footprint_;
    std::vector<Chunk> chunks_;
    std::vector<int> first_op_;     // per chunk: index of its first op
    std::vector<size_t> queue_pos_; // per op: position in its dimension's queue
    std::vector<size_t> started_;   // per dimension: ops started so far
    std::vector<int> moving_;       // chunks with a copy in flight (Loading/Evicting/Storing)
    uint64_t used_ = 0;
    uint64_t freeing_ = 0; // bytes of chunks being evicted or stored
    size_t done_ = 0;
    Stats stats_;
};

} // namespace themis
