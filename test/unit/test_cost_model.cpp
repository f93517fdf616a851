// Unit tests of src/cost_model: bytes, steps and alpha-beta time of one stage.
#include <gtest/gtest.h>

#include "cost_model.h"
#include "test_support.h"

using namespace themis;
using themis_test::dim;

namespace {

TEST(CostModelBytes, ReduceScatterSendsAllButOneNthOfItsInput) {
    // n = 4, input 1000: output 250, sent 3/4 of the input.
    Dimension d = dim(4, 1e9);
    EXPECT_DOUBLE_EQ(stage_larger_side(d, Phase::ReduceScatter, 1000), 1000);
    EXPECT_DOUBLE_EQ(stage_output_bytes(d, Phase::ReduceScatter, 1000), 250);
    EXPECT_DOUBLE_EQ(stage_bytes_sent(d, Phase::ReduceScatter, 1000), 750);
}

TEST(CostModelBytes, AllGatherSendsAllButOneNthOfItsOutput) {
    // n = 4, input 250: output 1000 (the larger side), sent 3/4 of the output.
    Dimension d = dim(4, 1e9);
    EXPECT_DOUBLE_EQ(stage_larger_side(d, Phase::AllGather, 250), 1000);
    EXPECT_DOUBLE_EQ(stage_output_bytes(d, Phase::AllGather, 250), 1000);
    EXPECT_DOUBLE_EQ(stage_bytes_sent(d, Phase::AllGather, 250), 750);
}

TEST(CostModelBytes, BytesSentIsSameForEveryAlgorithmAndPeerCount) {
    for (Algorithm a : {Algorithm::Ring, Algorithm::HalvingDoubling, Algorithm::Direct})
        for (int n : {1, 2, 3, 5, 8, 64}) {
            Dimension d = dim(n, 1e9, 0, a);
            const double x = 12345.0;
            EXPECT_NEAR(stage_bytes_sent(d, Phase::ReduceScatter, x), x * (n - 1) / n, 1e-9)
                << algorithm_name(a) << " n=" << n;
            EXPECT_NEAR(stage_bytes_sent(d, Phase::AllGather, x), x * (n - 1), 1e-9)
                << algorithm_name(a) << " n=" << n;
        }
}

TEST(CostModelBytes, SinglePeerDimensionSendsNothing) {
    Dimension d = dim(1, 1e9, 1e-6);
    EXPECT_EQ(stage_bytes_sent(d, Phase::ReduceScatter, 1000), 0.0);
    EXPECT_EQ(stage_bytes_sent(d, Phase::AllGather, 1000), 0.0);
    EXPECT_EQ(stage_steps(d, Phase::ReduceScatter), 0);
    EXPECT_EQ(stage_time(d, Phase::ReduceScatter, 1000), 0.0);
}

TEST(CostModelSteps, RingTakesNMinusOneSteps) {
    for (int n : {2, 3, 4, 7, 16})
        EXPECT_EQ(stage_steps(dim(n, 1, 0, Algorithm::Ring), Phase::ReduceScatter), n - 1);
}

TEST(CostModelSteps, HalvingDoublingTakesLog2NSteps) {
    EXPECT_EQ(stage_steps(dim(2, 1, 0, Algorithm::HalvingDoubling), Phase::ReduceScatter), 1);
    EXPECT_EQ(stage_steps(dim(4, 1, 0, Algorithm::HalvingDoubling), Phase::ReduceScatter), 2);
    EXPECT_EQ(stage_steps(dim(8, 1, 0, Algorithm::HalvingDoubling), Phase::ReduceScatter), 3);
    EXPECT_EQ(stage_steps(dim(64, 1, 0, Algorithm::HalvingDoubling), Phase::ReduceScatter), 6);
    EXPECT_EQ(stage_steps(dim(1024, 1, 0, Algorithm::HalvingDoubling), Phase::ReduceScatter), 10);
}

TEST(CostModelSteps, DirectTakesOneStep) {
    for (int n : {2, 3, 8, 100})
        EXPECT_EQ(stage_steps(dim(n, 1, 0, Algorithm::Direct), Phase::ReduceScatter), 1);
}

TEST(CostModelTime, StageTimeIsStepsTimesLatencyPlusBytesOverBandwidth) {
    // Ring of 5, 2 us per step, 10 GB/s, RS of 1 MB:
    //   4 steps x 2 us = 8 us; 0.8 MB / 10 GB/s = 80 us; total 88 us.
    Dimension ring = dim(5, 10e9, 2e-6, Algorithm::Ring);
    EXPECT_NEAR(stage_latency(ring, Phase::ReduceScatter), 8e-6, 1e-18);
    EXPECT_NEAR(stage_bandwidth_time(ring, Phase::ReduceScatter, 1e6), 80e-6, 1e-15);
    EXPECT_NEAR(stage_time(ring, Phase::ReduceScatter, 1e6), 88e-6, 1e-15);
    // Halving-doubling of 8, 1 us per step, 1 GB/s, AG of input 1 KB (output 8 KB):
    //   3 steps x 1 us = 3 us; 7 KB / 1 GB/s = 7 us; total 10 us.
    Dimension hd = dim(8, 1e9, 1e-6, Algorithm::HalvingDoubling);
    EXPECT_NEAR(stage_time(hd, Phase::AllGather, 1e3), 10e-6, 1e-15);
    // Direct of 3, 5 us, 3 GB/s, RS of 9 KB: 1 x 5 us + 6 KB / 3 GB/s = 5 + 2 = 7 us.
    Dimension fc = dim(3, 3e9, 5e-6, Algorithm::Direct);
    EXPECT_NEAR(stage_time(fc, Phase::ReduceScatter, 9e3), 7e-6, 1e-15);
}

TEST(CostModelTime, ZeroBytesCostsOnlyTheFixedDelay) {
    Dimension d = dim(4, 1e9, 3e-6, Algorithm::Ring);
    EXPECT_NEAR(stage_time(d, Phase::AllGather, 0), 9e-6, 1e-18);
}

TEST(CostModelFill, FractionOfTheCurveForEachCountTheLastHolding) {
    Dimension d = dim(4, 10e9, 0, Algorithm::Ring);
    // No curve: every count fills the link, exactly.
    for (int n : {1, 2, 64}) {
        EXPECT_EQ(fill_fraction(d, n), 1.0);
        EXPECT_EQ(filled_bandwidth(d, n), 10e9);
    }
    EXPECT_EQ(sustained_bandwidth(d), 10e9);
    d.fill = {0.5, 0.75, 0.9};
    EXPECT_EQ(fill_fraction(d, 1), 0.5);
    EXPECT_EQ(fill_fraction(d, 2), 0.75);
    EXPECT_EQ(fill_fraction(d, 3), 0.9);
    EXPECT_EQ(fill_fraction(d, 7), 0.9); // past the end: the last point
    EXPECT_NEAR(filled_bandwidth(d, 1), 5e9, 1e-3);
    EXPECT_NEAR(filled_bandwidth(d, 2), 7.5e9, 1e-3);
    EXPECT_NEAR(sustained_bandwidth(d), 9e9, 1e-3);
    // Not monotone: the tracker charges at the best the dimension reaches.
    d.fill = {0.6, 0.8, 0.7};
    EXPECT_NEAR(sustained_bandwidth(d), 8e9, 1e-3);
}

TEST(CostModelFill, AStageAloneRunsAtTheFirstPoint) {
    // Ring of 5, 2 us per step, 10 GB/s, RS of 1 MB, one stage reaching 40 % of the link:
    //   8 us + 0.8 MB / 4 GB/s = 8 + 200 = 208 us; the full-rate bandwidth time stays 80 us.
    Dimension ring = dim(5, 10e9, 2e-6, Algorithm::Ring);
    ring.fill = {0.4, 1};
    EXPECT_NEAR(stage_time(ring, Phase::ReduceScatter, 1e6), 208e-6, 1e-15);
    EXPECT_NEAR(stage_bandwidth_time(ring, Phase::ReduceScatter, 1e6), 80e-6, 1e-15);
}

TEST(CostModelNames, PhaseNames) {
    EXPECT_STREQ(phase_name(Phase::ReduceScatter), "RS");
    EXPECT_STREQ(phase_name(Phase::AllGather), "AG");
}

} // namespace

TEST(CostModelRooted, AGroupCastMovesTheWholeChunkOutOfItsSourceInTwoSteps) {
    // A cast's source sends the whole chunk once (scattered over the targets), and the chunk
    // leaves the stage whole; a Collect's source receives as much. Two steps (scatter, then
    // all-gather among the targets), whatever the dimension's algorithm.
    const Dimension ring = dim(5, 10e9, 2e-6, Algorithm::Ring);
    for (Phase p : {Phase::Cast, Phase::Collect}) {
        EXPECT_DOUBLE_EQ(stage_bytes_sent(ring, p, 1000), 1000);
        EXPECT_DOUBLE_EQ(stage_output_bytes(ring, p, 1000), 1000);
        EXPECT_DOUBLE_EQ(stage_larger_side(ring, p, 1000), 1000);
        EXPECT_EQ(stage_steps(ring, p), 2);
        EXPECT_EQ(stage_steps(dim(1, 1e9, 1e-6), p), 0);
        EXPECT_DOUBLE_EQ(stage_time(ring, p, 1000), 4e-6 + 1000 / 10e9);
    }
    EXPECT_EQ(stage_steps(ring, Phase::ReduceScatter), 4);
    EXPECT_STREQ(phase_name(Phase::Cast), "CA");
    EXPECT_STREQ(phase_name(Phase::Collect), "CO");
    EXPECT_TRUE(phase_info(Phase::Collect).reduces);
    EXPECT_FALSE(phase_info(Phase::Cast).reduces);
}
