// scheduler: the Themis paper's Splitter, Dim Load Tracker and chunk scheduler
// (Algorithm 1), and the fixed hierarchical baseline it is compared with.
//
// A collective of S bytes is split into chunks. Every chunk gets its own order of
// dimensions for its Reduce-Scatter (RS) stages and All-Gather (AG) stages:
//
//   baseline  RS on dim 0, 1, ..., D-1, then AG on D-1, ..., 0 (standalone RS:
//             ascending; standalone AG: descending)
//   themis    greedily, least-loaded dimension first, from a per-dimension load
//             tracker fed by the load model; when the loads are within a threshold of
//             each other the chunk takes the baseline order (so the first chunk
//             always does). For All-Reduce the AG order is the reverse of the RS order.
//
// Dimensions with a single peer take no stage. The result depends only on the
// arguments, so every rank computes the same schedule.
#pragma once

#include <cstdint>
#include <vector>

#include "cost_model.h"
#include "settings.h"
#include "topology.h"

namespace themis {

enum class Collective { AllReduce, ReduceScatter, AllGather };

// What a collective is made of, one row per collective (scheduler.cpp): everything the
// core asks of a collective follows from these.
//   reduces   its chunks pass Reduce-Scatter stages (the tracker charges those); without,
//             each rank brings only its own block (All-Gather)
//   gathers   its chunks pass All-Gather stages; without, each rank keeps only its own
//             block (Reduce-Scatter)
// Both: All-Reduce, one vector cut into chunks, the AG stages the RS ones reversed.
struct CollectiveInfo {
    Collective id;
    const char *name;
    bool reduces, gathers;
    bool one_vector() const { return reduces && gathers; }
    int phases() const { return int(reduces) + int(gathers); }
};
const CollectiveInfo &collective_info(Collective c);
enum class Policy { Baseline = THEMIS_POLICY_BASELINE, Themis = THEMIS_POLICY_THEMIS };
// What the Dim Load Tracker charges for a stage placed on a dimension:
//   reference  bandwidth time only, All-Reduce charged as its RS half (the paper's
//              reference implementation)
//   latency    bandwidth time plus the stage's fixed delay (steps x step latency,
//              paper Sec. 4.4), paid by every chunk stage
enum class LoadModel { Reference = THEMIS_LOAD_REFERENCE, Latency = THEMIS_LOAD_LATENCY };

const char *collective_name(Collective c);
const char *policy_name(Policy p);
const char *load_model_name(LoadModel m);

struct SchedulerParams {
    Policy policy = static_cast<Policy>(THEMIS_POLICY_DEFAULT);
    LoadModel load_model = static_cast<LoadModel>(THEMIS_LOAD_DEFAULT);
    // A chunk takes the baseline order when the load gap, expressed as bytes of an RS
    // on the least-loaded dimension, is below chunk size x threshold.
    double threshold = THEMIS_THRESHOLD_DEFAULT;
};

struct Stage {
    int dim = 0;
    Phase phase = Phase::ReduceScatter;
    double input_bytes = 0; // this rank's bytes of the chunk entering the stage
};

struct ChunkSchedule {
    // The chunk's size: for All-Reduce its share of the vector, for RS its input
    // summed over all ranks' blocks, for AG its output summed over all ranks.
    double bytes = 0;
    std::vector<Stage> stages; // in execution order: RS stages, then AG stages
};

// Splitter: `chunks` pieces of total/chunks bytes, the last taking the remainder.
std::vector<double> split_bytes(double total, int chunks);

// The stages of a chunk of `bytes` (as ChunkSchedule::bytes) that takes `order`: its RS
// order (an All-Reduce's AG stages run it backwards), or a standalone AG's gather order,
// from this rank's 1/N share.
std::vector<Stage> chunk_stages(const Topology &topo, Collective coll,
                                const std::vector<int> &order, double bytes);

// carried: per dimension, load the tracker starts from (empty: none): what calls in
// flight before this one left unbalanced (carried_load()).
std::vector<ChunkSchedule> schedule_chunks(const Topology &topo, Collective coll,
                                           const std::vector<double> &chunk_bytes,
                                           const SchedulerParams &params,
                                           const std::vector<double> &carried = {});

// The tracker's loads after `schedule`, from `carried`, less the least loaded active
// dimension's: the imbalance a call leaves to the next one in flight with it. Rounded to
// unit / 64 and at most unit / 8 (unit: the call's predicted time), so that a stream of
// calls comes back to the same few values (and the plan cache hits) instead of carrying a
// load that grows call after call where the tracker cannot even it out.
std::vector<double> carried_load(const Topology &topo, Collective coll,
                                 const std::vector<ChunkSchedule> &schedule,
                                 const SchedulerParams &params, const std::vector<double> &carried,
                                 double unit);

// The dimension orders of one chunk (the order its RS stages, and its AG stages, visit).
std::vector<int> rs_order(const ChunkSchedule &c);
std::vector<int> ag_order(const ChunkSchedule &c);

} // namespace themis
