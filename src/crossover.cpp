// crossover.cpp: the trial schedule of crossover.h, and the decision.
#include "crossover.h"

#include "ordering.h"

#include <algorithm>
#include <stdexcept>

namespace themis {

namespace {
// The calls of a bin's trial (crossover.h): themis's untimed first and its kSamples timed,
// the first agreement (and the module below's untimed first), the module below's kSamples
// timed, the final agreement.
constexpr int kEarlyAgreeCall = 1 + Crossover::kSamples;
constexpr int kFinalAgreeCall = kEarlyAgreeCall + 1 + Crossover::kSamples;
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

Crossover::Step Crossover::step(int collective, size_t bytes) {
    if (std::optional<Runner> known = decided(collective, bytes)) return {*known, false, false};
    const int call = bin(collective, bytes).calls++;
    if (call < kEarlyAgreeCall) return {Runner::kThemis, call > 0, false};
    if (call == kEarlyAgreeCall) return {Runner::kBelow, false, true};
    if (call < kFinalAgreeCall) return {Runner::kBelow, true, false};
    return {Runner::kThemis, false, true};
}

void Crossover::record(int collective, size_t bytes, Runner runner, double seconds) {
    Bin &b = bin(collective, bytes);
    Samples &s = runner == Runner::kThemis ? b.themis : b.below;
    if (s.count == kSamples) throw std::logic_error("crossover: more samples than the trial takes");
    s.sum += seconds;
    ++s.count;
}

Crossover::Times Crossover::trial_times(int collective, size_t bytes) const {
    const Bin &b = bin(collective, bytes);
    return {b.themis.mean(), b.below.mean()};
}

Crossover::Runner Crossover::decide(int collective, size_t bytes, Times agreed, Bounds bounds) {
    Bin &b = bin(collective, bytes);
    if (b.calls - 1 == kEarlyAgreeCall) {
        // Clearly faster than the module below could be, in a time the network can give: no
        // trial. Else the trial goes on.
        if (bounds.below > 0 && agreed.themis * kClear <= bounds.below &&
            agreed.themis >= kBelievable * bounds.themis)
            b.winner = Runner::kThemis;
        return b.winner.value_or(Runner::kBelow);
    }
    b.winner = agreed.themis < (1 - kMargin) * agreed.below ? Runner::kThemis : Runner::kBelow;
    return *b.winner;
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
