// planner: how a collective is cut and run, chosen by predicting its completion.
//
// The ordering simulation (ordering.h) predicts when a plan completes. For one request the
// planner uses it to choose the number of chunks and, on dimensions that allow more than
// one (Dimension::alternatives), the algorithm of each:
//
//   chunks      PlanRequest::chunks > 0 fixes the count; kAutoChunks tries every one of 1,
//               2, 4, ... up to kMaxAutoChunks: more chunks fill the pipeline sooner but pay
//               every stage's latency more often, and past some count K stages fit in
//               max_active_bytes at once, so the prediction falls, rises, and can fall again.
//               Either way no chunk is smaller than min_chunk_bytes or holds no data,
//               but where the floor leaves fewer chunks than dimensions in use, one chunk
//               per dimension is taken if predicted clearly faster (kClearGain) by more
//               than its added stages cost (kStageOverhead): one chunk keeps one dimension
//               busy at a time, whatever its size.
//   algorithms  at the best count, every alternative of one dimension at a time that takes
//               fewer steps (they all move the same bytes), kept when predicted faster; if
//               any was kept, the counts either side are tried again.
//   kept        the choice only where predicted clearly faster (kClearGain) than the most
//               chunks with the dimensions' own algorithms; those otherwise.
//
// Ties take more chunks and keep a dimension's own algorithm. Same inputs, same choice, bit for
// bit, so every rank makes it alone. Both the component (through compile_plan) and
// themis-sim plan through predict_plan().
#pragma once

#include <vector>

#include "ordering.h"
#include "plan.h"
#include "topology.h"

namespace themis {

// The most chunks an auto count picks (settings.h; why: docs/design.md, "Why the
// defaults").
constexpr int kMaxAutoChunks = THEMIS_AUTO_CHUNKS_MAX;

// An auto count's search keeps its choice only when predicted this much faster (a
// fraction) than the most chunks with every dimension's own algorithm (what a fixed
// coll_themis_chunks 128 runs); otherwise it runs those. The model's errors between near
// counts are of this size; where it sees a large gain (a latency-bound network,
// device-direct copies) the gain is real (docs/design.md, "Why the defaults").
constexpr double kClearGain = 0.05;

// What a stage costs the engine beyond the network's latency, in seconds, which the model does
// not see: start, progress and completion on each rank. A 4-byte All-Reduce on 2x2 (4 stages)
// took 21-53 us on 4 ranks of one 2-core machine, so about 5-13 us a stage; charged at twice
// that, as more chunks on one node also share its cores (docs/design.md, "Why the defaults").
constexpr double kStageOverhead = 25e-6;

struct Prediction {
    Topology topology; // the request's network, with the algorithm each dimension runs
    std::vector<ChunkSchedule> schedule;
    Ordering ordering;
};

// The most chunks the request may use: its count (kMaxAutoChunks when auto), but no chunk
// below min_chunk_bytes and none without data; at least 1.
int effective_chunks(const PlanRequest &req);

// The prediction of the request cut into exactly `chunks` on `topo` as it is.
Prediction predict(const Topology &topo, const PlanRequest &req, int chunks);

// The planner's choice for the request, and its prediction.
Prediction predict_plan(const Topology &topo, const PlanRequest &req);

// What the call `p` plans for `req` leaves the next call in flight with it: the carried
// load (scheduler.h carried_load()) of its schedule, in units of its predicted time.
std::vector<double> carried_after(const Prediction &p, const PlanRequest &req);

} // namespace themis
