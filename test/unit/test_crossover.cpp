// Unit tests of src/crossover: the trial schedule of a bin (which module runs each call,
// which calls are timed, when the ranks' agreements start and are due), the decision from agreed
// times, the bin decided untried where themis is clearly under the module below's least time (and
// that least time itself, against sums written out by hand), the sizes outside the measured range,
// decisions handed to another communicator, and that ranks with different clocks decide alike.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "crossover.h"
#include "ordering.h"

using namespace themis;
using Runner = Crossover::Runner;

namespace {

constexpr int kAllreduce = 0, kAllgather = 3, kCollectives = 4; // the component's numbering
constexpr size_t k64K = size_t(64) << 10;

// The steps of a bin's first `n` calls of `bytes`.
std::vector<Crossover::Step> steps(Crossover &c, int collective, size_t bytes, int n) {
    std::vector<Crossover::Step> out;
    for (int i = 0; i < n; ++i) out.push_back(c.step(collective, bytes));
    return out;
}

// Runs a bin's trial up to its final settling, recording `themis` and `below` seconds for
// every timed run of each; the first settling, with no bound known, lets the trial go on.
void run_trial(Crossover &c, int collective, size_t bytes, double themis, double below) {
    bool settled_once = false;
    for (;;) {
        Crossover::Step s = c.step(collective, bytes);
        if (s.settle && settled_once) return;
        if (s.settle) {
            settled_once = true;
            s = c.decide(collective, bytes, c.trial_times(collective, bytes));
            EXPECT_EQ(s.runner, Runner::kBelow);
            EXPECT_FALSE(c.decided(collective, bytes).has_value());
        }
        if (s.timed)
            c.record(collective, bytes, s.runner, s.runner == Runner::kThemis ? themis : below);
    }
}

} // namespace

TEST(Crossover, ATrialTimesEachModuleAfterAnUntimedCallAndSettlesTwoCallsAfterSharing) {
    Crossover c(kCollectives);
    const std::vector<Crossover::Step> s = steps(c, kAllreduce, k64K, 7);
    // Call 0: themis untimed; 1: themis timed, shared; 2: below untimed; 3: the first
    // agreement due, then below timed; 4: the likelier (below: no bound known) timed, shared;
    // 5: the likelier untimed; 6: the second agreement due. In a run of 5 calls after 2
    // warm-ups (OSU -i 5 -x 2) at most 2 of the 5 run on the module that loses where the
    // likelier wins, and none waits for the other ranks.
    const Runner expect[] = {Runner::kThemis, Runner::kThemis, Runner::kBelow,
                             Runner::kBelow,  Runner::kBelow,  Runner::kBelow};
    const bool timed[] = {false, true, false, true, true, false};
    const bool shared[] = {false, true, false, false, true, false};
    for (int i = 0; i < 6; ++i) {
        EXPECT_EQ(s[size_t(i)].runner, expect[i]) << i;
        EXPECT_EQ(s[size_t(i)].timed, timed[i]) << i;
        EXPECT_EQ(s[size_t(i)].share, shared[i]) << i;
        EXPECT_EQ(s[size_t(i)].settle, i == 3) << i;
    }
    EXPECT_TRUE(s[6].settle);
    EXPECT_FALSE(s[6].share || s[6].timed);
    EXPECT_EQ(std::count_if(s.begin(), s.end(), [](auto x) { return x.timed; }),
              2 * Crossover::kSamples + 1);
    EXPECT_FALSE(c.decided(kAllreduce, k64K).has_value()) << "undecided until decide()";
}

TEST(Crossover, ABinClearlyUnderTheBoundIsDecidedAtTheFirstAgreementUntried) {
    // Themis timed at 1 ms; the module below could take no less than 1.2 ms: 1.1 x 1 <= 1.2,
    // so the bin is themis's from the third call on, and nothing runs below.
    Crossover c(kCollectives);
    steps(c, kAllreduce, k64K, 3);
    c.record(kAllreduce, k64K, Runner::kThemis, 1e-3);
    ASSERT_TRUE(c.step(kAllreduce, k64K).settle);
    const Crossover::Step now =
        c.decide(kAllreduce, k64K, c.trial_times(kAllreduce, k64K), {1.2e-3, 0});
    EXPECT_EQ(now.runner, Runner::kThemis);
    EXPECT_FALSE(now.timed || now.settle || now.share);
    EXPECT_EQ(c.decided(kAllreduce, k64K), Runner::kThemis);
    for (const Crossover::Step &s : steps(c, kAllreduce, k64K, 10)) {
        EXPECT_EQ(s.runner, Runner::kThemis);
        EXPECT_FALSE(s.timed || s.settle || s.share);
    }
}

TEST(Crossover, ABinNearTheBoundGoesOnToTheTrial) {
    // 1.05 ms against a bound of 1.1 ms: not kClear under it (the model's rates may be off
    // by that much), so the module below's timed call runs now, shared; no bound at all (0:
    // the rates are defaults) decides nothing either. Nor is themis the likelier: not
    // kMargin under the bound.
    for (double bound : {1.1e-3, 0.0}) {
        Crossover c(kCollectives);
        steps(c, kAllreduce, k64K, 3);
        c.record(kAllreduce, k64K, Runner::kThemis, 1.05e-3);
        ASSERT_TRUE(c.step(kAllreduce, k64K).settle);
        const Crossover::Step now =
            c.decide(kAllreduce, k64K, c.trial_times(kAllreduce, k64K), {bound, 0});
        EXPECT_EQ(now.runner, Runner::kBelow) << bound;
        EXPECT_TRUE(now.timed) << "the module below's timed call";
        EXPECT_FALSE(now.settle || now.share) << bound;
        EXPECT_FALSE(c.decided(kAllreduce, k64K).has_value()) << bound;
        EXPECT_EQ(c.step(kAllreduce, k64K).runner, Runner::kBelow) << "the likelier";
    }
}

TEST(Crossover, ATimeTheNetworkCannotGiveDecidesNothingUntried) {
    // Themis timed at 1.5 ms where it needs at least 3 ms (the links' rates): a burst carried
    // that one call. Far under the module below's 4 ms least, it still goes to trial.
    // Well under 0.9 x 4 ms, themis is the likelier winner: the call after the module below's
    // timed one runs on it, timed, and shares.
    Crossover c(kCollectives);
    steps(c, kAllgather, k64K, 3);
    c.record(kAllgather, k64K, Runner::kThemis, 1.5e-3);
    ASSERT_TRUE(c.step(kAllgather, k64K).settle);
    EXPECT_EQ(c.decide(kAllgather, k64K, c.trial_times(kAllgather, k64K), {4e-3, 3e-3}).runner,
              Runner::kBelow);
    EXPECT_FALSE(c.decided(kAllgather, k64K).has_value());
    c.record(kAllgather, k64K, Runner::kBelow, 2e-3);
    const Crossover::Step likelier = c.step(kAllgather, k64K);
    EXPECT_EQ(likelier.runner, Runner::kThemis);
    EXPECT_TRUE(likelier.timed && likelier.share);
    EXPECT_FALSE(likelier.settle);
    // Within kBelievable of its least time it is believed: 2.9 ms against 3 ms.
    Crossover d(kCollectives);
    steps(d, kAllgather, k64K, 3);
    d.record(kAllgather, k64K, Runner::kThemis, 2.9e-3);
    ASSERT_TRUE(d.step(kAllgather, k64K).settle);
    EXPECT_EQ(d.decide(kAllgather, k64K, d.trial_times(kAllgather, k64K), {4e-3, 3e-3}).runner,
              Runner::kThemis);
}

TEST(Crossover, TheFinalAgreementCountsEachTimeAsAtLeastItsLeast) {
    // Times over their runners' least decide as measured: themis 2 ms against 1 ms.
    Crossover c(kCollectives);
    run_trial(c, kAllreduce, k64K, 2e-3, 1e-3);
    EXPECT_EQ(c.decide(kAllreduce, k64K, c.trial_times(kAllreduce, k64K), {0.5e-3, 0.4e-3}).runner,
              Runner::kBelow);
    // The emulated 2x4's 64 KiB allreduce (bench/RESULTS.md, #48): both lone calls under
    // their least (bursts), the module below's more so: themis 2.76 ms, least 3.10 ms; below
    // 2.13 ms, least 3.99 ms. Counted as 3.10 against 3.99 ms: themis, 22 % under (as the
    // run of calls after it found: themis 3.2-3.7 ms, tuned 5.4 ms).
    Crossover d(kCollectives);
    run_trial(d, kAllreduce, k64K, 2.76e-3, 2.13e-3);
    EXPECT_EQ(
        d.decide(kAllreduce, k64K, d.trial_times(kAllreduce, k64K), {3.99e-3, 3.10e-3}).runner,
        Runner::kThemis);
    // Themis over its least, the module below under its own: no burst, a faster path below
    // (one host's shared memory beside rates themis measured over its transport, as OSU on
    // 2x2 met: least times 0.179 and 0.212 ms): themis 0.185 ms, below 0.150 ms, as measured:
    // below (counted at its least, 0.212 ms, it would lose to themis).
    Crossover f(kCollectives);
    run_trial(f, kAllreduce, 4 * k64K, 0.185e-3, 0.150e-3);
    EXPECT_EQ(
        f.decide(kAllreduce, 4 * k64K, f.trial_times(kAllreduce, 4 * k64K), {0.212e-3, 0.179e-3})
            .runner,
        Runner::kBelow);
    // Equal least times (a rooted collective's: the ideal for both) leave a burst nothing to
    // win by: below, by the margin.
    Crossover e(kCollectives);
    run_trial(e, kAllreduce, k64K, 1e-3, 1.5e-3);
    EXPECT_EQ(e.decide(kAllreduce, k64K, e.trial_times(kAllreduce, k64K), {2e-3, 2e-3}).runner,
              Runner::kBelow);
}

TEST(Crossover, TheModuleBelowsLeastTimeIsTheBetterOfARingAndTheLevels) {
    // 2x4, 100 and 200 Mbit/s per rank (12.5e6 and 25e6 B/s), All-Reduce (2 phases) of
    // S = 1 MB over 8 ranks:
    //   ring at the slowest rate: 2 S 7/8 / 12.5e6 = 0.14 s;
    //   levels, dimension 0 first: dim 0 carries 2 S 1/2, 0.08 s; dim 1 2 (S/2) 3/4, 0.03 s;
    //     busiest 0.08 s; dimension 1 first: dim 1 2 S 3/4, 0.06 s; dim 0 2 (S/4) 1/2,
    //     0.02 s: 0.06 s;
    //   the least: 0.06 s.
    Dimension d0, d1;
    d0.peers = 2;
    d0.bandwidth = 12.5e6;
    d1.peers = 4;
    d1.bandwidth = 25e6;
    const Topology topo({d0, d1});
    EXPECT_NEAR(below_lower_bound(topo, Collective::AllReduce, 1e6), 0.06, 1e-12);
    // One phase for a Reduce-Scatter or an All-Gather: half of it.
    EXPECT_NEAR(below_lower_bound(topo, Collective::AllGather, 1e6), 0.03, 1e-12);
    EXPECT_NEAR(below_lower_bound(topo, Collective::ReduceScatter, 1e6), 0.03, 1e-12);
    // Bcast and Reduce: every rank but the root moves all S, over every dimension at once at
    // best (a tree may keep off the slow links): S / 37.5e6 = 0.02667 s.
    EXPECT_NEAR(below_lower_bound(topo, Collective::Bcast, 1e6), 1e6 / 37.5e6, 1e-12);
    EXPECT_NEAR(below_lower_bound(topo, Collective::Reduce, 1e6), 1e6 / 37.5e6, 1e-12);
    // Themis's own bound there, every dimension at once: 2 S 7/8 / 37.5e6 = 0.0467 s, under.
    EXPECT_LT(ideal_time(topo, Collective::AllReduce, 1e6),
              below_lower_bound(topo, Collective::AllReduce, 1e6));
    // Equal rates: dimension 0 first now (its 2 S 1/2 = 0.08 s is the busiest, against
    // dimension 1 first's 2 S 3/4 = 0.12 s), under the ring's 0.14 s: 0.08 s.
    d1.bandwidth = 12.5e6;
    EXPECT_NEAR(below_lower_bound(Topology({d0, d1}), Collective::AllReduce, 1e6), 0.08, 1e-12);
}

TEST(Crossover, DecisionsPassToAnotherCommunicatorButNotIntoATrialUnderWay) {
    Crossover first(kCollectives);
    run_trial(first, kAllreduce, k64K, 2e-3, 1e-3);
    first.decide(kAllreduce, k64K, first.trial_times(kAllreduce, k64K));
    run_trial(first, kAllgather, 4 * k64K, 1e-3, 2e-3);
    first.decide(kAllgather, 4 * k64K, first.trial_times(kAllgather, 4 * k64K));
    const std::vector<Crossover::Decision> decided = first.decisions();
    ASSERT_EQ(decided.size(), 2u);

    Crossover next(kCollectives);
    next.step(kAllgather, 4 * k64K); // a trial under way: it runs out
    next.adopt(decided);
    EXPECT_EQ(next.decided(kAllreduce, k64K), Runner::kBelow);
    EXPECT_FALSE(next.decided(kAllgather, 4 * k64K).has_value());
    EXPECT_EQ(next.step(kAllreduce, k64K).runner, Runner::kBelow);
    EXPECT_EQ(next.decisions(), std::vector<Crossover::Decision>({decided[0]}));
}

TEST(Crossover, TheBinGoesToTheFasterForGoodAndIsNeverTimedAgain) {
    Crossover c(kCollectives);
    run_trial(c, kAllreduce, k64K, 0.002, 0.001);
    EXPECT_EQ(c.decide(kAllreduce, k64K, c.trial_times(kAllreduce, k64K)).runner, Runner::kBelow);
    for (const Crossover::Step &s : steps(c, kAllreduce, k64K, 20)) {
        EXPECT_EQ(s.runner, Runner::kBelow);
        EXPECT_FALSE(s.timed || s.settle || s.share);
    }
    EXPECT_EQ(c.decided(kAllreduce, k64K), Runner::kBelow);

    run_trial(c, kAllreduce, 4 * k64K, 0.003, 0.005);
    EXPECT_EQ(c.decide(kAllreduce, 4 * k64K, c.trial_times(kAllreduce, 4 * k64K)).runner,
              Runner::kThemis);
    EXPECT_EQ(c.decided(kAllreduce, 4 * k64K), Runner::kThemis);
}

TEST(Crossover, ThemisWinsABinOnlyByTheMargin) {
    // The module below at 1 ms: themis takes the bin at 0.89 ms (11 % faster), not at
    // 0.95 ms (5 % faster; the allgather trial that OSU's long run then found 2x slower).
    Crossover c(kCollectives);
    run_trial(c, kAllgather, k64K, 0.95e-3, 1e-3);
    EXPECT_EQ(c.decide(kAllgather, k64K, c.trial_times(kAllgather, k64K)).runner, Runner::kBelow);
    run_trial(c, kAllgather, 2 * k64K, 0.89e-3, 1e-3);
    EXPECT_EQ(c.decide(kAllgather, 2 * k64K, c.trial_times(kAllgather, 2 * k64K)).runner,
              Runner::kThemis);
}

TEST(Crossover, TrialTimesAreTheLeastOfTheTimedCallsAndNoMore) {
    // Each runner's time is the least its timed calls recorded (what else runs only slows a
    // call): themis 12 ms; below 20 ms, then 18 ms as the likelier (no bound known). A time
    // recorded past them is a caller's error.
    Crossover c(kCollectives);
    int settles = 0, below = 0;
    for (;;) {
        const Crossover::Step s = c.step(kAllgather, k64K);
        if (s.settle && ++settles == 2) break;
        if (!s.timed) continue;
        if (s.runner == Runner::kBelow) ++below;
        c.record(kAllgather, k64K, s.runner,
                 s.runner == Runner::kThemis ? 0.012
                 : below == 1                ? 0.020
                                             : 0.018);
    }
    ASSERT_EQ(below, 2);
    EXPECT_DOUBLE_EQ(c.trial_times(kAllgather, k64K).below, 0.018);
    EXPECT_DOUBLE_EQ(c.trial_times(kAllgather, k64K).themis, 0.012);
    EXPECT_THROW(c.record(kAllgather, k64K, Runner::kBelow, 0.01), std::logic_error);
    c.record(kAllgather, k64K, Runner::kThemis, 0.02); // themis has room for the likelier's
    EXPECT_DOUBLE_EQ(c.trial_times(kAllgather, k64K).themis, 0.012);
    EXPECT_THROW(c.record(kAllgather, k64K, Runner::kThemis, 0.01), std::logic_error);
}

TEST(Crossover, ARunnerNeverTimedCountsAsInfinitelySlow) {
    // A rank whose timed runs failed records nothing: its times are infinite, and the
    // agreement (the largest over the ranks) sends the bin below on every rank.
    Crossover c(kCollectives);
    for (int i = 0; i < 7; ++i) c.step(kAllreduce, k64K);
    EXPECT_TRUE(std::isinf(c.trial_times(kAllreduce, k64K).themis));
    EXPECT_EQ(c.decide(kAllreduce, k64K, c.trial_times(kAllreduce, k64K)).runner, Runner::kBelow);
}

TEST(Crossover, SizesOutsideTheMeasuredRangeAreNeverTried) {
    Crossover c(kCollectives);
    for (size_t bytes : {size_t(0), size_t(1), Crossover::kFloorBytes - 1}) {
        EXPECT_EQ(c.decided(kAllreduce, bytes), Runner::kBelow) << bytes;
        const Crossover::Step s = c.step(kAllreduce, bytes);
        EXPECT_EQ(s.runner, Runner::kBelow) << bytes;
        EXPECT_FALSE(s.timed || s.settle || s.share) << bytes;
    }
    for (size_t bytes : {Crossover::kCeilingBytes, size_t(1) << 30}) {
        EXPECT_EQ(c.decided(kAllreduce, bytes), Runner::kThemis) << bytes;
        const Crossover::Step s = c.step(kAllreduce, bytes);
        EXPECT_EQ(s.runner, Runner::kThemis) << bytes;
        EXPECT_FALSE(s.timed || s.settle || s.share) << bytes;
    }
    // The edges of the range are in it: their first calls are a trial's.
    EXPECT_FALSE(c.decided(kAllreduce, Crossover::kFloorBytes).has_value());
    EXPECT_FALSE(c.decided(kAllreduce, Crossover::kCeilingBytes - 1).has_value());
}

TEST(Crossover, BinsArePowersOfTwoPerCollective) {
    Crossover c(kCollectives);
    // 64 KiB and 128 KiB - 1 share a bin: the second size's first call is the trial's second.
    EXPECT_EQ(c.step(kAllreduce, k64K).runner, Runner::kThemis);
    EXPECT_TRUE(c.step(kAllreduce, 2 * k64K - 1).timed) << "the trial's second call is timed";
    EXPECT_EQ(c.step(kAllreduce, 2 * k64K - 1).runner, Runner::kBelow) << "the third runs below";
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
    Crossover rank0(kCollectives), rank1(kCollectives);
    run_trial(rank0, kAllreduce, k64K, 0.001, 0.002);
    run_trial(rank1, kAllreduce, k64K, 0.005, 0.003);
    const Crossover::Times t0 = rank0.trial_times(kAllreduce, k64K),
                           t1 = rank1.trial_times(kAllreduce, k64K);
    const Crossover::Times agreed{std::max(t0.themis, t1.themis), std::max(t0.below, t1.below)};
    EXPECT_EQ(rank0.decide(kAllreduce, k64K, agreed).runner, Runner::kBelow);
    EXPECT_EQ(rank1.decide(kAllreduce, k64K, agreed).runner, Runner::kBelow);
}

TEST(Crossover, EqualTimesGoBelow) {
    Crossover c(kCollectives);
    run_trial(c, kAllreduce, k64K, 0.002, 0.002);
    EXPECT_EQ(c.decide(kAllreduce, k64K, c.trial_times(kAllreduce, k64K)).runner, Runner::kBelow);
}

TEST(Crossover, RejectsACollectiveItDoesNotKnow) {
    Crossover c(kCollectives);
    EXPECT_THROW(c.step(kCollectives, k64K), std::invalid_argument);
    EXPECT_THROW(c.step(-1, k64K), std::invalid_argument);
}
