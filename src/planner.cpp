// planner: chunk count and per-dimension algorithms by prediction (see planner.h).
#include "planner.h"

#include <algorithm>

namespace themis {

namespace {

Topology with_algorithm(const Topology &topo, int d, Algorithm a) {
    std::vector<Dimension> dims = topo.dims();
    dims[d].algorithm = a;
    return Topology(dims);
}

// Predictions this near (a fraction) are ties that differ by rounding (the sums of more,
// smaller stages).
constexpr double kMargin = 1e-9;

// The best so far. A tie goes to more chunks: what the model does not see (a stage waiting
// for its peers to be scheduled, a link one stage fills only partly where the measured curve
// read full) is ridden out by more stages in flight (docs/design.md, "Why the defaults"). At one
// count a tie keeps the dimension's own algorithm (the first tried).
struct Best {
    Prediction prediction;
    int chunks = 0;

    bool improve(Prediction &&p, int c) {
        if (chunks) {
            const double best = prediction.ordering.makespan, t = p.ordering.makespan;
            const bool faster = t < best * (1 - kMargin);
            const bool tie_with_more = c > chunks && t <= best * (1 + kMargin);
            if (!faster && !tie_with_more) return false;
        }
        prediction = std::move(p);
        chunks = c;
        return true;
    }
};

// The next candidate count after c: twice as many, the limit last.
int next_count(int c, int limit) { return c * 2 > limit ? limit : c * 2; }

// Every power of two from 1 to the limit, and the limit. No early stop: the prediction
// can plateau and rise before it falls far below (with coll_themis_max_active_bytes, large
// stages run one at a time on a link one stage cannot fill; past some count K of them fit).
// At most 8 counts.
// `at_limit`: the limit's prediction.
Best search_chunks(const Topology &topo, const PlanRequest &req, int limit, Prediction &at_limit) {
    Best best;
    for (int c = 1;; c = next_count(c, limit)) {
        Prediction p = predict(topo, req, c);
        if (c == limit) at_limit = p;
        best.improve(std::move(p), c);
        if (c == limit) break;
    }
    return best;
}

// After the algorithms changed: the counts either side of the best.
void search_neighbours(const PlanRequest &req, int limit, Best &best) {
    const Topology topo = best.prediction.topology;
    const int c = best.chunks;
    if (c > 1) best.improve(predict(topo, req, c / 2), c / 2);
    if (c < limit) best.improve(predict(topo, req, next_count(c, limit)), next_count(c, limit));
}

// One dimension at a time, each algorithm it may run at the best count; true if one was kept.
bool search_algorithms(const PlanRequest &req, Best &best) {
    bool changed = false;
    if (collective_info(req.collective).rooted) return false; // group casts whatever they are
    const int chunks = best.chunks;
    for (int d = 0; d < best.prediction.topology.num_dims(); ++d) {
        const Dimension own = best.prediction.topology.dim(d);
        for (const AlgorithmInfo &row : algorithms()) {
            const Algorithm a = row.id;
            if (a == own.algorithm || !may_run(own, a)) continue;
            Topology t = with_algorithm(best.prediction.topology, d, a);
            // The algorithms move the same bytes and differ only in their steps: one with
            // as long a fixed delay cannot be faster.
            if (stage_latency(t.dim(d), Phase::ReduceScatter) >=
                stage_latency(own, Phase::ReduceScatter))
                continue;
            if (best.improve(predict(t, req, chunks), chunks)) changed = true;
        }
    }
    return changed;
}

} // namespace

int effective_chunks(const PlanRequest &req) {
    uint64_t most = 0, total = 0;
    for (uint64_t c : req.block_counts) {
        most = std::max(most, c);
        total += c;
    }
    if (req.min_chunk_bytes > 0)
        most = std::min(most, total * req.element_size / req.min_chunk_bytes);
    const int asked = req.chunks == kAutoChunks ? kMaxAutoChunks : req.chunks;
    const uint64_t requested = static_cast<uint64_t>(std::max(1, asked));
    return static_cast<int>(std::max<uint64_t>(1, std::min(requested, most)));
}

Prediction predict(const Topology &topo, const PlanRequest &req, int chunks) {
    Prediction p;
    p.topology = topo;
    p.schedule = schedule_chunks(topo, req.collective, chunk_bytes(req, chunks), req.scheduler,
                                 req.carried_load, req.root);
    p.ordering = simulate_schedule(topo, p.schedule, req.ordering);
    return p;
}

namespace {

// The floor's choice, or one chunk per dimension in use where the floor allows fewer, that is
// predicted clearly faster (kClearGain) and saves more than its added stages cost the engine
// (kStageOverhead each): one chunk keeps one dimension busy at a time.
Prediction spread_over_dims(const Topology &topo, const PlanRequest &req, int limit,
                            Prediction &&chosen) {
    PlanRequest unfloored = req;
    unfloored.min_chunk_bytes = 0;
    const int per_dim =
        std::min(static_cast<int>(topo.active_dims().size()), effective_chunks(unfloored));
    if (per_dim <= limit) return std::move(chosen);
    Prediction spread = predict(chosen.topology, req, per_dim);
    const double before = chosen.ordering.makespan, after = spread.ordering.makespan;
    const double added =
        (double(stage_count(spread.schedule)) - double(stage_count(chosen.schedule))) *
        kStageOverhead;
    if (after < before * (1 - kClearGain) && before - after > added) return spread;
    return std::move(chosen);
}

Prediction choose_under_floor(const Topology &topo, const PlanRequest &req, int limit) {
    if (req.chunks != kAutoChunks) {
        Best best;
        best.improve(predict(topo, req, limit), limit);
        search_algorithms(req, best);
        return std::move(best.prediction);
    }
    Prediction most_chunks;
    Best best = search_chunks(topo, req, limit, most_chunks);
    if (search_algorithms(req, best)) search_neighbours(req, limit, best);
    if (best.prediction.ordering.makespan < most_chunks.ordering.makespan * (1 - kClearGain))
        return std::move(best.prediction);
    return most_chunks;
}

} // namespace

Prediction predict_plan(const Topology &topo, const PlanRequest &req) {
    const int limit = effective_chunks(req);
    return spread_over_dims(topo, req, limit, choose_under_floor(topo, req, limit));
}

std::vector<double> carried_after(const Prediction &p, const PlanRequest &req) {
    return carried_load(p.topology, req.collective, p.schedule, req.scheduler, req.carried_load,
                        p.ordering.makespan);
}

} // namespace themis
