// ordering: a deterministic event simulation of a schedule (paper Sec. 4.3 and 4.6).
//
// Every dimension keeps a queue of ready stages; a chunk's next stage becomes ready
// when its previous stage completes. Up to K stages run at once per dimension: the
// running stages share the dimension's bandwidth equally, while each pays its own
// fixed delay (steps x latency, not shared) before it starts moving bytes. m stages moving
// bytes at once deliver together the fraction of the bandwidth the dimension's fill curve
// gives for m (cost_model.h; all of it without a curve). With a byte
// bound, a stage starts on a busy dimension only if its bytes fit under the bound with
// those of the stages running there, as the engine does (engine.h): otherwise the
// dimension waits for running stages to finish rather than start another stage out of
// order.
//
//   FIFO  the stage that became ready first starts first
//   SCF   Smallest Chunk First: the ready stage with the smallest larger side
//         (max of input and output bytes) starts first; ties go to the oldest
//   SCF_NEWEST  the same, ties to the newest, as the paper's reference code: it leaves
//         chunk 0, the first to become ready, for last, a tail of one whole stage (kept
//         to reproduce the paper's numbers; docs/design.md, "Why the defaults")
//
// The order in which each dimension starts its stages is the plan's issue order: at
// run time every rank issues a dimension's stages strictly in that order, which keeps
// all ranks of a dimension group in step whatever the timing (paper Sec. 4.6).
// Same inputs, same result, bit for bit.
#pragma once

#include <vector>

#include "scheduler.h"

namespace themis {

enum class IntraPolicy {
    Fifo = THEMIS_INTRA_FIFO,
    Scf = THEMIS_INTRA_SCF,
    ScfNewest = THEMIS_INTRA_SCF_NEWEST
};

const char *intra_policy_name(IntraPolicy p);

struct OrderingParams {
    IntraPolicy intra = static_cast<IntraPolicy>(THEMIS_INTRA_DEFAULT);
    int max_active = THEMIS_MAX_ACTIVE_DEFAULT; // K: stages running at once per dimension
    // Bytes (each stage's larger side) running at once per dimension; 0: no bound. A
    // stage larger than the bound still runs, alone.
    double max_active_bytes = THEMIS_MAX_ACTIVE_BYTES_DEFAULT;
};

struct StageRef {
    int chunk = 0;
    int stage = 0; // index into ChunkSchedule::stages
    bool operator==(const StageRef &o) const { return chunk == o.chunk && stage == o.stage; }
};

struct StageRun {
    StageRef ref;
    int dim = 0;
    double ready = 0, start = 0, end = 0;
};

struct Ordering {
    std::vector<std::vector<StageRef>> dim_order; // per dimension, in start order
    std::vector<StageRun> runs;                   // every stage, in start order
    double makespan = 0;                          // predicted completion time, seconds
    std::vector<double> busy;                     // per dimension: time with a stage running
};

Ordering simulate_schedule(const Topology &topo, const std::vector<ChunkSchedule> &chunks,
                           const OrderingParams &params);

// The same simulation with each dimension starting exactly the stages of dim_order[d], in
// that order (the engine's rule: a stage not yet ready holds back those behind it), instead
// of the policy's choice; params.intra is not used. A stage ordered before its chunk's
// previous stage on the same dimension never starts: the makespan is then infinite.
Ordering replay_schedule(const Topology &topo, const std::vector<ChunkSchedule> &chunks,
                         const std::vector<std::vector<StageRef>> &dim_order,
                         const OrderingParams &params);

// How collectives in flight together share a dimension's slots (see engine.h):
//   InOrder   every stage of an earlier call before any stage of a later one
//   FillIdle  a later call may start its next stage while the earlier calls' next stages
//             wait for their chunks' previous stages, in a slot and bytes the oldest call
//             does not need (it always has one slot and its own byte bound)
enum class CrossCall { InOrder, FillIdle };

struct ReplayCall {
    const std::vector<ChunkSchedule> *chunks;
    const std::vector<std::vector<StageRef>> *dim_order;
    // The algorithms its plan chose (the planner may choose others per call); null: the
    // replay's topology. Peers and bandwidths must be the replay's.
    const Topology *topology = nullptr;
};

// Several collectives started together, each issuing its own dim_order (as the engine runs
// the plans of nonblocking calls in flight); runs' chunk numbers count across the calls.
Ordering replay_calls(const Topology &topo, const std::vector<ReplayCall> &calls,
                      const OrderingParams &params, CrossCall rule);

// T_ideal of the paper: every rank must move 2S(1-1/N) bytes for an All-Reduce (S(1-1/N)
// for RS or AG alone: CollectiveInfo::least_moved) over the sum of its dimensions'
// bandwidths. Bcast and Reduce: S over the most a broadcast can deliver
// (Topology::broadcast_rate), which is that sum where no slow dimension cuts the network.
double ideal_time(const Topology &topo, Collective coll, double bytes);

} // namespace themis
