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
// Other collectives follow their description (CollectiveInfo): a first phase that
// narrows goes like RS, one that widens like a standalone AG, and a second phase runs
// the first one's order reversed. A rooted collective's chunks each follow a broadcast
// tree packed by the links' loads instead (tree_packing.h): one stage per group cast.
//
// Dimensions with a single peer take no stage. The result depends only on the
// arguments, so every rank computes the same schedule.
#pragma once

#include <cstdint>
#include <vector>

#include "cost_model.h"
#include "settings.h"
#include "topology.h"
#include "tree_packing.h"

namespace themis {

enum class Collective { AllReduce, ReduceScatter, AllGather, Bcast, Reduce };

// A collective is a description: the phases (cost_model.h) each of its chunks goes
// through, one row per collective (scheduler.cpp). Everything the core asks of a
// collective (its stages, the tracker's charges, the pieces' layout, the ideal bound)
// follows from these.
//   phases      a chunk's phases in order: the first visits the chunk's dimension order,
//               a second visits it reversed (All-Reduce: RS then AG)
//   one_vector  every rank's buffer is the whole vector, cut into chunks and each chunk
//               into one piece per rank (All-Reduce, Bcast, Reduce); otherwise each rank
//               brings, or keeps, only its own block (Reduce-Scatter, All-Gather)
//   rooted      one rank, the root, alone holds the input (Bcast) or the result (Reduce);
//               its one phase is a tree's group casts
//
//   collective      phases        every rank moves, at the least (ideal_time)
//   All-Reduce      RS, AG        2 S (N-1)/N
//   Reduce-Scatter  RS            S (N-1)/N
//   All-Gather      AG            S (N-1)/N
//   Bcast           Cast          S: every rank but the root receives all of it
//   Reduce          Collect       S: every rank but the root sends all of it
struct CollectiveInfo {
    Collective id;
    const char *name;
    std::vector<Phase> phases;
    bool one_vector, rooted;
    // The share of the buffer's S bytes the busiest rank moves over its links, on N ranks.
    double least_moved(int ranks) const;
};
// Every row, in enum order (its names are the collectives' names everywhere: themis-sim's
// options, the component's messages).
const std::vector<CollectiveInfo> &collectives();
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
    // A rooted stage: its cast in ChunkSchedule::tree, and its wave: the casts of one wave
    // wait only for those of earlier waves (a Bcast's: how many casts the chunk took to
    // reach the source; a Reduce's: counted back from the tree's last).
    int cast = -1;
    int wave = 0;
};

struct ChunkSchedule {
    // The chunk's size: for a one-vector collective its share of the vector, for RS its
    // input summed over all ranks' blocks, for AG its output summed over all ranks.
    double bytes = 0;
    std::vector<Stage> stages; // in execution order: the first phase's, then the second's
    CastTree tree;             // a rooted collective's: the chunk's broadcast tree
};

// Every chunk's stages together.
size_t stage_count(const std::vector<ChunkSchedule> &chunks);

// Splitter: `chunks` pieces of total/chunks bytes, the last taking the remainder.
std::vector<double> split_bytes(double total, int chunks);

// The stages of a chunk of `bytes` (as ChunkSchedule::bytes) that takes `order`: the order
// of its first phase (a second phase runs it backwards); a first phase that widens starts
// from this rank's 1/N share.
std::vector<Stage> chunk_stages(const Topology &topo, Collective coll,
                                const std::vector<int> &order, double bytes);

// carried: per dimension, load the tracker starts from (empty: none): what calls in
// flight before this one left unbalanced (carried_load()). root: a rooted collective's.
std::vector<ChunkSchedule> schedule_chunks(const Topology &topo, Collective coll,
                                           const std::vector<double> &chunk_bytes,
                                           const SchedulerParams &params,
                                           const std::vector<double> &carried = {}, int root = 0);

// The tracker's loads after `schedule`, from `carried`, less the least loaded active
// dimension's: the imbalance a call leaves to the next one in flight with it. Rounded to
// unit / 64 and at most unit / 8 (unit: the call's predicted time), so that a stream of
// calls comes back to the same few values (and the plan cache hits) instead of carrying a
// load that grows call after call where the tracker cannot even it out. A rooted
// collective's trees leave none (they balance ranks' links, not dimensions).
std::vector<double> carried_load(const Topology &topo, Collective coll,
                                 const std::vector<ChunkSchedule> &schedule,
                                 const SchedulerParams &params, const std::vector<double> &carried,
                                 double unit);

// The dimension orders of one chunk: the order its narrowing stages (RS, Scatter) visit,
// and the order its widening ones (AG, Gather) visit.
std::vector<int> narrowing_order(const ChunkSchedule &c);
std::vector<int> widening_order(const ChunkSchedule &c);

} // namespace themis
