// ordering: deterministic event simulation of a schedule (see ordering.h).
#include "ordering.h"

#include <algorithm>
#include <limits>
#include <tuple>

namespace themis {

const char *intra_policy_name(IntraPolicy p) {
    return choice_name(kIntraChoices, static_cast<int>(p));
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

// One collective of a replay: its chunks' range and each dimension's issue order.
struct CallOrder {
    const Topology *topology = nullptr; // its dimensions' algorithms; null: the replay's
    int first_chunk = 0, end_chunk = 0;
    std::vector<std::vector<StageRef>> dim_order; // chunk refs into the joined chunks
    std::vector<size_t> position;                 // per dimension: next in dim_order
    size_t left = 0;                              // stages not yet finished
};

class Simulation {
  public:
    // Without calls the policy chooses; with them, every dimension starts exactly the
    // stages of each call's order, calls sharing it as `rule` says (the engine's queues).
    Simulation(const Topology &topo, const std::vector<ChunkSchedule> &chunks,
               const OrderingParams &params, std::vector<CallOrder> calls = {},
               CrossCall rule = CrossCall::InOrder)
        : topo_(topo), chunks_(chunks), params_(params), served_after_{params.intra},
          calls_(std::move(calls)), rule_(rule), queue_(topo.num_dims()),
          running_(topo.num_dims()) {
        if (!calls_.empty()) {
            ready_stage_.assign(chunks_.size(), -1);
            ready_at_.assign(chunks_.size(), 0.0);
            call_of_.assign(chunks_.size(), 0);
            for (size_t c = 0; c < calls_.size(); ++c) {
                for (int k = calls_[c].first_chunk; k < calls_[c].end_chunk; ++k)
                    call_of_[k] = int(c);
                calls_[c].position.assign(topo.num_dims(), 0);
            }
        }
        out_.dim_order.resize(topo.num_dims());
        out_.runs.reserve(stage_count(chunks_));
        out_.busy.assign(topo.num_dims(), 0.0);
    }

    Ordering run() {
        for (int c = 0; c < static_cast<int>(chunks_.size()); ++c)
            if (!chunks_[c].stages.empty()) make_ready({c, 0});
        start_ready();
        while (any_running()) advance();
        out_.makespan = now_;
        for (const CallOrder &call : calls_)
            for (int d = 0; d < topo_.num_dims(); ++d)
                if (call.position[d] < call.dim_order[d].size()) // queued before its predecessor
                    out_.makespan = std::numeric_limits<double>::infinity();
        return std::move(out_);
    }

  private:
    const Stage &stage(StageRef r) const { return chunks_[r.chunk].stages[r.stage]; }

    // The stage's larger side: SCF's key and what counts against the byte bound.
    double size(StageRef r) const {
        const Stage &s = stage(r);
        return std::max(s.input_bytes,
                        stage_output_bytes(topo_.dim(s.dim), s.phase, s.input_bytes));
    }

    void make_ready(StageRef r) {
        if (!calls_.empty()) {
            ready_stage_[r.chunk] = r.stage;
            ready_at_[r.chunk] = now_;
            return;
        }
        auto &q = queue_[stage(r).dim];
        q.push_back({r, next_seq_++, size(r), now_});
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
        for (int d = 0; d < topo_.num_dims(); ++d)
            if (!calls_.empty())
                start_in_order(d);
            else
                start_by_policy(d);
    }

    void start_by_policy(int d) {
        auto &q = queue_[d];
        while (!q.empty() && static_cast<int>(running_[d].size()) < params_.max_active) {
            // The policy's next stage is next in the dimension's order: if it does not
            // fit, nothing starts before it.
            if (!fits(d, q.front().key)) break;
            std::pop_heap(q.begin(), q.end(), served_after_);
            const Ready r = q.back();
            q.pop_back();
            start(d, r.ref, r.ready, r.key);
        }
    }

    // The engine's rule: each call's next stage on d starts once it is ready, a slot is free
    // and it fits; until then it holds back the stages behind it, and (InOrder) the later
    // calls' too. FillIdle lets a later call start a stage while the earlier ones wait for
    // their chunks, in a slot and bytes the oldest call in flight does not need.
    void start_in_order(int d) {
        size_t oldest = 0;
        while (oldest < calls_.size() && calls_[oldest].left == 0) ++oldest;
        for (size_t c = oldest; c < calls_.size(); ++c) {
            CallOrder &call = calls_[c];
            const auto &order = call.dim_order[d];
            size_t &next = call.position[d];
            while (next < order.size()) {
                const StageRef r = order[next];
                if (ready_stage_[r.chunk] != r.stage) {
                    if (rule_ == CrossCall::InOrder) return;
                    break; // FillIdle: the next call may use the dimension meanwhile
                }
                if (!may_start(d, c, oldest, size(r))) return;
                ready_stage_[r.chunk] = -1;
                start(d, r, ready_at_[r.chunk], size(r));
                ++next;
            }
        }
    }

    // The engine's slots and byte bound (engine.h): under FillIdle a later call leaves the
    // oldest one slot, and the oldest counts only its own stages against the bound.
    bool may_start(int d, size_t call, size_t oldest, double bytes) const {
        const int running = static_cast<int>(running_[d].size());
        if (rule_ == CrossCall::InOrder) return running < params_.max_active && fits(d, bytes);
        if (call != oldest) return running < params_.max_active - 1 && fits(d, bytes);
        if (running >= params_.max_active) return false;
        double own = 0;
        bool any = false;
        for (const auto &r : running_[d])
            if (call_of_[out_.runs[r.run].ref.chunk] == static_cast<int>(oldest)) {
                own += r.size;
                any = true;
            }
        return !any || params_.max_active_bytes <= 0 || own + bytes <= params_.max_active_bytes;
    }

    // The network a stage runs on: its call's own algorithms, where the call planned others.
    const Topology &topology_of(StageRef r) const {
        if (calls_.empty()) return topo_;
        const Topology *own = calls_[call_of_[r.chunk]].topology;
        return own ? *own : topo_;
    }

    void start(int d, StageRef ref, double ready, double key) {
        const Stage &s = stage(ref);
        const Dimension &dim = topology_of(ref).dim(d);
        // Recorded as they start: runs come out in start order.
        const size_t run = out_.runs.size();
        out_.runs.push_back({ref, d, ready, now_, 0});
        out_.dim_order[d].push_back(ref);
        running_[d].push_back(
            {run, stage_latency(dim, s.phase), stage_bytes_sent(dim, s.phase, s.input_bytes), key});
    }

    bool any_running() const {
        for (const auto &r : running_)
            if (!r.empty()) return true;
        return false;
    }

    // Bandwidth share of each stage moving bytes on dimension d: what they deliver together
    // (the dimension's fill curve at their number), shared equally.
    double rate(int d) const {
        int moving = 0;
        for (const auto &r : running_[d])
            if (r.latency_left <= 0) ++moving;
        return moving ? filled_bandwidth(topo_.dim(d), moving) / moving : 0;
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
                    if (!calls_.empty()) --calls_[call_of_[finished.back().chunk]].left;
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
    std::vector<CallOrder> calls_;
    CrossCall rule_;
    std::vector<int> call_of_;              // per chunk, with calls
    std::vector<std::vector<Ready>> queue_; // per dimension: a heap, next served first
    // With calls: per chunk its stage that is ready and not started (-1: none), and since
    // when.
    std::vector<int> ready_stage_;
    std::vector<double> ready_at_;
    std::vector<std::vector<Running>> running_;
    Ordering out_;
    // Scratch of advance(), kept between events (the planner runs many simulations).
    std::vector<double> rates_;
    std::vector<StageRef> finished_;
    double now_ = 0;
    long next_seq_ = 0;
};

// A rooted collective's trees (scheduler.h): their casts run on different ranks' links at
// once, which one queue per dimension cannot model. Issue order: by chunk + K x wave (a
// wave's casts wait only for earlier waves', so K chunks of later waves interleave with
// each wave), then chunk, then the stage's place; every rank sorts alike, and each chunk's
// stages come in their own order, so no rank waits on another in a cycle. Time: the
// busiest link's bytes, each cast's fixed delay on the busiest rank's casts shared by K
// slots, and the first chunk's way down its tree (its longest cast of every wave).
Ordering order_casts(const Topology &topo, const std::vector<ChunkSchedule> &chunks,
                     const OrderingParams &params) {
    const int lag = std::max(1, params.max_active);
    struct Key {
        long priority;
        int chunk, stage;
    };
    std::vector<Key> keys;
    std::vector<CastTree> trees;
    std::vector<double> bytes;
    for (int k = 0; k < int(chunks.size()); ++k) {
        for (int i = 0; i < int(chunks[k].stages.size()); ++i)
            keys.push_back({k + long(lag) * chunks[k].stages[i].wave, k, i});
        trees.push_back(chunks[k].tree);
        bytes.push_back(chunks[k].bytes);
    }
    std::sort(keys.begin(), keys.end(), [](const Key &a, const Key &b) {
        return std::tie(a.priority, a.chunk, a.stage) < std::tie(b.priority, b.chunk, b.stage);
    });
    Ordering o;
    o.dim_order.resize(topo.num_dims());
    for (const Key &key : keys)
        o.dim_order[chunks[key.chunk].stages[key.stage].dim].push_back({key.chunk, key.stage});

    const LinkLoads loads = cast_loads(topo, trees, bytes);
    const int dims = topo.num_dims();
    o.busy.assign(dims, 0.0);
    std::vector<int> casts(size_t(topo.size()), 0);
    double delay = 0;
    for (const ChunkSchedule &c : chunks)
        for (const Stage &s : c.stages) {
            const GroupCast &cast = c.tree[s.cast];
            ++casts[size_t(cast.source)];
            for (int v : cast.targets) ++casts[size_t(v)];
            delay = std::max(delay, stage_latency(topo.dim(s.dim), s.phase));
        }
    for (size_t link = 0; link < loads.in.size(); ++link) {
        const int d = int(link % size_t(dims));
        o.busy[d] = std::max({o.busy[d], loads.in[link], loads.out[link]});
    }
    double way_down = 0;
    if (!chunks.empty()) {
        std::vector<double> wave_time;
        for (const Stage &s : chunks.front().stages) {
            if (size_t(s.wave) >= wave_time.size()) wave_time.resize(size_t(s.wave) + 1, 0.0);
            wave_time[s.wave] =
                std::max(wave_time[s.wave], stage_time(topo.dim(s.dim), s.phase, s.input_bytes));
        }
        for (double t : wave_time) way_down += t;
    }
    const int most = casts.empty() ? 0 : *std::max_element(casts.begin(), casts.end());
    o.makespan = loads.busiest() + most * delay / lag + way_down;
    return o;
}

} // namespace

Ordering simulate_schedule(const Topology &topo, const std::vector<ChunkSchedule> &chunks,
                           const OrderingParams &params) {
    OrderingParams p = params;
    p.max_active = std::max(1, p.max_active);
    if (std::any_of(chunks.begin(), chunks.end(),
                    [](const ChunkSchedule &c) { return !c.tree.empty(); }))
        return order_casts(topo, chunks, p);
    return Simulation(topo, chunks, p).run();
}

Ordering replay_schedule(const Topology &topo, const std::vector<ChunkSchedule> &chunks,
                         const std::vector<std::vector<StageRef>> &dim_order,
                         const OrderingParams &params) {
    return replay_calls(topo, {{&chunks, &dim_order}}, params, CrossCall::InOrder);
}

Ordering replay_calls(const Topology &topo, const std::vector<ReplayCall> &calls,
                      const OrderingParams &params, CrossCall rule) {
    OrderingParams p = params;
    p.max_active = std::max(1, p.max_active);
    std::vector<ChunkSchedule> chunks;
    std::vector<CallOrder> orders;
    for (const ReplayCall &call : calls) {
        CallOrder order;
        order.topology = call.topology;
        order.first_chunk = static_cast<int>(chunks.size());
        for (const ChunkSchedule &c : *call.chunks) {
            chunks.push_back(c);
            order.left += c.stages.size();
        }
        order.end_chunk = static_cast<int>(chunks.size());
        order.dim_order.resize(topo.num_dims());
        for (int d = 0; d < topo.num_dims() && d < int(call.dim_order->size()); ++d)
            for (StageRef r : (*call.dim_order)[d])
                order.dim_order[d].push_back({r.chunk + order.first_chunk, r.stage});
        orders.push_back(std::move(order));
    }
    return Simulation(topo, chunks, p, std::move(orders), rule).run();
}

double ideal_time(const Topology &topo, Collective coll, double bytes) {
    const CollectiveInfo &info = collective_info(coll);
    const double rate = info.rooted ? topo.broadcast_rate() : topo.total_bandwidth();
    return rate > 0 ? info.least_moved(topo.size()) * bytes / rate : 0;
}

} // namespace themis
