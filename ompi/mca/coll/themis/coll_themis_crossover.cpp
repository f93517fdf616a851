// coll_themis_crossover.cpp: the crossover's glue (coll_themis_crossover.h).
#include "coll_themis_crossover.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "coll_themis_context.h"
#include "coll_themis_inherit.h"
#include "coll_themis_log.h"
#include "coll_themis_test_hooks.h"
#include "ompi/op/op.h"
#include "ompi/request/request.h"
#include "opal/runtime/opal_progress.h"

namespace themis {

namespace {

// The core's collective of a crossover collective (THEMIS_COLLECTIVE_*).
Collective collective_of(int collective) {
#define THEMIS_CORE_COLLECTIVE(X, name, id, mpi, core) Collective::core,
    static const Collective cores[THEMIS_COLLECTIVE_COUNT] = {
        THEMIS_COLLECTIVES(THEMIS_CORE_COLLECTIVE, _)};
#undef THEMIS_CORE_COLLECTIVE
    return cores[collective];
}

// Its name, as its slot's ("allreduce", "bcast", ...).
const char *collective_name(int collective) {
#define THEMIS_SLOT_NAME(X, name, id, mpi, core) #name,
    static const char *const names[THEMIS_COLLECTIVE_COUNT] = {
        THEMIS_COLLECTIVES(THEMIS_SLOT_NAME, _)};
#undef THEMIS_SLOT_NAME
    return names[collective];
}

} // namespace

void TrialAgreements::start(ompi_communicator_t *dup, int collective, int bin,
                            Crossover::Times mine) {
    InFlight &a = in_flight_.emplace_back();
    a.collective = collective;
    a.bin = bin;
    a.in[0] = mine.themis;
    a.in[1] = mine.below;
    a.request = start_agreement(dup, a.in, a.out, 2, &ompi_mpi_op_max.op);
}

Crossover::Times TrialAgreements::finish(int collective, int bin) {
    const auto it = std::find_if(in_flight_.begin(), in_flight_.end(), [&](const InFlight &a) {
        return a.collective == collective && a.bin == bin;
    });
    Crossover::Times agreed{std::numeric_limits<double>::infinity(), 0};
    if (it == in_flight_.end()) return agreed;
    if (it->request) {
        while (!REQUEST_COMPLETE(it->request)) opal_progress();
        if (it->request->req_status.MPI_ERROR == OMPI_SUCCESS) agreed = {it->out[0], it->out[1]};
        ompi_request_free(&it->request);
    }
    in_flight_.erase(it);
    return agreed;
}

void TrialAgreements::finish_all() {
    while (!in_flight_.empty()) finish(in_flight_.front().collective, in_flight_.front().bin);
}

const char *size_unsupported(const mca_coll_themis_module_t *m, int collective, bool blocking,
                             size_t bytes) {
    const bool below_min_bytes = bytes < mca_coll_themis_component.min_bytes;
    if (!crossover_measured()) return below_min_bytes ? "below coll_themis_min_bytes" : nullptr;
    if (bytes < Crossover::kFloorBytes) return "below the sizes whose crossover is measured";
    if (blocking) return nullptr;
    std::optional<Crossover::Runner> known;
    if (m->context != nullptr) known = m->context->crossover.decided(collective, bytes);
    if (known)
        return *known == Crossover::Runner::kBelow ? "the module below measured faster at this size"
                                                   : nullptr;
    return below_min_bytes ? "below coll_themis_min_bytes, the crossover not measured yet"
                           : nullptr;
}

Crossover::Step crossover_step(mca_coll_themis_module_t *m, int collective, size_t bytes) {
    Crossover &crossover = m->context->crossover;
    Crossover::Step step = crossover.step(collective, bytes);
    if (!step.settle) return step;
    const Crossover::Times agreed = m->context->trials.finish(collective, Crossover::bin_of(bytes));
    Context &ctx = *context_of(m);
    const Crossover::Bounds bounds = ctx.crossover_bounds(collective_of(collective), bytes);
    step = crossover.decide(collective, bytes, agreed, bounds);
    if (!crossover.decided(collective, bytes)) return step; // the trial goes on
    const bool tried = std::isfinite(agreed.below);
    LogEvent event("crossover");
    event.add("coll", collective_name(collective))
        .add("bytes", Crossover::bin_bytes(Crossover::bin_of(bytes)))
        .add("themis_ms", agreed.themis * 1e3, "%.3f")
        .add("below_ms", agreed.below * 1e3, "%.3f")
        .add("runs", step.runner == Crossover::Runner::kThemis ? "themis" : "below")
        .add("decided_by", tried ? "trial" : "bound");
    if (bounds.below > 0)
        event.add("below_bound_ms", bounds.below * 1e3, "%.3f")
            .add("themis_bound_ms", bounds.themis * 1e3, "%.3f");
    event.emit(1, m->comm);
    keep_group_decision(ctx.key(), collective, bytes, step.runner);
    return step;
}

void crossover_share(mca_coll_themis_module_t *m, int collective, size_t bytes) {
    m->context->trials.start(m->context->dup, collective, Crossover::bin_of(bytes),
                             m->context->crossover.trial_times(collective, bytes));
}

void crossover_record(mca_coll_themis_module_t *m, int collective, size_t bytes,
                      Crossover::Runner runner, double seconds) {
    // Tests (check_crossover.sh) make one side look slower by adding to its timed calls.
    const double added_ms = runner == Crossover::Runner::kThemis ? test_hooks().slow_themis_ms
                                                                 : test_hooks().slow_below_ms;
    m->context->crossover.record(collective, bytes, runner, seconds + added_ms * 1e-3);
}

} // namespace themis
