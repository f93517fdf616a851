// plan: a schedule compiled for one rank, with byte ranges over the work buffer.
//
// Data layout. Every chunk is divided into N pieces, one per rank: the piece a rank
// holds when the chunk's narrowing stages are done (and contributes to its widening
// stages). A stage on dimension d splits the pieces still in play into n_d blocks,
// block j holding the pieces of the ranks whose coordinate d is j:
//
//   narrowing stage (RS): block j = pieces of ranks that match me on the dimensions
//             already narrowed and have coordinate d = j; afterwards my block (j = my
//             coordinate) holds the group's sum.
//   widening stage (AG): block j = pieces of ranks that match me on the dimensions
//             still to be widened (other than d) and have coordinate d = j; before it I
//             hold block (my coordinate), afterwards every block.
//
// Peers of a dimension group see the same blocks, so their stages match whatever
// order the chunk visits the dimensions in, and a rank ends with exactly its own
// pieces:
//   one vector      (All-Reduce) the vector is cut into chunks; inside a
//                   chunk the pieces are laid out in the chunk's narrowing order (first
//                   dimension most significant), so every block is one contiguous range.
//   Reduce-Scatter  piece (chunk k, rank r) = the k-th part of the block MPI assigns to
//   All-Gather      rank r (recvcounts), so rank r ends with exactly its MPI block.
//
// Rooted stages (Bcast, Reduce): a chunk is not cut into pieces; it moves whole along its
// tree (ChunkSchedule::tree), one group cast per stage. A rank has an op for every cast of
// its groups: the source's, each target's (block j is target j's share of the chunk), and
// an idle one for every other peer of the group, which keeps its place in the dimension's
// issue order and its tags, and moves nothing. Ranks outside the group have no op for it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "ordering.h"
#include "scheduler.h"

namespace themis {

struct ByteRange {
    uint64_t offset = 0;
    uint64_t length = 0;
    bool operator==(const ByteRange &o) const { return offset == o.offset && length == o.length; }
};

// PlanRequest::chunks asking the planner (planner.h) to choose the count.
constexpr int kAutoChunks = 0;
// The component's default coll_themis_chunks, and themis-sim's 0, auto (settings.h; why:
// docs/design.md, "Why the defaults").
constexpr int kDefaultChunks = THEMIS_CHUNKS_DEFAULT;

struct PlanRequest {
    Collective collective = Collective::AllReduce;
    uint64_t element_size = 1;
    // One vector (All-Reduce, Bcast, Reduce): {count}. Reduce-Scatter / All-Gather: elements
    // of each rank's block.
    std::vector<uint64_t> block_counts;
    // Reduce-Scatter / All-Gather: where each rank's block starts in the work buffer,
    // in elements; empty means the blocks are packed in rank order.
    std::vector<uint64_t> block_displs;
    // Bcast / Reduce: the root, as a rank of the topology.
    int root = 0;
    // Chunks: 0 (kAutoChunks) lets the planner choose (planner.h); N asks for N. Either
    // way no chunk is smaller than min_chunk_bytes (0: no floor) or holds no data.
    int chunks = kDefaultChunks;
    uint64_t min_chunk_bytes = THEMIS_MIN_CHUNK_BYTES_DEFAULT;
    SchedulerParams scheduler;
    OrderingParams ordering;
    int rank = 0;
    // Per dimension, the load the calls in flight before this one left unbalanced (the
    // previous plan's Plan::carried_load; empty: none): the load tracker starts from it.
    std::vector<double> carried_load;
};

// Every field of a request that shapes its plan, in one list: the plan cache compares and
// hashes requests through it, so no field can be compared and forgotten by the hash.
inline auto plan_request_key(const PlanRequest &r) {
    return std::tie(r.collective, r.element_size, r.block_counts, r.block_displs, r.root, r.chunks,
                    r.min_chunk_bytes, r.scheduler.policy, r.scheduler.load_model,
                    r.scheduler.threshold, r.ordering.intra, r.ordering.max_active,
                    r.ordering.max_active_bytes, r.rank, r.carried_load);
}

// One stage of one chunk on one dimension, as this rank runs it.
struct PlanOp {
    int chunk = 0;
    int stage = 0; // position in the chunk's stage list
    int dim = 0;
    Phase phase = Phase::ReduceScatter;
    int my_block = 0;                  // this rank's coordinate in dim
    int root_block = -1;               // a group cast's source, its coordinate in dim
    std::vector<int> targets;          // a group cast's targets, their coordinates, ascending
    bool idle = false;                 // a group cast this rank sits out
    int previous = -1;                 // index (in Plan::ops) of the chunk's previous stage
    std::vector<ByteRange> ranges;     // the blocks' ranges, block after block
    std::vector<uint32_t> block_begin; // n_d + 1 offsets into ranges

    int num_blocks() const { return static_cast<int>(block_begin.size()) - 1; }
    uint64_t block_bytes(int j) const;
    uint64_t total_bytes() const;
};

struct Plan {
    Collective collective = Collective::AllReduce;
    uint64_t work_bytes = 0;                 // size of the work buffer the ranges refer to
    std::vector<PlanOp> ops;                 // grouped by chunk, stages in order
    std::vector<std::vector<int>> dim_queue; // per dimension: op indices in issue order
    std::vector<ChunkSchedule> schedule;
    std::vector<Algorithm> algorithms; // per dimension: what its stages run (the planner's)
    double predicted_time = 0;         // seconds, from the ordering simulation
    std::vector<double> busy;          // per dimension, seconds
    // What this call leaves a call started right after it (scheduler.h carried_load()).
    std::vector<double> carried_load;

    // One line per chunk: "c0 RS 0,1 AG 1,0" (for verbose output).
    std::string describe() const;
};

// Bytes of every chunk when req is cut into `chunks`, as PieceLayout lays them out.
std::vector<double> chunk_bytes(const PlanRequest &req, int chunks);

// Where every rank's piece of every chunk lies in the work buffer. Computed on demand:
// a rank's plan reads a few pieces per block (two per block of an All-Reduce), not the
// table of all chunks x ranks, which a 1024-rank plan would spend most of its time on.
class PieceLayout {
  public:
    // topo, req and schedule must outlive the layout.
    PieceLayout(const Topology &topo, const PlanRequest &req,
                const std::vector<ChunkSchedule> &schedule);
    ByteRange piece(int chunk, int rank) const;

  private:
    const Topology &topo_;
    const PlanRequest &req_;
    uint64_t chunks_;
    // One vector: each chunk's narrowing order and where its part of the vector lies, cut into
    // pieces of `base` elements, the first `extra` pieces one more; every rank's
    // coordinates (rank x dimension), so that a piece costs no division.
    struct ChunkPart {
        std::vector<int> order; // its narrowing order
        uint64_t start, base, extra;
    };
    std::vector<ChunkPart> parts_;
    std::vector<int> coords_;
    std::vector<uint64_t> displs_; // RS / AG: where each rank's block starts
};

// Every piece: pieces[chunk][rank] (for checks; plans ask PieceLayout for what they need).
std::vector<std::vector<ByteRange>> piece_layout(const Topology &topo, const PlanRequest &req,
                                                 const std::vector<ChunkSchedule> &schedule);

// The planner's choice (planner.h) compiled for req.rank.
Plan compile_plan(const Topology &topo, const PlanRequest &req);

} // namespace themis
