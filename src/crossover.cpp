// crossover.cpp: the trial schedule of crossover.h, and the decision.
#include "crossover.h"

#include <stdexcept>

namespace themis {

namespace {
// The call index of a bin's trial at which its ranks agree and decide (crossover.h): after
// the untimed first, a run of 1 + kSamples calls on each module.
constexpr int kRun = 1 + Crossover::kSamples;
constexpr int kAgreeCall = 1 + 2 * kRun;
} // namespace

int Crossover::bin_of(size_t bytes) {
    int bin = 0;
    while (bytes >>= 1) ++bin;
    return bin;
}

Crossover::Bin &Crossover::bin(int collective, size_t bytes) {
    return const_cast<Bin &>(static_cast<const Crossover *>(this)->bin(collective, bytes));
}

const Crossover::Bin &Crossover::bin(int collective, size_t bytes) const {
    if (collective < 0 || collective >= kCollectives)
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
    if (call == 0) return {Runner::kThemis, false, false};
    if (call < kAgreeCall) {
        const int in_run = (call - 1) % kRun; // 0: the run's untimed first call
        const Runner runner = call <= kRun ? Runner::kBelow : Runner::kThemis;
        return {runner, in_run != 0, false};
    }
    return {Runner::kThemis, false, true}; // the runner is what decide() says
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

Crossover::Runner Crossover::decide(int collective, size_t bytes, Times agreed) {
    Bin &b = bin(collective, bytes);
    b.winner = agreed.themis < (1 - kMargin) * agreed.below ? Runner::kThemis : Runner::kBelow;
    return *b.winner;
}

} // namespace themis
