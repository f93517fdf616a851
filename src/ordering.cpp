// ordering: deterministic event simulation of a schedule (see ordering.h).
#include "ordering.h"

#include <algorithm>
#include <limits>

namespace themis {

const char *intra_policy_name(IntraPolicy p) {
    switch (p) {
    case IntraPolicy::Fifo: return "fifo";
    case IntraPolicy::Scf: return "scf";
    case IntraPolicy::ScfNewest: return "scf_newest";
    }
    return "?";
}

namespace {

struct Ready {
    StageRef ref;
    long seq;     // arrival order
    double key;   // SCF key: the stage's larger side
    double ready; // when it became ready
};

// Heap order of a dimension's ready stages: true if `a` is served after `b`.
struct ServedAfter {
    IntraPolicy policy;
    bool operator()(const Ready &a, const Ready &b) const {
        if (policy != IntraPolicy::Fifo && a.key != b.key) return a.key > b.key;
        return policy == IntraPolicy::ScfNewest ? a.seq < b.seq : a.seq > b.seq;
    }
};

struct Running {
    size_t run; // index into Ordering::runs
    double latency_left;
    double bytes_left;
    double size; // the stage's larger side, counted against the byte bound
};

class Simulation {
  public:
    Simulation(const Topology &topo, const std::vector<ChunkSchedule> &chunks,
               const OrderingParams &params)
        : topo_(topo), chunks_(chunks), params_(params), served_after_{params.intra},
          queue_(topo.num_dims()), running_(topo.num_dims()) {
        out_.dim_order.resize(topo.num_dims());
        size_t stages = 0;
        for (const ChunkSchedule &c : chunks) stages += c.stages.size();
        out_.runs.reserve(stages);
        out_.busy.assign(topo.num_dims(), 0.0);
    }

    Ordering run() {
        for (int c = 0; c < static_cast<int>(chunks_.size()); ++c)
            if (!chunks_[c].stages.empty()) make_ready({c, 0});
        start_ready();
        while (any_running()) advance();
        out_.makespan = now_;
        return std::move(out_);
    }

  private:
    const Stage &stage(StageRef r) const { return chunks_[r.chunk].stages[r.stage]; }

    void make_ready(StageRef r) {
        const Stage &s = stage(r);
        double key =
            std::max(s.input_bytes, stage_output_bytes(topo_.dim(s.dim), s.phase, s.input_bytes));
        auto &q = queue_[s.dim];
        q.push_back({r, next_seq_++, key, now_});
        std::push_heap(q.begin(), q.end(), served_after_);
    }

    // Whether a stage of `size` bytes may start on dimension d now (see the byte bound).
    // Summed afresh (at most K terms): a running total would carry rounding residue.
    bool fits(int d, double size) const {
        if (params_.max_active_bytes <= 0) return true;
        double running = 0;
        for (const auto &r : running_[d]) running += r.size;
        return running_[d].empty() || running + size <= params_.max_active_bytes;
    }

    void start_ready() {
        for (int d = 0; d < topo_.num_dims(); ++d) {
            auto &q = queue_[d];
            while (!q.empty() && static_cast<int>(running_[d].size()) < params_.max_active) {
                // The policy's next stage is next in the dimension's order: if it does not
                // fit, nothing starts before it.
                if (!fits(d, q.front().key)) break;
                std::pop_heap(q.begin(), q.end(), served_after_);
                const Ready r = q.back();
                q.pop_back();
                const Stage &s = stage(r.ref);
                const Dimension &dim = topo_.dim(d);
                // Recorded as they start: runs come out in start order.
                const size_t run = out_.runs.size();
                out_.runs.push_back({r.ref, d, r.ready, now_, 0});
                out_.dim_order[d].push_back(r.ref);
                running_[d].push_back({run, stage_latency(dim),
                                       stage_bytes_sent(dim, s.phase, s.input_bytes), r.key});
            }
        }
    }

    bool any_running() const {
        for (const auto &r : running_)
            if (!r.empty()) return true;
        return false;
    }

    // Bandwidth share of each stage moving bytes on dimension d.
    double rate(int d) const {
        int moving = 0;
        for (const auto &r : running_[d])
            if (r.latency_left <= 0) ++moving;
        return moving ? topo_.dim(d).bandwidth / moving : 0;
    }

    static double time_left(const Running &r, double rate) {
        return r.latency_left > 0 ? r.latency_left : r.bytes_left / rate;
    }

    // Moves time to the next event (a stage finishing its fixed delay or its bytes),
    // completes what finished and starts what the queues allow.
    void advance() {
        const int nd = topo_.num_dims();
        std::vector<double> &rates = rates_;
        rates.resize(nd);
        double dt = std::numeric_limits<double>::infinity();
        for (int d = 0; d < nd; ++d) {
            rates[d] = rate(d);
            for (const auto &r : running_[d]) dt = std::min(dt, time_left(r, rates[d]));
        }
        std::vector<StageRef> &finished = finished_;
        finished.clear();
        for (int d = 0; d < nd; ++d) {
            auto &running = running_[d];
            if (!running.empty()) out_.busy[d] += dt;
            for (auto &r : running) {
                // The stages that define dt land exactly on zero, never a rounding residue.
                bool at_event = time_left(r, rates[d]) <= dt;
                if (r.latency_left > 0)
                    r.latency_left = at_event ? 0 : r.latency_left - dt;
                else
                    r.bytes_left = at_event ? 0 : r.bytes_left - dt * rates[d];
            }
            for (size_t i = 0; i < running.size();) {
                if (running[i].latency_left <= 0 && running[i].bytes_left <= 0) {
                    out_.runs[running[i].run].end = now_ + dt;
                    finished.push_back(out_.runs[running[i].run].ref);
                    running.erase(running.begin() + static_cast<long>(i));
                } else {
                    ++i;
                }
            }
        }
        now_ += dt;
        for (StageRef f : finished)
            if (f.stage + 1 < static_cast<int>(chunks_[f.chunk].stages.size()))
                make_ready({f.chunk, f.stage + 1});
        start_ready();
    }

    const Topology &topo_;
    const std::vector<ChunkSchedule> &chunks_;
    OrderingParams params_;
    ServedAfter served_after_;
    std::vector<std::vector<Ready>> queue_; // per dimension: a heap, next served first
    std::vector<std::vector<Running>> running_;
    Ordering out_;
    // Scratch of advance(), kept between events (the planner runs many simulations).
    std::vector<double> rates_;
    std::vector<StageRef> finished_;
    double now_ = 0;
    long next_seq_ = 0;
};

} // namespace

Ordering simulate_schedule(const Topology &topo, const std::vector<ChunkSchedule> &chunks,
                           const OrderingParams &params) {
    OrderingParams p = params;
    p.max_active = std::max(1, p.max_active);
    return Simulation(topo, chunks, p).run();
}

double ideal_time(const Topology &topo, Collective coll, double bytes) {
    double n = topo.size();
    double phases = coll == Collective::AllReduce ? 2 : 1;
    double bw = topo.total_bandwidth();
    return bw > 0 ? phases * bytes * (1 - 1 / n) / bw : 0;
}

} // namespace themis
