// engine: per-dimension queues that issue a plan's ops in order (see engine.h).
#include "engine.h"

#include <algorithm>

namespace themis {

Engine::Engine(const Topology &topo, Transport &transport, Memory &memory, int max_active,
               uint64_t max_active_bytes)
    : topo_(topo), transport_(transport), memory_(memory), max_active_(std::max(1, max_active)),
      max_active_bytes_(max_active_bytes), op_counter_(topo.num_dims(), 0) {}

int Engine::next_tag_base(int d) {
    // Every op owns `peers` consecutive tags (one per algorithm step); the window wraps
    // long after any op that could still be in flight has finished.
    const uint64_t stride = static_cast<uint64_t>(topo_.dim(d).peers);
    const uint64_t window = kTagLimit / stride;
    return static_cast<int>((op_counter_[d]++ % window) * stride);
}

std::unique_ptr<Execution> Engine::start(std::shared_ptr<const Plan> plan, char *work,
                                         Reducer &reducer, const RunOptions &options) {
    auto exec = std::make_unique<Execution>(*this, std::move(plan), work, reducer, options);
    exec->progress();
    return exec;
}

void Engine::run(std::shared_ptr<const Plan> plan, char *work, Reducer &reducer,
                 const RunOptions &options) {
    auto exec = start(std::move(plan), work, reducer, options);
    while (!exec->progress()) transport_.progress();
}

Execution::Execution(Engine &engine, std::shared_ptr<const Plan> plan, char *work,
                     Reducer &reducer, const RunOptions &options)
    : engine_(engine), plan_(std::move(plan)), work_(work), reducer_(reducer),
      memory_(options.memory ? *options.memory : engine.memory()), hooks_(options.hooks),
      next_(engine.topology().num_dims(), 0), active_(engine.topology().num_dims()),
      active_bytes_(engine.topology().num_dims(), 0),
      op_done_(plan_->ops.size(), false), tag_base_(plan_->ops.size(), 0),
      remaining_(plan_->ops.size()), trace_(options.trace), t0_(std::chrono::steady_clock::now()) {
    // Tags are numbered in each dimension's issue order, identical on every rank.
    for (size_t d = 0; d < plan_->dim_queue.size(); ++d)
        for (int op : plan_->dim_queue[d]) tag_base_[op] = engine_.next_tag_base(int(d));
    if (hooks_) {
        // Ops are grouped by chunk, stages in order: a chunk's last op is its last stage.
        const auto &ops = plan_->ops;
        last_stage_.resize(ops.size());
        for (size_t i = 0; i < ops.size(); ++i)
            last_stage_[i] = i + 1 == ops.size() || ops[i + 1].chunk != ops[i].chunk;
        hooks_->begin(*plan_);
    }
    if (engine_.max_active_bytes() != 0) {
        // Counted once here: start_ready_ops asks about a waiting op on every progress().
        op_bytes_.resize(plan_->ops.size());
        for (size_t i = 0; i < op_bytes_.size(); ++i) op_bytes_[i] = plan_->ops[i].total_bytes();
    }
    if (trace_) {
        timing_.resize(plan_->ops.size());
        for (size_t i = 0; i < timing_.size(); ++i)
            timing_[i] = {{plan_->ops[i].chunk, plan_->ops[i].stage}, plan_->ops[i].dim, 0, 0, 0};
    }
}

double Execution::now() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
}

// Whether `op` may join the stages running on dimension d under the byte bound; an idle
// dimension takes any stage, so every stage can run.
bool Execution::fits(int d, int op) const {
    return op_bytes_.empty() || active_[d].empty() ||
           active_bytes_[d] + op_bytes_[op] <= engine_.max_active_bytes();
}

void Execution::start_ready_ops(int d) {
    const auto &queue = plan_->dim_queue[d];
    while (next_[d] < queue.size() && static_cast<int>(active_[d].size()) < engine_.max_active()) {
        const int op_index = queue[next_[d]];
        const PlanOp &op = plan_->ops[op_index];
        if (op.previous >= 0 && !op_done_[op.previous]) return; // strictly in order
        if (!fits(d, op_index)) return;            // wait for running stages to drain
        if (hooks_ && !hooks_->ready(op)) return; // its data is not in place yet
        StageContext ctx{engine_.transport(), reducer_, memory_, work_, op,
                         engine_.topology().dim(d).peers, tag_base_[op_index], hooks_};
        if (trace_) {
            // Ready when the chunk's previous stage ended here.
            timing_[op_index].ready = op.previous >= 0 ? timing_[op.previous].end : 0;
            timing_[op_index].start = now();
        }
        active_[d].push_back(
            {op_index, make_stage_algorithm(plan_->algorithms[d], ctx)});
        if (!op_bytes_.empty()) active_bytes_[d] += op_bytes_[op_index];
        ++next_[d];
    }
}

void Execution::finish(int op) {
    op_done_[op] = true;
    --remaining_;
    if (hooks_) {
        hooks_->stage_done(plan_->ops[op]);
        if (last_stage_[op]) hooks_->chunk_finished(plan_->ops[op].chunk);
    }
    if (trace_) {
        timing_[op].end = now();
        trace_->push_back(timing_[op]);
    }
}

bool Execution::progress() {
    bool changed = true;
    // Keep going while ops finish: a finished stage may unblock another dimension.
    while (changed && remaining_ > 0) {
        changed = false;
        for (size_t d = 0; d < active_.size(); ++d) {
            start_ready_ops(static_cast<int>(d));
            auto &active = active_[d];
            for (size_t i = 0; i < active.size();) {
                if (active[i].algorithm->progress()) {
                    finish(active[i].op);
                    if (!op_bytes_.empty()) active_bytes_[d] -= op_bytes_[active[i].op];
                    active.erase(active.begin() + static_cast<long>(i));
                    changed = true;
                } else {
                    ++i;
                }
            }
        }
    }
    return remaining_ == 0;
}

} // namespace themis
