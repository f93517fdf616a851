// scheduler: Splitter, Dim Load Tracker and the baseline / Themis policies.
#include "scheduler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace themis {

const std::vector<CollectiveInfo> &collectives() {
    // One row per collective, in enum order: id, name, phases, one vector, rooted.
    static const std::vector<CollectiveInfo> table = {
        {Collective::AllReduce, "allreduce", {Phase::ReduceScatter, Phase::AllGather}, true, false},
        {Collective::ReduceScatter, "reduce_scatter", {Phase::ReduceScatter}, false, false},
        {Collective::AllGather, "allgather", {Phase::AllGather}, false, false},
        {Collective::Bcast, "bcast", {Phase::Cast}, true, true},
        {Collective::Reduce, "reduce", {Phase::Collect}, true, true},
    };
    return table;
}

const CollectiveInfo &collective_info(Collective c) {
    const size_t i = static_cast<size_t>(c);
    if (i >= collectives().size()) throw std::invalid_argument("unknown collective");
    return collectives()[i];
}

double CollectiveInfo::least_moved(int ranks) const {
    if (rooted) return 1;
    return static_cast<double>(phases.size()) * (ranks - 1) / ranks;
}

const char *collective_name(Collective c) { return collective_info(c).name; }

const char *policy_name(Policy p) { return choice_name(kPolicyChoices, static_cast<int>(p)); }

const char *load_model_name(LoadModel m) {
    return choice_name(kLoadModelChoices, static_cast<int>(m));
}

size_t stage_count(const std::vector<ChunkSchedule> &chunks) {
    size_t n = 0;
    for (const ChunkSchedule &c : chunks) n += c.stages.size();
    return n;
}

std::vector<double> split_bytes(double total, int chunks) {
    if (chunks < 1) chunks = 1;
    double each = total / chunks;
    std::vector<double> out(chunks, each);
    out.back() = total - each * (chunks - 1);
    return out;
}

namespace {

// Per-dimension load, in seconds of predicted work (paper Fig. 6 "Dim Load Tracker").
class DimLoadTracker {
  public:
    DimLoadTracker(const Topology &topo, LoadModel model, const std::vector<double> &carried)
        : topo_(topo), model_(model), load_(topo.num_dims(), 0.0) {
        for (size_t d = 0; d < carried.size() && d < load_.size(); ++d) load_[d] = carried[d];
    }

    double load(int d) const { return load_[d]; }

    // The tracker charges the first phase's stages (a second phase mirrors them).
    void charge(Collective coll, const ChunkSchedule &chunk) {
        const Phase charged = collective_info(coll).phases.front();
        for (const Stage &s : chunk.stages)
            if (s.phase == charged) charge(s.dim, s.phase, s.input_bytes);
    }

    // A stage's bytes at the rate its dimension sustains with its queue busy (its fill
    // curve's highest point; the bandwidth without a curve).
    double stage_cost(int d, Phase phase, double input) const {
        const Dimension &dim = topo_.dim(d);
        double t = stage_bytes_sent(dim, phase, input) / sustained_bandwidth(dim);
        return model_ == LoadModel::Latency ? t + stage_latency(dim, phase) : t;
    }

    void charge(int d, Phase phase, double input) { load_[d] += stage_cost(d, phase, input); }

  private:
    const Topology &topo_;
    LoadModel model_;
    std::vector<double> load_;
};

// Appends stages along `order`, tracking the chunk's size as it shrinks (a narrowing
// phase) or grows (a widening one).
double append_stages(const Topology &topo, Phase phase, const std::vector<int> &order, double input,
                     std::vector<Stage> &out) {
    for (int d : order) {
        out.push_back({d, phase, input});
        input = stage_output_bytes(topo.dim(d), phase, input);
    }
    return input;
}

// Themis's choice of dimension order for one chunk (Algorithm 1, lines 17-27).
std::vector<int> themis_order(const Topology &topo, const DimLoadTracker &tracker,
                              const std::vector<int> &baseline, bool most_loaded_first,
                              double chunk_bytes, double threshold) {
    // Loads equal in exact arithmetic may differ in their last bits: compare them on a
    // grid far coarser than rounding error, so such ties keep the baseline order.
    double most = 0;
    for (int d : baseline) most = std::max(most, tracker.load(d));
    const double grid = most > 0 ? most * 1e-9 : 1;
    auto load = [&](int d) { return std::llround(tracker.load(d) / grid); };
    std::vector<int> sorted = baseline;
    std::stable_sort(sorted.begin(), sorted.end(), [&](int a, int b) {
        return most_loaded_first ? load(a) > load(b) : load(a) < load(b);
    });
    auto [lo, hi] = std::minmax_element(sorted.begin(), sorted.end(),
                                        [&](int a, int b) { return load(a) < load(b); });
    // The load gap as bytes of an RS on the least-loaded dimension.
    const Dimension &least = topo.dim(*lo);
    double gap = tracker.load(*hi) - tracker.load(*lo);
    double gap_bytes = gap * sustained_bandwidth(least) * least.peers / (least.peers - 1);
    if (gap_bytes < chunk_bytes * threshold) return baseline;
    return sorted;
}

// A rooted chunk's stages: one per cast of its tree, wave by wave (a Reduce's backwards).
std::vector<Stage> cast_stages(Phase phase, const CastTree &tree, double bytes) {
    std::vector<int> reached_in; // per rank: the wave after which it holds the chunk
    std::vector<Stage> stages;
    int last = 0;
    for (size_t i = 0; i < tree.size(); ++i) {
        const int source = tree[i].source;
        const int wave = size_t(source) < reached_in.size() ? reached_in[size_t(source)] : 0;
        for (int v : tree[i].targets) {
            if (size_t(v) >= reached_in.size()) reached_in.resize(size_t(v) + 1, 0);
            reached_in[size_t(v)] = wave + 1;
        }
        stages.push_back({tree[i].dim, phase, bytes, static_cast<int>(i), wave});
        last = std::max(last, wave);
    }
    const bool backwards = phase_info(phase).reduces;
    if (backwards) {
        for (Stage &s : stages) s.wave = last - s.wave;
        std::reverse(stages.begin(), stages.end());
    }
    std::stable_sort(stages.begin(), stages.end(),
                     [](const Stage &a, const Stage &b) { return a.wave < b.wave; });
    return stages;
}

} // namespace

std::vector<Stage> chunk_stages(const Topology &topo, Collective coll,
                                const std::vector<int> &order, double bytes) {
    const std::vector<Phase> &phases = collective_info(coll).phases;
    std::vector<Stage> stages;
    stages.reserve(phases.size() * order.size());
    const double input = phase_info(phases.front()).narrows ? bytes : bytes / topo.size();
    const double left = append_stages(topo, phases.front(), order, input, stages);
    if (phases.size() > 1)
        append_stages(topo, phases[1], std::vector<int>(order.rbegin(), order.rend()), left,
                      stages);
    return stages;
}

std::vector<ChunkSchedule> schedule_chunks(const Topology &topo, Collective coll,
                                           const std::vector<double> &chunk_bytes,
                                           const SchedulerParams &params,
                                           const std::vector<double> &carried, int root) {
    const CollectiveInfo &info = collective_info(coll);
    if (info.rooted) {
        std::vector<CastTree> trees = pack_broadcast_trees(topo, root, chunk_bytes);
        std::vector<ChunkSchedule> out(chunk_bytes.size());
        for (size_t k = 0; k < out.size(); ++k) {
            out[k].bytes = chunk_bytes[k];
            out[k].stages = cast_stages(info.phases.front(), trees[k], chunk_bytes[k]);
            out[k].tree = std::move(trees[k]);
        }
        return out;
    }
    const std::vector<int> ascending = topo.active_dims();
    const std::vector<int> descending(ascending.rbegin(), ascending.rend());
    DimLoadTracker tracker(topo, params.load_model, carried);

    std::vector<ChunkSchedule> out;
    out.reserve(chunk_bytes.size());
    for (double bytes : chunk_bytes) {
        ChunkSchedule chunk;
        chunk.bytes = bytes;
        const bool themis = params.policy == Policy::Themis && !ascending.empty();
        // A first phase that widens (a standalone AG) goes most loaded first; one that
        // narrows least loaded first.
        const bool gather = !phase_info(collective_info(coll).phases.front()).narrows;
        const std::vector<int> &baseline = gather ? descending : ascending;
        const std::vector<int> order =
            themis ? themis_order(topo, tracker, baseline, gather, bytes, params.threshold)
                   : baseline;
        chunk.stages = chunk_stages(topo, coll, order, bytes);
        tracker.charge(coll, chunk);
        out.push_back(std::move(chunk));
    }
    return out;
}

std::vector<double> carried_load(const Topology &topo, Collective coll,
                                 const std::vector<ChunkSchedule> &schedule,
                                 const SchedulerParams &params, const std::vector<double> &carried,
                                 double unit) {
    std::vector<double> out(topo.num_dims(), 0.0);
    const std::vector<int> active = topo.active_dims();
    if (active.empty() || !(unit > 0) || collective_info(coll).rooted) return out;
    DimLoadTracker tracker(topo, params.load_model, carried);
    for (const ChunkSchedule &chunk : schedule) tracker.charge(coll, chunk);
    double least = tracker.load(active[0]);
    for (int d : active) least = std::min(least, tracker.load(d));
    const double grid = unit / 64;
    for (int d : active)
        out[d] = std::min(std::round((tracker.load(d) - least) / grid), 8.0) * grid;
    return out;
}

std::vector<int> narrowing_order(const ChunkSchedule &c) {
    std::vector<int> o;
    for (const Stage &s : c.stages)
        if (phase_info(s.phase).narrows) o.push_back(s.dim);
    return o;
}

std::vector<int> widening_order(const ChunkSchedule &c) {
    std::vector<int> o;
    for (const Stage &s : c.stages)
        if (!phase_info(s.phase).narrows) o.push_back(s.dim);
    return o;
}

} // namespace themis
