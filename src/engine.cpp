// engine: per-dimension queues that issue a plan's ops in order (see engine.h).
#include "engine.h"

#include <algorithm>

#include "algorithms/registry.h"

namespace themis {

Engine::Engine(const Topology &topo, Transport &transport, Memory &memory, int max_active,
               uint64_t max_active_bytes)
    : topo_(topo), transport_(transport), memory_(memory), max_active_(std::max(1, max_active)),
      max_active_bytes_(max_active_bytes), op_counter_(topo.num_dims(), 0),
      active_(topo.num_dims()), active_bytes_(topo.num_dims(), 0), busy_total_(topo.num_dims(), 0),
      busy_since_(topo.num_dims()), spare_(kAlgorithmKinds) {}

void Engine::mark_busy(int d) { busy_since_[d] = std::chrono::steady_clock::now(); }

void Engine::mark_idle(int d) {
    busy_total_[d] +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - busy_since_[d]).count();
}

double Engine::busy_seconds(int d) const {
    if (active_[d].empty()) return busy_total_[d];
    return busy_total_[d] +
           std::chrono::duration<double>(std::chrono::steady_clock::now() - busy_since_[d]).count();
}

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
    progress();
    return exec;
}

void Engine::start(Execution &execution, std::shared_ptr<const Plan> plan, char *work,
                   Reducer &reducer, const RunOptions &options) {
    execution.start(std::move(plan), work, reducer, options);
    progress();
}

std::unique_ptr<StageAlgorithm> Engine::stage_algorithm(Algorithm kind, const StageContext &ctx) {
    auto &spare = spare_[size_t(kind)];
    if (spare.empty()) return make_stage_algorithm(kind, ctx);
    std::unique_ptr<StageAlgorithm> algorithm = std::move(spare.back());
    spare.pop_back();
    algorithm->restart(ctx);
    return algorithm;
}

void Engine::keep(Active &active) {
    active.algorithm->clear(); // its buffers go back now
    spare_[size_t(active.kind)].push_back(std::move(active.algorithm));
}

void Engine::run(std::shared_ptr<const Plan> plan, char *work, Reducer &reducer,
                 const RunOptions &options) {
    wait(*start(std::move(plan), work, reducer, options));
}

void Engine::wait(Execution &execution, std::recursive_mutex *lock) {
    for (;;) {
        std::unique_lock<std::recursive_mutex> hold;
        if (lock) hold = std::unique_lock<std::recursive_mutex>(*lock);
        if (execution.progress()) return;
        transport_.progress();
    }
}

bool Engine::fits(int d, uint64_t bytes) const {
    return max_active_bytes_ == 0 || active_[d].empty() ||
           active_bytes_[d] + bytes <= max_active_bytes_;
}

const Execution *Engine::oldest() const {
    for (const Execution *execution : executions_)
        if (!execution->done()) return execution;
    return nullptr;
}

void Engine::start_ready_ops(int d) {
    const Execution *first = oldest();
    for (Execution *execution : executions_) {
        for (;;) {
            const Execution::Next next = execution->start_next(d, execution == first);
            if (next == Execution::Next::Started) continue;
            if (next == Execution::Next::Blocked) return; // no later call passes it
            break; // None, or waiting for its chunk: the next call may use the dimension
        }
    }
}

bool Engine::may_start(int d, const Execution &execution, bool oldest, uint64_t bytes) const {
    const int running = static_cast<int>(active_[d].size());
    if (!oldest) // a later call leaves the oldest a slot, and counts every stage's bytes
        return running < max_active_ - 1 && fits(d, bytes);
    if (running >= max_active_) return false;
    // The oldest call counts only its own stages: a later call never holds it back.
    uint64_t own = 0;
    bool any = false;
    for (const Active &a : active_[d])
        if (a.execution == &execution) {
            own += a.bytes;
            any = true;
        }
    return max_active_bytes_ == 0 || !any || own + bytes <= max_active_bytes_;
}

bool Engine::progress_active(int d) {
    bool finished = false;
    auto &active = active_[d];
    for (size_t i = 0; i < active.size();) {
        if (!active[i].algorithm->progress()) {
            ++i;
            continue;
        }
        active_bytes_[d] -= active[i].bytes;
        Execution *execution = active[i].execution;
        const int op = active[i].op;
        keep(active[i]);
        active.erase(active.begin() + static_cast<long>(i));
        if (active.empty()) mark_idle(d);
        execution->finish(op);
        finished = true;
    }
    return finished;
}

void Engine::progress() {
    if (progressing_) return;
    progressing_ = true;
    struct Reset { // also when a stage throws
        bool &flag;
        ~Reset() { flag = false; }
    } reset{progressing_};
    bool changed = true;
    // Keep going while ops finish: a finished stage may unblock another dimension.
    while (changed && !executions_.empty()) {
        changed = false;
        for (int d = 0; d < topo_.num_dims(); ++d) {
            start_ready_ops(d);
            changed = progress_active(d) || changed;
        }
        executions_.erase(std::remove_if(executions_.begin(), executions_.end(),
                                         [](const Execution *e) { return e->done(); }),
                          executions_.end());
    }
}

void Engine::forget(Execution *execution) {
    executions_.erase(std::remove(executions_.begin(), executions_.end(), execution),
                      executions_.end());
    for (int d = 0; d < topo_.num_dims(); ++d) {
        auto &active = active_[d];
        for (size_t i = 0; i < active.size();) {
            if (active[i].execution != execution) {
                ++i;
                continue;
            }
            active_bytes_[d] -= active[i].bytes;
            keep(active[i]);
            active.erase(active.begin() + static_cast<long>(i));
            if (active.empty()) mark_idle(d);
        }
    }
}

Execution::Execution(Engine &engine, std::shared_ptr<const Plan> plan, char *work, Reducer &reducer,
                     const RunOptions &options)
    : engine_(engine) {
    start(std::move(plan), work, reducer, options);
}

void Execution::start(std::shared_ptr<const Plan> plan, char *work, Reducer &reducer,
                      const RunOptions &options) {
    reset();
    plan_ = std::move(plan);
    work_ = work;
    reducer_ = &reducer;
    memory_ = options.memory ? options.memory : &engine_.memory();
    hooks_ = options.hooks;
    trace_ = options.trace;
    t0_ = std::chrono::steady_clock::now();
    // Every vector keeps its room from the last run: assign() allocates only to grow.
    const size_t ops = plan_->ops.size();
    next_.assign(size_t(engine_.topology().num_dims()), 0);
    op_done_.assign(ops, false);
    tag_base_.assign(ops, 0);
    remaining_ = ops;
    // Tags are numbered in each dimension's issue order, identical on every rank.
    for (size_t d = 0; d < plan_->dim_queue.size(); ++d)
        for (int op : plan_->dim_queue[d]) tag_base_[op] = engine_.next_tag_base(int(d));
    last_stage_.clear();
    if (hooks_) {
        // Ops are grouped by chunk, stages in order: a chunk's last op is its last stage.
        const auto &all = plan_->ops;
        last_stage_.resize(ops);
        for (size_t i = 0; i < ops; ++i)
            last_stage_[i] = i + 1 == ops || all[i + 1].chunk != all[i].chunk;
        hooks_->begin(*plan_);
    }
    op_bytes_.clear();
    if (engine_.max_active_bytes() != 0) {
        // Counted once here: start_next asks about a waiting op on every progress().
        op_bytes_.resize(ops);
        for (size_t i = 0; i < ops; ++i) op_bytes_[i] = plan_->ops[i].total_bytes();
    }
    timing_.clear();
    if (trace_) {
        timing_.resize(ops);
        for (size_t i = 0; i < ops; ++i)
            timing_[i] = {{plan_->ops[i].chunk, plan_->ops[i].stage}, plan_->ops[i].dim, 0, 0, 0};
    }
    if (remaining_ > 0) {
        engine_.executions_.push_back(this);
        queued_ = true;
    }
}

void Execution::reset() {
    if (queued_) engine_.forget(this);
    queued_ = false;
    remaining_ = 0;
    plan_.reset();
}

Execution::~Execution() { reset(); }

double Execution::now() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
}

Execution::Next Execution::start_next(int d, bool oldest) {
    const auto &queue = plan_->dim_queue[d];
    if (next_[d] >= queue.size()) return Next::None;
    const int op_index = queue[next_[d]];
    const PlanOp &op = plan_->ops[op_index];
    const uint64_t bytes = op_bytes_.empty() ? 0 : op_bytes_[op_index];
    if (op.previous >= 0 && !op_done_[op.previous]) return Next::ChunkWaits; // strictly in order
    if (!engine_.may_start(d, *this, oldest, bytes)) return Next::Blocked;   // slots or bytes
    if (hooks_ && !hooks_->ready(op)) return Next::Blocked; // its data is not in place yet
    const StageContext ctx(engine_.transport(), *reducer_, *memory_, work_, op,
                           engine_.topology().dim(d).peers, tag_base_[op_index], hooks_);
    if (trace_) {
        // Ready when the chunk's previous stage ended here.
        timing_[op_index].ready = op.previous >= 0 ? timing_[op.previous].end : 0;
        timing_[op_index].start = now();
    }
    const Algorithm kind = stage_algorithm_for(plan_->algorithms[d], op.phase);
    if (engine_.active_[d].empty()) engine_.mark_busy(d);
    engine_.active_[d].push_back({this, op_index, bytes, kind, engine_.stage_algorithm(kind, ctx)});
    engine_.active_bytes_[d] += bytes;
    ++next_[d];
    return Next::Started;
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
    engine_.progress();
    return done();
}

} // namespace themis
