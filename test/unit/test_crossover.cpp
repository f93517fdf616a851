// Unit tests of src/crossover: the trial schedule of a bin (which module runs each call,
// which calls are timed, when the ranks agree), the decision from agreed times, the sizes
// outside the measured range, and that ranks with different clocks decide alike.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "crossover.h"

using namespace themis;
using Runner = Crossover::Runner;

namespace {

constexpr int kAllreduce = 0, kAllgather = 3;
constexpr size_t k64K = size_t(64) << 10;

// The steps of a bin's first `n` calls of `bytes`.
std::vector<Crossover::Step> steps(Crossover &c, int collective, size_t bytes, int n) {
    std::vector<Crossover::Step> out;
    for (int i = 0; i < n; ++i) out.push_back(c.step(collective, bytes));
    return out;
}

// Runs a bin's trial up to its agreement, recording `themis` and `below` seconds for every
// timed run of each.
void run_trial(Crossover &c, int collective, size_t bytes, double themis, double below) {
    for (;;) {
        const Crossover::Step s = c.step(collective, bytes);
        if (s.agree) return;
        if (s.timed)
            c.record(collective, bytes, s.runner, s.runner == Runner::kThemis ? themis : below);
    }
}

} // namespace

TEST(Crossover, ATrialRunsEachModuleBackToBackTimingAllButItsFirstThenAgrees) {
    Crossover c;
    const std::vector<Crossover::Step> s = steps(c, kAllreduce, k64K, 10);
    // Call 0: themis untimed; 1-4: below, 1 untimed; 5-8: themis, 5 untimed; 9: agree.
    const Runner expect[] = {Runner::kThemis, Runner::kBelow,  Runner::kBelow,
                             Runner::kBelow,  Runner::kBelow,  Runner::kThemis,
                             Runner::kThemis, Runner::kThemis, Runner::kThemis};
    const bool timed[] = {false, false, true, true, true, false, true, true, true};
    for (int i = 0; i < 9; ++i) {
        EXPECT_EQ(s[size_t(i)].runner, expect[i]) << i;
        EXPECT_EQ(s[size_t(i)].timed, timed[i]) << i;
        EXPECT_FALSE(s[size_t(i)].agree) << i;
    }
    EXPECT_TRUE(s[9].agree);
    EXPECT_EQ(std::count_if(s.begin(), s.end(), [](auto x) { return x.timed; }),
              2 * Crossover::kSamples);
    EXPECT_FALSE(c.decided(kAllreduce, k64K).has_value()) << "undecided until decide()";
}

TEST(Crossover, TheBinGoesToTheFasterForGoodAndIsNeverTimedAgain) {
    Crossover c;
    run_trial(c, kAllreduce, k64K, 0.002, 0.001);
    EXPECT_EQ(c.decide(kAllreduce, k64K, c.trial_times(kAllreduce, k64K)), Runner::kBelow);
    for (const Crossover::Step &s : steps(c, kAllreduce, k64K, 20)) {
        EXPECT_EQ(s.runner, Runner::kBelow);
        EXPECT_FALSE(s.timed || s.agree);
    }
    EXPECT_EQ(c.decided(kAllreduce, k64K), Runner::kBelow);

    run_trial(c, kAllreduce, 4 * k64K, 0.003, 0.005);
    EXPECT_EQ(c.decide(kAllreduce, 4 * k64K, c.trial_times(kAllreduce, 4 * k64K)), Runner::kThemis);
    EXPECT_EQ(c.decided(kAllreduce, 4 * k64K), Runner::kThemis);
}

TEST(Crossover, ThemisWinsABinOnlyByTheMargin) {
    // The module below at 1 ms: themis takes the bin at 0.89 ms (11 % faster), not at
    // 0.95 ms (5 % faster; the allgather trial that OSU's long run then found 2x slower).
    Crossover c;
    run_trial(c, kAllgather, k64K, 0.95e-3, 1e-3);
    EXPECT_EQ(c.decide(kAllgather, k64K, c.trial_times(kAllgather, k64K)), Runner::kBelow);
    run_trial(c, kAllgather, 2 * k64K, 0.89e-3, 1e-3);
    EXPECT_EQ(c.decide(kAllgather, 2 * k64K, c.trial_times(kAllgather, 2 * k64K)), Runner::kThemis);
}

TEST(Crossover, TrialTimesAreEachRunsMean) {
    // Skew moves time between consecutive calls (12 + 3 + 15 ms on themis: one call
    // finished early at a late rank, the next waited): the mean holds, 20 and 10 ms.
    Crossover c;
    const double below[] = {0.030, 0.010, 0.020}, themis[] = {0.012, 0.003, 0.015};
    int b = 0, t = 0;
    for (;;) {
        const Crossover::Step s = c.step(kAllgather, k64K);
        if (s.agree) break;
        if (!s.timed) continue;
        c.record(kAllgather, k64K, s.runner,
                 s.runner == Runner::kThemis ? themis[t++] : below[b++]);
    }
    ASSERT_EQ(b, 3);
    ASSERT_EQ(t, 3);
    EXPECT_DOUBLE_EQ(c.trial_times(kAllgather, k64K).below, 0.020);
    EXPECT_DOUBLE_EQ(c.trial_times(kAllgather, k64K).themis, 0.010);
    EXPECT_THROW(c.record(kAllgather, k64K, Runner::kThemis, 0.01), std::logic_error);
}

TEST(Crossover, ARunnerNeverTimedCountsAsInfinitelySlow) {
    // A rank whose timed runs failed records nothing: its times are infinite, and the
    // agreement (the largest over the ranks) sends the bin below on every rank.
    Crossover c;
    for (int i = 0; i < 9; ++i) c.step(kAllreduce, k64K);
    EXPECT_TRUE(std::isinf(c.trial_times(kAllreduce, k64K).themis));
    EXPECT_EQ(c.decide(kAllreduce, k64K, c.trial_times(kAllreduce, k64K)), Runner::kBelow);
}

TEST(Crossover, SizesOutsideTheMeasuredRangeAreNeverTried) {
    Crossover c;
    for (size_t bytes : {size_t(0), size_t(1), Crossover::kFloorBytes - 1}) {
        EXPECT_EQ(c.decided(kAllreduce, bytes), Runner::kBelow) << bytes;
        const Crossover::Step s = c.step(kAllreduce, bytes);
        EXPECT_EQ(s.runner, Runner::kBelow) << bytes;
        EXPECT_FALSE(s.timed || s.agree) << bytes;
    }
    for (size_t bytes : {Crossover::kCeilingBytes, size_t(1) << 30}) {
        EXPECT_EQ(c.decided(kAllreduce, bytes), Runner::kThemis) << bytes;
        const Crossover::Step s = c.step(kAllreduce, bytes);
        EXPECT_EQ(s.runner, Runner::kThemis) << bytes;
        EXPECT_FALSE(s.timed || s.agree) << bytes;
    }
    // The edges of the range are in it: their first calls are a trial's.
    EXPECT_FALSE(c.decided(kAllreduce, Crossover::kFloorBytes).has_value());
    EXPECT_FALSE(c.decided(kAllreduce, Crossover::kCeilingBytes - 1).has_value());
}

TEST(Crossover, BinsArePowersOfTwoPerCollective) {
    Crossover c;
    // 64 KiB and 128 KiB - 1 share a bin: the second size's first call is the trial's second.
    EXPECT_EQ(c.step(kAllreduce, k64K).runner, Runner::kThemis);
    EXPECT_EQ(c.step(kAllreduce, 2 * k64K - 1).runner, Runner::kBelow);
    EXPECT_TRUE(c.step(kAllreduce, 2 * k64K - 1).timed) << "the trial's third call is timed";
    // 128 KiB, and allgather's 64 KiB, start trials of their own.
    EXPECT_EQ(c.step(kAllreduce, 2 * k64K).runner, Runner::kThemis);
    EXPECT_EQ(c.step(kAllgather, k64K).runner, Runner::kThemis);
    EXPECT_EQ(Crossover::bin_of(k64K), 16);
    EXPECT_EQ(Crossover::bin_of(2 * k64K - 1), 16);
    EXPECT_EQ(Crossover::bin_bytes(16), k64K);
}

TEST(Crossover, RanksWithDifferentClocksDecideAlikeFromAgreedTimes) {
    // Rank 0 alone would pick themis (1 ms vs 2 ms), rank 1 alone below (5 ms vs 3 ms); the
    // agreement takes each runner's slowest rank: themis 5 ms, below 3 ms: below, on both.
    Crossover rank0, rank1;
    run_trial(rank0, kAllreduce, k64K, 0.001, 0.002);
    run_trial(rank1, kAllreduce, k64K, 0.005, 0.003);
    const Crossover::Times t0 = rank0.trial_times(kAllreduce, k64K),
                           t1 = rank1.trial_times(kAllreduce, k64K);
    const Crossover::Times agreed{std::max(t0.themis, t1.themis), std::max(t0.below, t1.below)};
    EXPECT_EQ(rank0.decide(kAllreduce, k64K, agreed), Runner::kBelow);
    EXPECT_EQ(rank1.decide(kAllreduce, k64K, agreed), Runner::kBelow);
}

TEST(Crossover, EqualTimesGoBelow) {
    Crossover c;
    run_trial(c, kAllreduce, k64K, 0.002, 0.002);
    EXPECT_EQ(c.decide(kAllreduce, k64K, c.trial_times(kAllreduce, k64K)), Runner::kBelow);
}

TEST(Crossover, RejectsACollectiveItDoesNotKnow) {
    Crossover c;
    EXPECT_THROW(c.step(Crossover::kCollectives, k64K), std::invalid_argument);
    EXPECT_THROW(c.step(-1, k64K), std::invalid_argument);
}
