// crossover.cpp: the trial schedule of crossover.h, and the decision.
#include "crossover.h"

#include "ordering.h"

#include <algorithm>
#include <stdexcept>

namespace themis {

namespace {
// The calls of a bin's trial (crossover.h): themis's untimed first and its kSamples timed
// (the last shares), the module below's untimed first and its kSamples timed (the first
// settles), the likelier winner's timed call (it shares) and untimed one, the final settling.
constexpr int kBelowFirstCall = 1 + Crossover::kSamples;
constexpr int kEarlySettleCall = kBelowFirstCall + 1;
constexpr int kLikelierCall = kBelowFirstCall + Crossover::kSamples + 1;
constexpr int kFinalSettleCall = kLikelierCall + 2;
// The most timed calls a runner has: its kSamples, and the likelier winner's.
constexpr int kMostSamples = Crossover::kSamples + 1;
} // namespace

double below_lower_bound(const Topology &topo, Collective coll, double bytes) {
    const int n = topo.size();
    if (n < 2 || topo.num_dims() == 0) return 0;
    // A rooted collective's module below may use trees that cross the fast links only:
    // nothing below the ideal is sure.
    if (collective_info(coll).rooted) return ideal_time(topo, coll, bytes);
    const double phases = static_cast<double>(collective_info(coll).phases.size());
    double slowest = topo.dim(0).bandwidth;
    std::vector<int> order;
    for (int d = 0; d < topo.num_dims(); ++d) {
        slowest = std::min(slowest, topo.dim(d).bandwidth);
        if (topo.dim(d).peers > 1) order.push_back(d);
    }
    const double ring = phases * bytes * (n - 1) / n / slowest;
    // One dimension after another: each carries its share of what the dimensions before it
    // left; pipelined perfectly, the busiest one sets the time. Every order, the best kept
    // (a network of few dimensions: at most 8! orders).
    double levels = ring;
    if (order.size() <= 8) {
        std::sort(order.begin(), order.end());
        do {
            double left = bytes, busiest = 0;
            for (int d : order) {
                const Dimension &dim = topo.dim(d);
                busiest =
                    std::max(busiest, phases * left * (dim.peers - 1) / dim.peers / dim.bandwidth);
                left /= dim.peers;
            }
            levels = std::min(levels, busiest);
        } while (std::next_permutation(order.begin(), order.end()));
    }
    return std::min(ring, levels);
}

int Crossover::bin_of(size_t bytes) {
    int bin = 0;
    while (bytes >>= 1) ++bin;
    return bin;
}

Crossover::Bin &Crossover::bin(int collective, size_t bytes) {
    return const_cast<Bin &>(static_cast<const Crossover *>(this)->bin(collective, bytes));
}

const Crossover::Bin &Crossover::bin(int collective, size_t bytes) const {
    if (collective < 0 || collective >= collectives())
        throw std::invalid_argument("crossover: no such collective");
    if (bytes < kFloorBytes || bytes >= kCeilingBytes)
        throw std::invalid_argument("crossover: size outside the measured range");
    return bins_[size_t(collective)][size_t(bin_of(bytes))];
}

std::optional<Crossover::Runner> Crossover::decided(int collective, size_t bytes) const {
    if (bytes < kFloorBytes) return Runner::kBelow;
    if (bytes >= kCeilingBytes) return Runner::kThemis;
    return bin(collective, bytes).winner;
}

Crossover::Step Crossover::trial_step(const Bin &b, int call) {
    if (call < kBelowFirstCall) return {Runner::kThemis, call > 0, false, call == kSamples};
    if (call == kBelowFirstCall) return {Runner::kBelow, false, false, false};
    if (call < kLikelierCall) return {Runner::kBelow, true, call == kEarlySettleCall, false};
    if (call < kFinalSettleCall)
        return {b.likelier, call == kLikelierCall, false, call == kLikelierCall};
    return {Runner::kThemis, false, true, false}; // the runner decide() gives
}

Crossover::Step Crossover::step(int collective, size_t bytes) {
    if (std::optional<Runner> known = decided(collective, bytes))
        return {*known, false, false, false};
    Bin &b = bin(collective, bytes);
    return trial_step(b, b.calls++);
}

void Crossover::record(int collective, size_t bytes, Runner runner, double seconds) {
    Bin &b = bin(collective, bytes);
    Samples &s = runner == Runner::kThemis ? b.themis : b.below;
    if (s.count == kMostSamples)
        throw std::logic_error("crossover: more samples than the trial takes");
    s.least = std::min(s.least, seconds);
    ++s.count;
}

Crossover::Times Crossover::trial_times(int collective, size_t bytes) const {
    const Bin &b = bin(collective, bytes);
    return {b.themis.least, b.below.least};
}

Crossover::Step Crossover::decide(int collective, size_t bytes, Times agreed, Bounds bounds) {
    Bin &b = bin(collective, bytes);
    const int call = b.calls - 1;
    if (call == kEarlySettleCall) {
        // Clearly faster than the module below could be, in a time the network can give: no
        // trial. Else the trial goes on, the call between the agreements on the likelier.
        if (bounds.below > 0 && agreed.themis * kClear <= bounds.below &&
            agreed.themis >= kBelievable * bounds.themis)
            b.winner = Runner::kThemis;
        if (agreed.themis < (1 - kMargin) * bounds.below) b.likelier = Runner::kThemis;
    } else {
        // Themis's time under its least: the links let a burst through, which a run of calls
        // meets no more; each time then counts as at least its runner's least. Where themis's
        // is not, the module below's under its own least took a faster path than the rates
        // themis measured (shared memory, an offload): its time stands.
        const bool burst = agreed.themis < bounds.themis;
        const double themis = burst ? bounds.themis : agreed.themis;
        const double below = burst ? std::max(agreed.below, bounds.below) : agreed.below;
        b.winner = themis < (1 - kMargin) * below ? Runner::kThemis : Runner::kBelow;
    }
    if (b.winner) return {*b.winner, false, false, false};
    Step next = trial_step(b, call);
    next.settle = false;
    return next;
}

std::vector<Crossover::Decision> Crossover::decisions() const {
    std::vector<Decision> out;
    for (int c = 0; c < collectives(); ++c)
        for (int b = 0; b < kBins; ++b)
            if (const std::optional<Runner> winner = bins_[size_t(c)][size_t(b)].winner)
                out.push_back({c, b, *winner});
    return out;
}

void Crossover::adopt(const std::vector<Decision> &decided) {
    for (const Decision &d : decided) {
        if (d.collective < 0 || d.collective >= collectives() || d.bin < 0 || d.bin >= kBins)
            throw std::invalid_argument("crossover: no such bin");
        Bin &b = bins_[size_t(d.collective)][size_t(d.bin)];
        if (b.calls == 0) b.winner = d.runner;
    }
}

} // namespace themis
