// coll_themis_context.cpp: a set-up communicator's calls on its engine (coll_themis_context.h;
// its set-up: coll_themis_setup.cpp).
#include "coll_themis_context.h"

#include <algorithm>
#include <cstdlib>
#include <optional>

#include "opal/runtime/opal_progress.h"
#include "coll_themis_call.h"
#include "cuda/buffers.h"
#include "coll_themis_inherit.h"
#include "coll_themis_node_transport.h"
#include "coll_themis_request.h"
#include "coll_themis_transports.h"
#include "calibration.h"
#include "transports/cma_transport.h"

namespace themis {

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
    ctx->adopt_transport(
        connect_chosen({module, comm, ctx->layout_, ctx->position_}, setup.transport));
    if (std::find(setup.cma.begin(), setup.cma.end(), true) != setup.cma.end())
        ctx->node_transport_ = std::make_unique<CmaTransport>(*ctx->transport_, setup.cma);
    ctx->settings_.resolve(comm, ctx->position_);
    CalibratedTopology rates = setup.rates;
    rates.topology = setup.layout.topology;
    ctx->start_engine(rates, setup.refine ? make_refiner(rates) : nullptr);
    return ctx;
}

// Members go in the reverse of their order: the refinement's agreement in flight completes
// first, then the pool's calls, whose executions belong to the engine, then the engine, then
// the transports, wrappers before what they wrap.
Context::~Context() = default;

Crossover::Bounds Context::crossover_bounds(Collective coll, size_t bytes) const {
    if (!rates_known_) return {};
    return {below_lower_bound(layout_.topology, coll, double(bytes)),
            ideal_time(layout_.topology, coll, double(bytes))};
}

bool Context::idle() {
    std::lock_guard<std::recursive_mutex> hold(engine_lock_);
    return engine_ && engine_->in_flight() == 0 && refinement_.idle() && !trace_.is_open() &&
           !device_direct();
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
    carried_load_.clear();
    trace_.restart();
    settings_.resolve(comm, position_); // the new communicator's info keys
}

void Context::adopt_rates(const CalibratedTopology &rates, std::unique_ptr<RateRefiner> refiner) {
    layout_.topology = rates.topology;
    rates_known_ = std::none_of(rates.bandwidth_source.begin(), rates.bandwidth_source.end(),
                                [](RateSource r) { return r == RateSource::Default; });
    refinement_.reset(module_, rates, std::move(refiner), *engine_);
}

void Context::start_engine(const CalibratedTopology &rates, std::unique_ptr<RateRefiner> refiner) {
    engine_ = std::make_unique<Engine>(rates.topology, engine_transport(), *memory_,
                                       params().max_active, params().max_active_bytes);
    adopt_rates(rates, std::move(refiner));
}

void Context::open_trace() { trace_.open(comm_); }

std::string Context::levels() const {
    std::string levels;
    for (const std::string &name : layout_.level_names)
        levels += (levels.empty() ? "" : ",") + name;
    return levels;
}

void Context::adopt_transport(std::unique_ptr<Transport> transport) {
    transport_ = std::move(transport);
    moves_device_ = transport_->moves_device_memory() || cuda::stands_for_device_transport();
}

Transport &Context::engine_transport() {
    if (device_transport_) return *device_transport_;
    return node_transport_ ? *node_transport_ : *transport_;
}

PlanRequest Context::request(Collective coll, uint64_t element_size,
                             std::vector<uint64_t> block_counts) {
    PlanRequest req;
    plan_request(req, coll, element_size);
    req.block_counts = std::move(block_counts);
    return req;
}

void Context::begin(Call &call, bool nonblocking) {
    std::lock_guard<std::recursive_mutex> hold(engine_lock_);
    refinement_.call_began();
    const size_t misses = cache_.misses();
    PlanRequest &req = call.request;
    if (settings_.carry_load()) req.carried_load = carried_load_;
    std::shared_ptr<const Plan> plan = cache_.get(layout_.topology, req);
    if (nonblocking)
        carried_load_ = plan->carried_load;
    else
        carried_load_.clear();
    if (settings_.verbose() >= 5) {
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
        if (settings_.verbose() >= 10) say(10, comm_, "\n" + plan->describe());
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
    if (refinement_.agreeing()) { // every rank plans the calls after the window's last from it
        call.context_ = this;
        call.state_ = Call::State::Waiting;
        refinement_.waiting().push_back(&call);
        return;
    }
    begin_nonblocking(call);
}

void Context::begin_nonblocking(Call &call) {
    const bool alone = engine_->in_flight() == 0;
    begin(call, true);
    refinement_.nonblocking_began(&call, *call.execution_->plan(), alone);
}

void Context::poll_agreement() {
    const std::vector<double> *sums = refinement_.poll();
    if (!sums) return;
    revise_rates(*sums);
    // The calls that waited, in the order they came (one may end the next window).
    std::vector<Call *> &waiting = refinement_.waiting();
    size_t next = 0;
    while (!refinement_.agreeing() && next < waiting.size()) begin_nonblocking(*waiting[next++]);
    waiting.erase(waiting.begin(), waiting.begin() + long(next));
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
            if (!refinement_.agreeing()) return;
        }
        opal_progress();
    }
}

bool agree_doubles(mca_coll_themis_module_t *m, const double *in, double *out, int n,
                   ompi_op_t *op) {
    return m->previous_allreduce(in, out, n, &ompi_mpi_double.dt, op, m->comm,
                                 m->previous_allreduce_module) == OMPI_SUCCESS;
}

ompi_request_t *start_agreement(ompi_communicator_t *dup, const double *in, double *out, int n,
                                ompi_op_t *op) {
    ompi_request_t *request = nullptr;
    if (dup->c_coll->coll_iallreduce(in, out, n, &ompi_mpi_double.dt, op, dup, &request,
                                     dup->c_coll->coll_iallreduce_module) != OMPI_SUCCESS)
        return nullptr;
    return request;
}

bool Context::run(Call &call) {
    finish_agreement(); // a window that a nonblocking call ended: its rates first
    const bool alone = engine_->in_flight() == 0;
    refinement_.before_blocking(alone);
    begin(call, false);
    engine_->wait(*call.execution_, &engine_lock_);
    write_trace(call);
    call.results_out();
    return refinement_.after_blocking(alone, layout_.topology, *call.execution_->plan());
}

void Context::revise_rates(const std::vector<double> &agreed) {
    std::lock_guard<std::recursive_mutex> hold(engine_lock_);
    const std::optional<Topology> revised = refinement_.revise(agreed, layout_.topology, comm_);
    if (!revised) return;
    layout_.topology = *revised;
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
    refinement_.driven(&call, layout_.topology, *execution.plan(), execution.done());
    if (!execution.done()) return false;
    write_trace(call);
    return true;
}

void Context::leave(Call &call) {
    std::lock_guard<std::recursive_mutex> hold(engine_lock_);
    refinement_.left(&call);
    if (!call.execution_) return;
    call.execution_->reset(); // leaves the engine's queues
}

void Context::write_trace(Call &call) {
    if (!call.traced_ || call.trace_written_) return;
    std::lock_guard<std::recursive_mutex> hold(engine_lock_);
    trace_.write(call.execution_->plan()->schedule, call.runs_);
    call.trace_written_ = true;
}

int report_failure(const char *collective, const std::exception &e) {
    mca_coll_themis_show_help("run-failed", collective, e.what());
    return OMPI_ERROR;
}

} // namespace themis

themis_context::~themis_context() {
    trials.finish_all(); // on the private duplicate, which goes below
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
