// Unit tests of src/rate_refiner: the window, the median, the agreement's sums, and when the
// rates are revised (one dimension off against the others) or not (all alike, a threshold not
// crossed, a fixed dimension, no evidence).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "rate_refiner.h"

using namespace themis;

namespace {

// A call whose plan assumed `model` bytes/s on each dimension and which delivered `actual`:
// planned balanced, every dimension predicted busy 1 s, so measured model / actual seconds;
// it ran until its slowest dimension was done.
struct Call {
    std::vector<double> predicted, measured;
    double elapsed = 0;
};
Call call(std::vector<double> model, std::vector<double> actual) {
    Call c;
    for (size_t d = 0; d < model.size(); ++d) {
        c.predicted.push_back(1.0);
        c.measured.push_back(model[d] / actual[d]);
        c.elapsed = std::max(c.elapsed, c.measured.back());
    }
    return c;
}

// One rank's window of identical calls; returns its evidence.
std::vector<double> window_of(RateRefiner &r, const Call &c, int calls) {
    for (int i = 0; i < calls; ++i) {
        const bool last = r.count_call(1.0, &c.predicted, &c.measured, c.elapsed);
        EXPECT_EQ(last, i == calls - 1) << i;
    }
    return r.evidence();
}

} // namespace

TEST(RateRefiner, OneDimensionSlowerThanPlannedIsRevisedByItsFactor) {
    // Planned 100 and 200 MB/s; dimension 1 delivers 50: factors 1 and 0.25.
    RateRefiner r(2, 4, 0, 0.25, {false, false});
    const std::vector<double> agreed = window_of(r, call({100e6, 200e6}, {100e6, 50e6}), 4);
    const std::optional<std::vector<double>> f = r.revise(agreed);
    ASSERT_TRUE(f.has_value());
    EXPECT_NEAR((*f)[0], 1.0, 1e-12);
    EXPECT_NEAR((*f)[1], 0.25, 1e-12);
}

TEST(RateRefiner, EveryDimensionAlikeRevisesNothing) {
    // Every stage 20 % slower (a busy core, or every link): the rates' ratios hold.
    RateRefiner r(2, 4, 0, 0.25, {false, false});
    const std::vector<double> agreed = window_of(r, call({100e6, 200e6}, {80e6, 160e6}), 4);
    EXPECT_FALSE(r.revise(agreed).has_value());
    EXPECT_NEAR(r.last_factors()[0], 0.8, 1e-12);
    EXPECT_NEAR(r.last_factors()[1], 0.8, 1e-12);
}

TEST(RateRefiner, ADifferenceUnderTheThresholdRevisesNothing) {
    // Factors 1 and 0.8: 1 / 0.8 = 1.25 is 25 % off the other, not more.
    RateRefiner r(2, 4, 0, 0.25, {false, false});
    EXPECT_FALSE(r.revise(window_of(r, call({100e6, 200e6}, {100e6, 160e6}), 4)).has_value());
    RateRefiner tight(2, 4, 0, 0.2, {false, false});
    EXPECT_TRUE(
        tight.revise(window_of(tight, call({100e6, 200e6}, {100e6, 160e6}), 4)).has_value());
}

TEST(RateRefiner, OneDimensionOffAmongThreeIsJudgedAgainstTheOthers) {
    // A calibration that read dimension 2 at 153 of its 200 Mbit/s: it runs 200 / 153 = 1.31
    // times faster than planned, the others as planned. Against the others (1 and 1) that is
    // 31 % off; against a mean that held it too (1.093) only 20 %, under the threshold.
    // (Rates in any unit: the ratios count.)
    RateRefiner r(3, 4, 0, 0.25, {false, false, false});
    const auto f = r.revise(window_of(r, call({50e6, 100e6, 153e6}, {50e6, 100e6, 200e6}), 4));
    ASSERT_TRUE(f.has_value());
    EXPECT_NEAR((*f)[0], 1.0, 1e-12);
    EXPECT_NEAR((*f)[1], 1.0, 1e-12);
    EXPECT_NEAR((*f)[2], 200.0 / 153, 1e-12);
    // 20 % off the others (240 delivered of 200 planned) revises nothing.
    RateRefiner near(3, 4, 0, 0.25, {false, false, false});
    EXPECT_FALSE(near.revise(window_of(near, call({50e6, 100e6, 200e6}, {50e6, 100e6, 240e6}), 4))
                     .has_value());
}

namespace {

// One rank's window of `calls` identical calls planned balanced (every dimension predicted busy
// `planned` seconds), busy `busy` and lasting `elapsed`; returns its evidence.
std::vector<double> window_busy(RateRefiner &r, double planned, std::vector<double> busy,
                                double elapsed, int calls) {
    const std::vector<double> predicted(busy.size(), planned);
    for (int i = 0; i < calls; ++i) r.count_call(planned, &predicted, &busy, elapsed);
    return r.evidence();
}

} // namespace

TEST(RateRefiner, ASlowedDimensionIsRevisedAndTheOnesItHeldUpAreNot) {
    // Dimension 1 delivers half its rate and holds the 2 s call up; dimension 0, done with its
    // 1 s of work early, reads busy 0.5 s (its peers' data arrived before its stages began):
    // not 2x faster, just idle. Factors 1 and 0.5 (read whole: 2 and 0.5).
    RateRefiner r(2, 4, 0, 0.15, {false, false});
    const auto f = r.revise(window_busy(r, 1.0, {0.5, 2.0}, 2.0, 4));
    ASSERT_TRUE(f.has_value());
    EXPECT_NEAR((*f)[0], 1.0, 1e-12);
    EXPECT_NEAR((*f)[1], 0.5, 1e-12);
}

TEST(RateRefiner, ADimensionWithSlackStepsUpByWhatWouldFillThreeQuartersOfTheCall) {
    // The emulated 2x2x2x2 network (25/50/100/200 Mbit/s halved, 16 ranks) with its fastest
    // dimension read at 65 of 100 Mbit/s: 16 MiB All-Reduces planned 1.7 s on every dimension ran
    // 1.69 s; traced, dimension 2 (the one the plan overloaded) was busy 1.59 s and the others,
    // with slack on slow shaped links, 0.64, 1.0 and 0.88 s. Read whole they said 2.66, 1.7,
    // 1.07 and 1.93 (the job revised to those and its next collectives ran at 56 % of the ideal,
    // not 79 %). Dimensions busy under three quarters of 1.69 s count 1.7 / (0.75 x 1.69).
    RateRefiner r(4, 4, 0, 0.15, {false, false, false, false});
    const auto f = r.revise(window_busy(r, 1.7, {0.64, 1.0, 1.59, 0.88}, 1.69, 4));
    ASSERT_TRUE(f.has_value()); // 1.07 is 20 % under the others' 1.34
    const double step = 1.7 / (0.75 * 1.69);
    EXPECT_NEAR((*f)[0], step, 1e-12);
    EXPECT_NEAR((*f)[1], step, 1e-12);
    EXPECT_NEAR((*f)[2], 1.7 / 1.59, 1e-12);
    EXPECT_NEAR((*f)[3], step, 1e-12);
    // A dimension read busy longer than the call ran (a test's scaled reading) counts whole,
    // as does one slower than planned.
    RateRefiner whole(2, 1, 0, 0.15, {false, false});
    const auto g = whole.revise(window_busy(whole, 1.0, {3.0, 1.0}, 2.0, 1));
    ASSERT_TRUE(g.has_value());
    EXPECT_NEAR((*g)[0], 1.0 / 3, 1e-12);
    EXPECT_NEAR((*g)[1], 1.0, 1e-12);
}

TEST(RateRefiner, TheMedianIgnoresAnOutlierCall) {
    RateRefiner r(2, 5, 0, 0.25, {false, false});
    const Call normal = call({100e6, 200e6}, {100e6, 200e6}),
               stalled = call({100e6, 200e6}, {100e6, 10e6});
    r.count_call(1.0, &normal.predicted, &normal.measured, normal.elapsed);
    r.count_call(1.0, &stalled.predicted, &stalled.measured, stalled.elapsed);
    for (int i = 0; i < 3; ++i)
        r.count_call(1.0, &normal.predicted, &normal.measured, normal.elapsed);
    const std::vector<double> e = r.evidence();
    EXPECT_NEAR(e[1], 1.0, 1e-12);
    EXPECT_FALSE(r.revise(e).has_value());
}

TEST(RateRefiner, RanksAgreeOnTheMeanOfTheirMedians) {
    // Rank 0 sees dimension 1 at 0.25, rank 1 at 0.35: the sums give 0.30 on both ranks.
    RateRefiner r0(2, 3, 0, 0.25, {false, false}), r1(2, 3, 0, 0.25, {false, false});
    std::vector<double> e0 = window_of(r0, call({100e6, 200e6}, {100e6, 50e6}), 3);
    const std::vector<double> e1 = window_of(r1, call({100e6, 200e6}, {100e6, 70e6}), 3);
    for (size_t i = 0; i < e0.size(); ++i) e0[i] += e1[i];
    const auto f0 = r0.revise(e0), f1 = r1.revise(e0);
    ASSERT_TRUE(f0 && f1);
    EXPECT_NEAR((*f0)[1], 0.30, 1e-12);
    EXPECT_EQ(*f0, *f1);
}

TEST(RateRefiner, CallsWithoutEvidenceCountTowardTheWindow) {
    // A call run beside others (no evidence) still counts: every rank ends windows alike.
    RateRefiner r(2, 3, 0, 0.25, {false, false});
    EXPECT_FALSE(r.count_call(1.0, nullptr, nullptr, 0));
    EXPECT_FALSE(r.count_call(1.0, nullptr, nullptr, 0));
    EXPECT_TRUE(r.count_call(1.0, nullptr, nullptr, 0));
    const std::vector<double> e = r.evidence();
    EXPECT_EQ(e, std::vector<double>(4, 0.0));
    EXPECT_FALSE(r.revise(e).has_value());
    EXPECT_EQ(r.last_factors(), std::vector<double>(2, 1.0));
}

TEST(RateRefiner, AFixedDimensionKeepsItsRateAndCountsForNothing) {
    // Dimension 1's rate was given: factor 1 whatever it measured; dimension 0 alone cannot
    // differ from itself, so nothing is revised.
    RateRefiner r(2, 2, 0, 0.25, {false, true});
    EXPECT_FALSE(r.revise(window_of(r, call({100e6, 200e6}, {100e6, 50e6}), 2)).has_value());
    EXPECT_EQ(r.last_factors()[1], 1.0);
    // Three dimensions, the third given: the first two still decide.
    RateRefiner three(3, 2, 0, 0.25, {false, false, true});
    const auto f =
        three.revise(window_of(three, call({100e6, 200e6, 50e6}, {100e6, 50e6, 5e6}), 2));
    ASSERT_TRUE(f.has_value());
    EXPECT_NEAR((*f)[1], 0.25, 1e-12);
    EXPECT_EQ((*f)[2], 1.0);
}

TEST(RateRefiner, AWindowStartsAfresh) {
    RateRefiner r(2, 2, 0, 0.25, {false, false});
    r.revise(window_of(r, call({100e6, 200e6}, {100e6, 50e6}), 2));
    // The next window sees rates as planned: nothing to revise, factors 1.
    EXPECT_FALSE(r.revise(window_of(r, call({100e6, 200e6}, {100e6, 200e6}), 2)).has_value());
    EXPECT_NEAR(r.last_factors()[1], 1.0, 1e-12);
}

TEST(RateRefiner, AWindowLastsAtLeastItsPredictedSeconds) {
    // 3 calls at least, 1 s of predicted time at least: calls of 0.25 s end it at the 4th.
    RateRefiner r(2, 3, 1.0, 0.25, {false, false});
    EXPECT_FALSE(r.count_call(0.25, nullptr, nullptr, 0));
    EXPECT_FALSE(r.count_call(0.25, nullptr, nullptr, 0));
    EXPECT_FALSE(r.count_call(0.25, nullptr, nullptr, 0));
    EXPECT_TRUE(r.count_call(0.25, nullptr, nullptr, 0));
    r.revise(r.evidence());
    // Calls of 2 s: the count decides (3 calls).
    EXPECT_FALSE(r.count_call(2, nullptr, nullptr, 0));
    EXPECT_FALSE(r.count_call(2, nullptr, nullptr, 0));
    EXPECT_TRUE(r.count_call(2, nullptr, nullptr, 0));
}

TEST(RateRefiner, ZeroThresholdNeverRevises) {
    RateRefiner r(2, 2, 0, 0, {false, false});
    EXPECT_FALSE(r.revise(window_of(r, call({100e6, 200e6}, {100e6, 10e6}), 2)).has_value());
}

TEST(RateRefiner, RejectsBadSettings) {
    EXPECT_THROW(RateRefiner(0, 4, 0, 0.25, {}), std::invalid_argument);
    EXPECT_THROW(RateRefiner(2, 0, 0, 0.25, {false, false}), std::invalid_argument);
    EXPECT_THROW(RateRefiner(2, 4, -1, 0.25, {false, false}), std::invalid_argument);
    EXPECT_THROW(RateRefiner(2, 4, 0, 0.25, {false}), std::invalid_argument);
}

TEST(RateRefiner, EvidenceOfACallCountedEarlierJoinsTheOpenWindow) {
    // Nonblocking calls are counted as they start and give their evidence as they complete:
    // three counted without, then the evidence of two of them, revises dimension 1.
    RateRefiner r(2, 3, 0, 0.25, {false, false});
    const Call slow = call({100e6, 200e6}, {100e6, 50e6});
    EXPECT_FALSE(r.count_call(1.0, nullptr, nullptr, 0));
    EXPECT_FALSE(r.count_call(1.0, nullptr, nullptr, 0));
    r.add_evidence(slow.predicted, slow.measured, slow.elapsed);
    EXPECT_TRUE(r.count_call(1.0, nullptr, nullptr, 0));
    r.add_evidence(slow.predicted, slow.measured, slow.elapsed);
    const std::vector<double> e = r.evidence();
    EXPECT_EQ(e[2], 1.0); // one rank's median per dimension, counted once
    const auto f = r.revise(e);
    ASSERT_TRUE(f.has_value());
    EXPECT_NEAR((*f)[1], 0.25, 1e-12);
    // Evidence arriving after the agreement lands in the next window.
    r.add_evidence(slow.predicted, slow.measured, slow.elapsed);
    EXPECT_EQ(r.evidence()[3], 1.0);
}

// The rules of evidence, on a 2x4 network of 10 us and 1 us latencies: which calls tell the
// links' rates. The thresholds are the rules' own: 8 MiB, 50 latencies, All-Reduce only.
namespace {
Plan plan_of(Collective c, uint64_t bytes, double predicted) {
    Plan p;
    p.collective = c;
    p.work_bytes = bytes;
    p.predicted_time = predicted;
    return p;
}
} // namespace

TEST(RateEvidence, OnlyLargeLongAllReducesTellTheLinks) {
    const Topology topo = parse_topology("2x4:lat=10us,1us");
    const uint64_t MiB = uint64_t(1) << 20;
    const double long_enough = 50 * 10e-6; // 50 times the largest latency
    EXPECT_TRUE(gives_evidence(topo, plan_of(Collective::AllReduce, 8 * MiB, long_enough)));
    EXPECT_TRUE(gives_evidence(topo, plan_of(Collective::AllReduce, 64 * MiB, 1.0)));
    // Under 8 MiB the transport's buffers, not the links, end the stages.
    EXPECT_FALSE(gives_evidence(topo, plan_of(Collective::AllReduce, 8 * MiB - 1, 1.0)));
    // Shorter than 50 latencies: latency, which is not revised, makes the busy time.
    EXPECT_FALSE(gives_evidence(topo, plan_of(Collective::AllReduce, 8 * MiB, 0.99 * long_enough)));
    // The other collectives' busy times misread the rates.
    for (Collective c :
         {Collective::ReduceScatter, Collective::AllGather, Collective::Bcast, Collective::Reduce})
        EXPECT_FALSE(gives_evidence(topo, plan_of(c, 64 * MiB, 1.0)));
}

TEST(RateEvidence, ANonblockingCallCountsOnlyIfDrivenThroughout) {
    // A gap of a quarter of the call's predicted time is the most.
    EXPECT_TRUE(driven_throughout(0.0, 0.1));
    EXPECT_TRUE(driven_throughout(0.025, 0.1));
    EXPECT_FALSE(driven_throughout(0.0251, 0.1));
    EXPECT_FALSE(driven_throughout(1.0, 0.1)); // the program computed between start and wait
}

TEST(RateEvidence, ARefinerOnlyWhereSomethingCanBeRevised) {
    const Topology topo = parse_topology("2x4");
    const auto measured = RateSource::Measured, cached = RateSource::Cached;
    const auto given = RateSource::Given, fallback = RateSource::Default;
    EXPECT_NE(make_rate_refiner(topo, {measured, measured}, 8, 0.15), nullptr);
    EXPECT_NE(make_rate_refiner(topo, {given, cached}, 8, 0.15), nullptr);
    // Nothing measured: given and default rates are never revised.
    EXPECT_EQ(make_rate_refiner(topo, {given, fallback}, 8, 0.15), nullptr);
    // Off: no window, or no threshold.
    EXPECT_EQ(make_rate_refiner(topo, {measured, measured}, 0, 0.15), nullptr);
    EXPECT_EQ(make_rate_refiner(topo, {measured, measured}, 8, 0), nullptr);
}

TEST(RateEvidence, AGivenDimensionStaysFixed) {
    // Dimension 0 given, 1 measured: a window where both read half as fast as planned leaves
    // 0 alone, and 1 off against nothing else measured revises nothing either.
    auto r = make_rate_refiner(parse_topology("2x4"), {RateSource::Given, RateSource::Measured}, 2,
                               0.15);
    ASSERT_NE(r, nullptr);
    const Call slow = call({100e6, 200e6}, {50e6, 100e6});
    EXPECT_FALSE(r->count_call(1.0, &slow.predicted, &slow.measured, slow.elapsed));
    EXPECT_TRUE(r->count_call(1.0, &slow.predicted, &slow.measured, slow.elapsed));
    EXPECT_FALSE(r->revise(r->evidence()).has_value());
}
