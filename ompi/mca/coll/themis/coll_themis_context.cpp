// coll_themis_context.cpp: a set-up communicator's context at work: plan requests, runs on
// its engine, the trace (set-up itself: coll_themis_setup.cpp).
#include "coll_themis_context.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "opal/runtime/opal_progress.h"
#include "opal/util/info.h"
#include "opal/util/output.h"
#include "coll_themis_call.h"
#include "cuda/ipc.h"
#include "coll_themis_inherit.h"
#include "coll_themis_node_transport.h"
#include "coll_themis_refine.h"
#include "coll_themis_request.h"
#include "coll_themis_test_hooks.h"
#include "coll_themis_transports.h"
#include "calibration.h"
#include "ordering.h"
#include "transports/cma_transport.h"
#include "trace.h"

namespace themis {

namespace {

// Bumped by every call of the info keys' subscription callback (info_generation()).
std::atomic<uint64_t> info_changes{0};

} // namespace

uint64_t info_generation() { return info_changes.load(std::memory_order_acquire); }

Context::Context(mca_coll_themis_module_t *module, ompi_communicator_t *comm, RankLayout layout,
                 std::string key)
    : module_(module), comm_(comm), layout_(std::move(layout)),
      position_(layout_.position_of[ompi_comm_rank(comm)]), key_(std::move(key)),
      cache_(static_cast<size_t>(params().plan_cache_size)) {}

std::unique_ptr<Context> Context::from_setup(mca_coll_themis_module_t *module,
                                             ompi_communicator_t *comm, const std::string &key,
                                             const GroupSetup &setup) {
    std::unique_ptr<Context> ctx(new Context(module, comm, setup.layout, key));
    ctx->setup_source_ = "inherited";
    if (setup.memory) ctx->memory_ = setup.memory;
    ctx->transport_ = connect_chosen({module, comm, ctx->layout_, ctx->position_}, setup.transport);
    if (std::find(setup.cma.begin(), setup.cma.end(), true) != setup.cma.end())
        ctx->node_transport_ = std::make_unique<CmaTransport>(*ctx->transport_, setup.cma);
    ctx->resolve_settings();
    CalibratedTopology rates = setup.rates;
    rates.topology = setup.layout.topology;
    ctx->start_engine(rates, setup.refine ? make_refiner(rates) : nullptr);
    return ctx;
}

Context::~Context() {
    // An agreement still in flight writes into agreement_out_: every rank started it with the
    // call that ended the window, so it completes.
    while (agreement_ && !REQUEST_COMPLETE(agreement_)) opal_progress();
    if (agreement_) ompi_request_free(&agreement_);
    pool_.clear(); // its calls' executions belong to the engine
    engine_.reset();
    device_transport_.reset();
    node_transport_.reset();
    transport_.reset();
}

Crossover::Bounds Context::crossover_bounds(Collective coll, size_t bytes) const {
    if (!rates_known_) return {};
    return {below_lower_bound(layout_.topology, coll, double(bytes)),
            ideal_time(layout_.topology, coll, double(bytes))};
}

bool Context::idle() {
    std::lock_guard<std::recursive_mutex> hold(engine_lock_);
    return engine_ && engine_->in_flight() == 0 && !agreement_ && waiting_.empty() &&
           !trace_.is_open() && !device_direct();
}

void Context::rebind(mca_coll_themis_module_t *module, ompi_communicator_t *comm,
                     const GroupSetup &setup) {
    std::lock_guard<std::recursive_mutex> hold(engine_lock_);
    module_ = module;
    comm_ = comm;
    setup_source_ = "spare";
    CalibratedTopology rates = setup.rates;
    rates.topology = setup.layout.topology;
    adopt_rates(rates, setup.refine ? make_refiner(rates) : nullptr);
    sole_ = nullptr;
    carried_load_.clear();
    traced_calls_ = 0;
    resolve_settings(); // the new communicator's info keys
}

std::string info(ompi_communicator_t *comm, const char *key) {
    char value[32];
    return themis_info_get(comm->super.s_info, key, value, sizeof value) ? value : "";
}

int info_choice(ompi_communicator_t *comm, const char *key, int parameter) {
    const mca_base_var_enum_value_t *value =
        mca_coll_themis_info_value(key, info(comm, key).c_str());
    return value ? value->value : parameter;
}

Transport &Context::engine_transport() {
    if (device_transport_) return *device_transport_;
    return node_transport_ ? *node_transport_ : *transport_;
}

void Context::resolve_settings() {
    // Noted first: an info key set while this runs is resolved again at the next call.
    settings_.info_generation = info_generation();
    PlanRequest &req = settings_.request;
    // The planner (src/planner.h) picks the count when chunks is 0 (auto, the default);
    // chunks no smaller than min_chunk_bytes either way, so small messages are not cut
    // to pieces.
    req.chunks = params().chunks;
    req.min_chunk_bytes = params().min_chunk_bytes;
    // MPI_Comm_set_info / MPI_Comm_dup_with_info may choose the policy per communicator.
    req.scheduler.policy =
        info_choice(comm_, "themis_policy", params().policy) == THEMIS_POLICY_BASELINE
            ? Policy::Baseline
            : Policy::Themis;
    req.scheduler.load_model =
        params().load_model == THEMIS_LOAD_REFERENCE ? LoadModel::Reference : LoadModel::Latency;
    req.scheduler.threshold = params().threshold;
    req.ordering.intra =
        params().intra_policy == THEMIS_INTRA_FIFO ? IntraPolicy::Fifo : IntraPolicy::Scf;
    req.ordering.max_active = params().max_active;
    req.ordering.max_active_bytes = static_cast<double>(params().max_active_bytes);
    req.rank = position_;
    settings_.carry_load = params().carry_load;
    settings_.verbose = params().verbose;
    settings_.resolved = true;
}

void Context::plan_request(PlanRequest &req, Collective coll, uint64_t element_size) {
    if (!settings_.resolved || settings_.info_generation != info_generation()) resolve_settings();
    req = settings_.request; // its lists empty: req's keep their room
    req.collective = coll;
    req.element_size = element_size;
}

PlanRequest Context::request(Collective coll, uint64_t element_size,
                             std::vector<uint64_t> block_counts) {
    PlanRequest req;
    plan_request(req, coll, element_size);
    req.block_counts = std::move(block_counts);
    return req;
}

Context::Lease::~Lease() { ctx_.pool_back(std::move(call_)); }

Context::Lease Context::lease() {
    std::unique_ptr<Call> call;
    {
        std::lock_guard<std::mutex> hold(pool_lock_);
        if (!pool_.empty()) {
            call = std::move(pool_.back());
            pool_.pop_back();
        }
    }
    if (!call) call = std::make_unique<Call>();
    return Lease(*this, std::move(call));
}

void Context::pool_back(std::unique_ptr<Call> call) {
    call->clear();
    std::lock_guard<std::mutex> hold(pool_lock_);
    pool_.push_back(std::move(call));
}

void Context::begin(Call &call, bool nonblocking) {
    std::lock_guard<std::recursive_mutex> hold(engine_lock_);
    sole_ = nullptr; // a call in flight beside another gives no evidence
    const size_t misses = cache_.misses();
    PlanRequest &req = call.request;
    if (settings_.carry_load) req.carried_load = carried_load_;
    std::shared_ptr<const Plan> plan = cache_.get(layout_.topology, req);
    if (nonblocking)
        carried_load_ = plan->carried_load;
    else
        carried_load_.clear();
    if (settings_.verbose >= 5) {
        const double ideal = ideal_time(layout_.topology, req.collective, double(plan->work_bytes));
        LogEvent("plan")
            .add("coll", collective_name(req.collective))
            .add("bytes", static_cast<unsigned long long>(plan->work_bytes))
            .add("chunks", plan->schedule.size())
            .add("policy", policy_name(req.scheduler.policy))
            .add("intra", intra_policy_name(req.ordering.intra))
            .add("max_active", req.ordering.max_active)
            .add("predicted_ms", plan->predicted_time * 1e3, "%.3g")
            .add("ideal_pct", 100 * ideal / plan->predicted_time, "%.1f")
            .add("plan", cache_.misses() > misses ? "compiled" : "cached")
            .emit(5, comm_);
        if (settings_.verbose >= 10) say(10, comm_, "\n" + plan->describe());
    }
    RunOptions options = call.options;
    call.traced_ = trace_.is_open();
    if (call.traced_) options.trace = &call.runs_;
    // A call keeps its execution (and the room in it) for the calls that reuse it.
    if (!call.execution_ || &call.execution_->engine() != engine_.get())
        call.execution_.emplace(*engine_);
    call.context_ = this;
    call.state_ = Call::State::Themis;
    engine_->start(*call.execution_, std::move(plan), call.work, call.reducer(), options);
}

void Context::start(Call &call) {
    std::lock_guard<std::recursive_mutex> hold(engine_lock_);
    poll_agreement();
    if (agreement_) { // every rank plans the calls after the window's last from its result
        call.context_ = this;
        call.state_ = Call::State::Waiting;
        waiting_.push_back(&call);
        return;
    }
    begin_nonblocking(call);
}

void Context::begin_nonblocking(Call &call) {
    const bool alone = refiner_ && engine_->in_flight() == 0;
    begin(call, true);
    if (!refiner_) return;
    ++refined_calls_;
    const Plan &plan = *call.execution_->plan();
    if (alone) { // its evidence when it completes, if nothing else starts meanwhile
        sole_ = &call;
        sole_busy_before_ = busy_now();
        sole_last_drive_ = std::chrono::steady_clock::now();
        sole_longest_gap_ = 0;
    }
    if (!refiner_->count_call(plan.predicted_time, nullptr, nullptr)) return;
    agreement_in_ = refiner_->evidence();
    agreement_out_.assign(agreement_in_.size(), 0.0);
    agreement_ =
        start_agreement_(agreement_in_.data(), agreement_out_.data(), int(agreement_in_.size()));
    if (!agreement_) revise_rates(agreement_out_); // failed to start: nothing revised
}

void Context::poll_agreement() {
    if (!agreement_ || !REQUEST_COMPLETE(agreement_)) return;
    const bool ok = agreement_->req_status.MPI_ERROR == OMPI_SUCCESS;
    ompi_request_free(&agreement_);
    agreement_ = nullptr;
    // A failed agreement revises nothing here; Open MPI's error handler has the last word.
    if (!ok) agreement_out_.assign(agreement_out_.size(), 0.0);
    revise_rates(agreement_out_);
    // The calls that waited, in the order they came (one may end the next window).
    size_t next = 0;
    while (!agreement_ && next < waiting_.size()) begin_nonblocking(*waiting_[next++]);
    waiting_.erase(waiting_.begin(), waiting_.begin() + long(next));
}

bool Context::release_waiting(Call &call) {
    std::unique_lock<std::recursive_mutex> hold(engine_lock_, std::try_to_lock);
    if (!hold.owns_lock()) return false; // the thread that holds it polls the agreement
    poll_agreement();
    return call.state_ != Call::State::Waiting;
}

void Context::finish_agreement() {
    for (;;) {
        {
            std::lock_guard<std::recursive_mutex> hold(engine_lock_);
            poll_agreement();
            if (!agreement_) return;
        }
        opal_progress();
    }
}

const std::vector<double> &Context::busy_now() {
    busy_now_.resize(size_t(layout_.topology.num_dims()));
    for (size_t d = 0; d < busy_now_.size(); ++d) busy_now_[d] = engine_->busy_seconds(int(d));
    return busy_now_;
}

const std::vector<double> &Context::busy_since(const std::vector<double> &before) {
    busy_measured_ = busy_now();
    for (size_t d = 0; d < busy_measured_.size(); ++d) busy_measured_[d] -= before[d];
    // Tests (check_refine.sh): a dimension slower than its rates, seen by this rank.
    const int dims = int(busy_measured_.size());
    if (test_hooks().busy_scale_dim >= 0 && test_hooks().busy_scale_dim < dims)
        busy_measured_[size_t(test_hooks().busy_scale_dim)] *= test_hooks().busy_scale;
    return busy_measured_;
}

void Context::watch_sole(Call &call, bool done) {
    const auto now = std::chrono::steady_clock::now();
    sole_longest_gap_ =
        std::max(sole_longest_gap_, std::chrono::duration<double>(now - sole_last_drive_).count());
    sole_last_drive_ = now;
    if (!done) return;
    sole_ = nullptr;
    const Plan &plan = *call.execution_->plan();
    // Stages end when the progress loop sees them end: a call left undriven while the
    // program computed would charge that time to whichever dimensions were busy.
    if (gives_evidence(layout_.topology, plan) &&
        driven_throughout(sole_longest_gap_, plan.predicted_time))
        refiner_->add_evidence(plan.busy, busy_since(sole_busy_before_));
}

bool agree_doubles(mca_coll_themis_module_t *m, const double *in, double *out, int n,
                   ompi_op_t *op) {
    return m->previous_allreduce(in, out, n, &ompi_mpi_double.dt, op, m->comm,
                                 m->previous_allreduce_module) == OMPI_SUCCESS;
}

bool Context::run(Call &call) {
    finish_agreement(); // a window that a nonblocking call ended: its rates first
    // Evidence for the refiner only from a call alone on the engine: the dimensions' busy
    // time is then this call's.
    const bool alone = refiner_ && engine_->in_flight() == 0;
    if (alone) busy_before_ = busy_now();
    begin(call, false);
    engine_->wait(*call.execution_, &engine_lock_);
    write_trace(call);
    call.results_out();
    if (!refiner_) return false;
    ++refined_calls_;
    const Plan &plan = *call.execution_->plan();
    if (!alone || !gives_evidence(layout_.topology, plan))
        return refiner_->count_call(plan.predicted_time, nullptr, nullptr);
    return refiner_->count_call(plan.predicted_time, &plan.busy, &busy_since(busy_before_));
}

void Context::revise_rates(const std::vector<double> &agreed) {
    const std::optional<std::vector<double>> factors = refiner_->revise(agreed);
    if (!factors) return;
    std::lock_guard<std::recursive_mutex> hold(engine_lock_);
    // Later calls plan anew from these rates (the plan cache is keyed by the topology).
    layout_.topology = with_bandwidth_factors(layout_.topology, *factors);
    std::string said;
    for (size_t d = 0; d < factors->size(); ++d) {
        char factor[32];
        snprintf(factor, sizeof factor, "%s%.3g", d ? "," : "", (*factors)[d]);
        said += factor;
    }
    LogEvent("rates")
        .add("dims", layout_.topology.to_spec())
        .add("factors", said)
        .add("calls", (long long)refined_calls_)
        .add("why", "the dimensions' busy time against their plans differed by more than "
                    "coll_themis_refine_threshold")
        .emit(1, comm_);
    keep_revised_rates(comm_, rates_kept_, layout_.topology);
    keep_group_rates(key_, layout_.topology);
}

bool Context::drive(Call &call) {
    Execution &execution = *call.execution_;
    // One pass of the progress callback drives each engine once, not once per call in
    // flight on it: one drive advances them all.
    const uint64_t pass = progress_pass();
    std::unique_lock<std::recursive_mutex> hold(engine_lock_, std::defer_lock);
    if (pass == 0)
        hold.lock();
    else if (!hold.try_lock())
        return false; // the thread that holds it drives the engine
    if (!execution.done() && (pass == 0 || driven_pass_ != pass)) {
        driven_pass_ = pass;
        execution.progress();
    }
    if (sole_ == &call) watch_sole(call, execution.done());
    if (!execution.done()) return false;
    write_trace(call);
    return true;
}

void Context::leave(Call &call) {
    std::lock_guard<std::recursive_mutex> hold(engine_lock_);
    if (sole_ == &call) sole_ = nullptr;
    waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), &call), waiting_.end());
    if (!call.execution_) return;
    call.execution_->reset(); // leaves the engine's queues
}

void Context::write_trace(Call &call) {
    if (!call.traced_ || call.trace_written_) return;
    std::lock_guard<std::recursive_mutex> hold(engine_lock_);
    write_stage_csv(trace_, call.execution_->plan()->schedule, call.runs_, traced_calls_++);
    trace_.flush();
    call.trace_written_ = true;
}

int report_failure(const char *collective, const std::exception &e) {
    mca_coll_themis_show_help("run-failed", collective, e.what());
    return OMPI_ERROR;
}

} // namespace themis

themis_context::~themis_context() {
    // Idle, it serves the next communicator of its group, with its private duplicate.
    if (context && themis::keep_spare(context, dup)) {
        std::free(fallback);
        return;
    }
    context.reset(); // its transports use the duplicate
    std::free(fallback);
    if (dup) ompi_comm_free(&dup);
}

extern "C" void mca_coll_themis_context_free(struct themis_context *context) { delete context; }

extern "C" void mca_coll_themis_info_changed(void) {
    themis::info_changes.fetch_add(1, std::memory_order_acq_rel);
}
