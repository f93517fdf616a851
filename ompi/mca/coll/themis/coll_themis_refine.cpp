// coll_themis_refine.cpp: the rate refinement's glue (coll_themis_refine.h).
#include "coll_themis_refine.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "coll_themis_context.h"
#include "coll_themis_log.h"
#include "coll_themis_params.h"
#include "coll_themis_test_hooks.h"
#include "ompi/op/op.h"
#include "opal/runtime/opal_progress.h"

namespace themis {

void RefineQuestion::ask(Agreement &agreement) {
    same_calls_ = agreement.same(uint64_t(params().refine_calls));
    uint64_t threshold = 0;
    static_assert(sizeof threshold == sizeof params().refine_threshold, "a double's bits");
    std::memcpy(&threshold, &params().refine_threshold, sizeof threshold);
    same_threshold_ = agreement.same(threshold);
}

std::unique_ptr<RateRefiner> RefineQuestion::settle(const Agreement &agreement,
                                                    const CalibratedTopology &rates,
                                                    std::optional<LogEvent> &said) const {
    if (!agreement.holds(same_calls_) || !agreement.holds(same_threshold_)) {
        said = LogEvent("mismatch");
        said->add("param", agreement.holds(same_calls_) ? "coll_themis_refine_threshold"
                                                        : "coll_themis_refine_calls")
            .add("fallback", "no_refinement");
        return nullptr;
    }
    return make_refiner(rates);
}

std::unique_ptr<RateRefiner> make_refiner(const CalibratedTopology &rates) {
    return make_rate_refiner(rates.topology, rates.bandwidth_source, params().refine_calls,
                             params().refine_threshold);
}

Refinement::~Refinement() {
    while (agreement_ && !REQUEST_COMPLETE(agreement_)) opal_progress();
    if (agreement_) ompi_request_free(&agreement_);
}

void Refinement::reset(mca_coll_themis_module_t *m, const CalibratedTopology &rates,
                       std::unique_ptr<RateRefiner> refiner, const Engine &engine) {
    module_ = m;
    refiner_ = std::move(refiner);
    rates_kept_ = rates.kept;
    engine_ = &engine;
    calls_ = 0;
    sole_ = nullptr;
    const size_t dims = size_t(rates.topology.num_dims());
    busy_scale_.assign(dims, 1.0);
    // Tests (check_refine.sh): a dimension slower than its rates, seen by this rank.
    const TestHooks &hooks = test_hooks();
    if (hooks.busy_scale_dim >= 0 && size_t(hooks.busy_scale_dim) < dims)
        busy_scale_[size_t(hooks.busy_scale_dim)] = hooks.busy_scale;
    busy_before_.assign(dims, 0.0);
    busy_measured_ = busy_before_;
}

const std::vector<double> &Refinement::busy_now() {
    busy_now_.resize(busy_scale_.size());
    for (size_t d = 0; d < busy_now_.size(); ++d)
        busy_now_[d] = engine_->busy_seconds(int(d)) * busy_scale_[d];
    return busy_now_;
}

const std::vector<double> &Refinement::busy_since(const std::vector<double> &before) {
    busy_measured_ = busy_now();
    for (size_t d = 0; d < busy_measured_.size(); ++d) busy_measured_[d] -= before[d];
    return busy_measured_;
}

double Refinement::seconds_since(std::chrono::steady_clock::time_point then) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - then).count();
}

void Refinement::before_blocking(bool alone) {
    // Evidence only from a call alone on the engine: the dimensions' busy time is then its.
    if (refiner_ && alone) {
        busy_before_ = busy_now();
        began_ = std::chrono::steady_clock::now();
    }
}

bool Refinement::after_blocking(bool alone, const Topology &topo, const Plan &plan) {
    if (!refiner_) return false;
    ++calls_;
    if (!alone || !gives_evidence(topo, plan))
        return refiner_->count_call(plan.predicted_time, nullptr, nullptr, 0);
    return refiner_->count_call(plan.predicted_time, &plan.busy, &busy_since(busy_before_),
                                seconds_since(began_));
}

void Refinement::nonblocking_began(const Call *call, const Plan &plan, bool alone) {
    if (!refiner_) return;
    ++calls_;
    if (alone) { // its evidence when it completes, if nothing else begins meanwhile
        sole_ = call;
        sole_busy_before_ = busy_now();
        sole_began_ = sole_last_drive_ = std::chrono::steady_clock::now();
        sole_longest_gap_ = 0;
    }
    if (!refiner_->count_call(plan.predicted_time, nullptr, nullptr, 0)) return;
    agreement_in_ = refiner_->evidence();
    agreement_out_.assign(agreement_in_.size(), 0.0);
    // A nonblocking call ended the window: the agreement must not wait for the other ranks.
    agreement_ = start_agreement(module_->context->dup, agreement_in_.data(), agreement_out_.data(),
                                 int(agreement_in_.size()), &ompi_mpi_op_sum.op);
    pending_ = agreement_ == nullptr; // failed to start: sums to nothing at the next poll
}

void Refinement::watch_sole(const Topology &topo, const Plan &plan, bool done) {
    const auto now = std::chrono::steady_clock::now();
    sole_longest_gap_ =
        std::max(sole_longest_gap_, std::chrono::duration<double>(now - sole_last_drive_).count());
    sole_last_drive_ = now;
    if (!done) return;
    sole_ = nullptr;
    // Stages end when the progress loop sees them end: a call left undriven while the
    // program computed would charge that time to whichever dimensions were busy.
    if (gives_evidence(topo, plan) && driven_throughout(sole_longest_gap_, plan.predicted_time))
        refiner_->add_evidence(plan.busy, busy_since(sole_busy_before_),
                               seconds_since(sole_began_));
}

void Refinement::left(const Call *call) {
    if (sole_ == call) sole_ = nullptr;
    waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), call), waiting_.end());
}

const std::vector<double> *Refinement::poll() {
    if (pending_) {
        pending_ = false;
        return &agreement_out_; // zeros
    }
    if (!agreement_ || !REQUEST_COMPLETE(agreement_)) return nullptr;
    const bool ok = agreement_->req_status.MPI_ERROR == OMPI_SUCCESS;
    ompi_request_free(&agreement_);
    agreement_ = nullptr;
    // A failed agreement revises nothing here; Open MPI's error handler has the last word.
    if (!ok) agreement_out_.assign(agreement_out_.size(), 0.0);
    return &agreement_out_;
}

std::optional<Topology> Refinement::revise(const std::vector<double> &agreed,
                                           const Topology &current, ompi_communicator_t *comm) {
    const std::optional<std::vector<double>> factors = refiner_->revise(agreed);
    if (!factors) return std::nullopt;
    // Later calls plan anew from these rates (the plan cache is keyed by the topology).
    Topology revised = with_bandwidth_factors(current, *factors);
    std::string said;
    for (size_t d = 0; d < factors->size(); ++d) {
        char factor[32];
        snprintf(factor, sizeof factor, "%s%.3g", d ? "," : "", (*factors)[d]);
        said += factor;
    }
    LogEvent("rates")
        .add("dims", revised.to_spec())
        .add("factors", said)
        .add("calls", (long long)calls_)
        .add("why", "the dimensions' busy time against their plans differed by more than "
                    "coll_themis_refine_threshold")
        .emit(1, comm);
    keep_revised_rates(comm, rates_kept_, revised);
    return revised;
}

void refine_rates(mca_coll_themis_module_t *m, Context &ctx) {
    const std::vector<double> &mine = ctx.rate_evidence();
    thread_local std::vector<double> sums; // its room kept: nothing allocated once warm
    sums.assign(mine.size(), 0.0);
    // A failed agreement revises nothing here; Open MPI's error handler has the last word.
    if (!agree_doubles(m, mine.data(), sums.data(), int(mine.size()), &ompi_mpi_op_sum.op))
        sums.assign(mine.size(), 0.0);
    ctx.revise_rates(sums);
}

} // namespace themis
