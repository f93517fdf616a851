// rate_refiner.cpp: windows of evidence, the median, the decision (rate_refiner.h).
#include "rate_refiner.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace themis {

namespace {

// A dimension busy for less than this share of its call had slack (rate_refiner.h). A balanced
// plan keeps every dimension busy 77-95 % of each 16 MiB All-Reduce on each rank of the
// emulated 2x2x2x2 network (traced, 16 ranks on 2 cores); a held-up dimension 30-70 %.
constexpr double kBusyShare = 0.75;

} // namespace

RateRefiner::RateRefiner(int dims, int window, double min_window_seconds, double threshold,
                         std::vector<bool> fixed)
    : dims_(dims), window_(window), min_window_seconds_(min_window_seconds), threshold_(threshold),
      fixed_(std::move(fixed)), ratios_(size_t(dims)), evidence_(2 * size_t(dims)),
      factors_(size_t(dims), 1.0) {
    if (dims < 1 || window < 1 || min_window_seconds < 0 || threshold < 0 ||
        fixed_.size() != size_t(dims))
        throw std::invalid_argument("rate refiner: bad dimensions, window or threshold");
    for (std::vector<double> &r : ratios_) r.reserve(size_t(window));
}

bool RateRefiner::count_call(double seconds, const std::vector<double> *predicted,
                             const std::vector<double> *measured, double elapsed) {
    if (predicted && measured) add_evidence(*predicted, *measured, elapsed);
    seconds_ += seconds;
    return ++calls_ >= window_ && seconds_ >= min_window_seconds_;
}

void RateRefiner::add_evidence(const std::vector<double> &predicted,
                               const std::vector<double> &measured, double elapsed) {
    for (int d = 0; d < dims_; ++d) {
        const double p = predicted[size_t(d)], m = measured[size_t(d)];
        if (p <= 0 || m <= 0) continue;
        // Busy for the share or more, p / m is at most the cap: counted whole.
        const double slack_cap = std::max(1.0, p / (kBusyShare * std::max(elapsed, m)));
        ratios_[size_t(d)].push_back(std::min(p / m, slack_cap));
    }
}

const std::vector<double> &RateRefiner::evidence() {
    for (int d = 0; d < dims_; ++d) {
        std::vector<double> &r = ratios_[size_t(d)];
        double median = 0;
        if (!r.empty()) {
            // The upper middle one of an even count: nth_element, no allocation.
            std::nth_element(r.begin(), r.begin() + long(r.size() / 2), r.end());
            median = r[r.size() / 2];
        }
        evidence_[size_t(d)] = median;
        evidence_[size_t(dims_ + d)] = r.empty() ? 0 : 1;
    }
    return evidence_;
}

std::optional<std::vector<double>> RateRefiner::revise(const std::vector<double> &agreed) {
    if (agreed.size() != evidence_.size())
        throw std::invalid_argument("rate refiner: agreed evidence of the wrong size");
    calls_ = 0;
    seconds_ = 0;
    for (std::vector<double> &r : ratios_) r.clear();
    double log_sum = 0;
    int measured = 0;
    for (int d = 0; d < dims_; ++d) {
        const double ranks = agreed[size_t(dims_ + d)];
        double &f = factors_[size_t(d)];
        f = ranks > 0 && !fixed_[size_t(d)] ? agreed[size_t(d)] / ranks : 1.0;
        if (ranks > 0 && !fixed_[size_t(d)]) {
            log_sum += std::log(f);
            ++measured;
        }
    }
    // Each dimension against the others' geometric mean, not one that holds itself: with it
    // one dimension off by 27 % among three read only 17 % off (and 12 % of two).
    if (threshold_ <= 0 || measured < 2) return std::nullopt;
    bool off = false;
    for (int d = 0; d < dims_; ++d)
        if (agreed[size_t(dims_ + d)] > 0 && !fixed_[size_t(d)]) {
            const double f = factors_[size_t(d)];
            const double others = std::exp((log_sum - std::log(f)) / (measured - 1));
            off = off || std::fabs(f / others - 1) > threshold_;
        }
    if (!off) return std::nullopt;
    return factors_;
}

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
// buffers, not the links (bench/RESULTS.md, "Rates revised at run time").
constexpr uint64_t kEvidenceBytes = uint64_t(8) << 20;
// Only All-Reduces: a Reduce-Scatter's or an All-Gather's busy times read some dimensions
// several times faster than their rates with the rates right (the same section).
constexpr Collective kEvidenceCollective = Collective::AllReduce;
// A nonblocking call's longest gap between drives, as a share of its predicted time: a
// quarter changes one dimension's factor by at most 1 / 1.25, inside the default threshold;
// shorter gaps are a busy machine's scheduler, as in blocking calls.
constexpr double kLongestDriveGap = 0.25;

// The agreement's predicted time: an allreduce of a few doubles, by recursive doubling,
// ceil(log2 peers) steps of each dimension's latency there and back.
double agreement_seconds(const Topology &topo) {
    double seconds = 0;
    for (const Dimension &d : topo.dims())
        seconds += 2 * std::ceil(std::log2(double(std::max(d.peers, 1)))) * d.latency;
    return seconds;
}

} // namespace

bool gives_evidence(const Topology &topo, const Plan &plan) {
    if (plan.collective != kEvidenceCollective || plan.work_bytes < kEvidenceBytes) return false;
    double latency = 0;
    for (const Dimension &d : topo.dims()) latency = std::max(latency, d.latency);
    return plan.predicted_time >= kEvidenceLatencies * latency;
}

bool driven_throughout(double longest_gap, double predicted) {
    return longest_gap <= kLongestDriveGap * predicted;
}

std::unique_ptr<RateRefiner> make_rate_refiner(const Topology &topo,
                                               const std::vector<RateSource> &bandwidth_source,
                                               int calls, double threshold) {
    std::vector<bool> fixed;
    bool any = false;
    for (RateSource source : bandwidth_source) {
        fixed.push_back(source != RateSource::Measured && source != RateSource::Cached);
        any = any || !fixed.back();
    }
    if (!any || calls <= 0 || threshold <= 0) return nullptr;
    return std::make_unique<RateRefiner>(topo.num_dims(), calls,
                                         kWindowAgreements * agreement_seconds(topo), threshold,
                                         std::move(fixed));
}

} // namespace themis
