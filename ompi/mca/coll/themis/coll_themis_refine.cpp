// coll_themis_refine.cpp: the rate refinement's glue (coll_themis_refine.h).
#include "coll_themis_refine.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "coll_themis_context.h"
#include "coll_themis_log.h"
#include "coll_themis_params.h"
#include "ompi/op/op.h"

namespace themis {

namespace {

// A window lasts at least this many times the agreement's predicted time, so that the
// agreement costs at most about 1 % of the calls it follows.
constexpr double kWindowAgreements = 100;
// Evidence only from calls predicted to take this many times the largest latency: their
// busy time is the links' bandwidth, not their latency (which the refiner does not revise).
constexpr double kEvidenceLatencies = 50;
// ... and of at least this many bytes. A transport's buffers let a stage end before its data
// has crossed the link (TCP's send buffer grows to 4 MiB per connection under Linux's
// autotuning), so a call that moves not much more than that has busy times that tell the
// buffers, not the links. On the emulated 2x4 100/200 network with rates right and every
// window revising (threshold 0.01), five windows of 1 MiB All-Reduces moved one dimension's
// factor to 0.16-6.4, of 4 MiB 0.80-1.25, of 8 MiB 0.96-1.05 (bench/RESULTS.md, "Rates
// revised at run time").
constexpr uint64_t kEvidenceBytes = uint64_t(8) << 20;

// The agreement's predicted time: an allreduce of a few doubles, by recursive doubling,
// ceil(log2 peers) steps of each dimension's latency there and back.
double agreement_seconds(const Topology &topo) {
    double seconds = 0;
    for (const Dimension &d : topo.dims())
        seconds += 2 * std::ceil(std::log2(double(std::max(d.peers, 1)))) * d.latency;
    return seconds;
}

} // namespace

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
    const int calls = params().refine_calls;
    const double threshold = params().refine_threshold;
    std::vector<bool> fixed;
    bool any = false;
    for (RateSource source : rates.bandwidth_source) {
        fixed.push_back(source != RateSource::Measured && source != RateSource::Cached);
        any = any || !fixed.back();
    }
    if (!any || calls <= 0 || threshold <= 0) return nullptr;
    return std::make_unique<RateRefiner>(rates.topology.num_dims(), calls,
                                         kWindowAgreements * agreement_seconds(rates.topology),
                                         threshold, std::move(fixed));
}

bool gives_evidence(const Topology &topo, const Plan &plan) {
    if (plan.collective != Collective::AllReduce || plan.work_bytes < kEvidenceBytes) return false;
    double latency = 0;
    for (const Dimension &d : topo.dims()) latency = std::max(latency, d.latency);
    return plan.predicted_time >= kEvidenceLatencies * latency;
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

ompi_request_t *start_refine_agreement(mca_coll_themis_module_t *m, const double *in, double *out,
                                       int n) {
    ompi_communicator_t *dup = m->context->dup;
    ompi_request_t *request = nullptr;
    if (dup->c_coll->coll_iallreduce(in, out, n, &ompi_mpi_double.dt, &ompi_mpi_op_sum.op, dup,
                                     &request, dup->c_coll->coll_iallreduce_module) != OMPI_SUCCESS)
        return nullptr;
    return request;
}

} // namespace themis
