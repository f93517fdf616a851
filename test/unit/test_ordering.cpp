// Unit tests of src/ordering: the deterministic event simulation (FIFO / SCF, K stages at
// once), its makespan and the paper's bandwidth-utilisation numbers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "ordering.h"
#include "testbed/paper_topologies.h"
#include "test_support.h"

using namespace themis;
using themis_test::close_rel;
using themis_test::dim;

namespace {

// A chunk made of the given stages (the simulation only reads dim, phase and input).
ChunkSchedule chunk(std::vector<Stage> stages) {
    ChunkSchedule c;
    c.stages = std::move(stages);
    return c;
}
Stage rs(int d, double input) { return {d, Phase::ReduceScatter, input}; }
Stage ag(int d, double input) { return {d, Phase::AllGather, input}; }

OrderingParams op(IntraPolicy p, int k = 1) {
    OrderingParams o;
    o.intra = p;
    o.max_active = k;
    return o;
}

std::vector<int> chunks_in_order(const std::vector<StageRef> &refs) {
    std::vector<int> out;
    for (const auto &r : refs) out.push_back(r.chunk);
    return out;
}

const StageRun &run_of(const Ordering &o, int chunk, int stage) {
    for (const auto &r : o.runs)
        if (r.ref.chunk == chunk && r.ref.stage == stage) return r;
    throw std::runtime_error("no run");
}

// One dimension of 2 peers at 1 byte/s, no latency: an RS of input x sends x/2 bytes and
// takes x/2 seconds.
Topology one_dim(double latency = 0, int peers = 2) {
    return Topology({dim(peers, 1.0, latency, Algorithm::Ring)});
}

// ---------------------------------------------------------------------------------------
// Intra-dimension policies

TEST(OrderingIntra, FifoRunsInArrivalOrder) {
    // Three ready stages (RS of 300, 100, 200 bytes), all ready at t = 0 in chunk order.
    std::vector<ChunkSchedule> s = {chunk({rs(0, 300)}), chunk({rs(0, 100)}), chunk({rs(0, 200)})};
    Ordering o = simulate_schedule(one_dim(), s, op(IntraPolicy::Fifo));
    EXPECT_EQ(chunks_in_order(o.dim_order[0]), (std::vector<int>{0, 1, 2}));
    // Times: 150 s, then 50 s, then 100 s.
    EXPECT_DOUBLE_EQ(run_of(o, 0, 0).end, 150);
    EXPECT_DOUBLE_EQ(run_of(o, 1, 0).start, 150);
    EXPECT_DOUBLE_EQ(run_of(o, 1, 0).end, 200);
    EXPECT_DOUBLE_EQ(run_of(o, 2, 0).end, 300);
    EXPECT_DOUBLE_EQ(o.makespan, 300);
}

TEST(OrderingIntra, ScfStartsSmallestFirst) {
    std::vector<ChunkSchedule> s = {chunk({rs(0, 300)}), chunk({rs(0, 100)}), chunk({rs(0, 200)})};
    Ordering o = simulate_schedule(one_dim(), s, op(IntraPolicy::Scf));
    EXPECT_EQ(chunks_in_order(o.dim_order[0]), (std::vector<int>{1, 2, 0}));
    // Times: 50 s, 100 s, 150 s.
    EXPECT_DOUBLE_EQ(run_of(o, 1, 0).start, 0);
    EXPECT_DOUBLE_EQ(run_of(o, 1, 0).end, 50);
    EXPECT_DOUBLE_EQ(run_of(o, 2, 0).end, 150);
    EXPECT_DOUBLE_EQ(run_of(o, 0, 0).end, 300);
    EXPECT_DOUBLE_EQ(o.makespan, 300);
}

TEST(OrderingIntra, ScfTieGoesToTheOldest) {
    // Equal keys: the stage that became ready first starts first, so chunk 0 is not the tail.
    std::vector<ChunkSchedule> s = {chunk({rs(0, 100)}), chunk({rs(0, 50)}), chunk({rs(0, 100)}),
                                    chunk({rs(0, 100)})};
    Ordering o = simulate_schedule(one_dim(), s, op(IntraPolicy::Scf));
    EXPECT_EQ(chunks_in_order(o.dim_order[0]), (std::vector<int>{1, 0, 2, 3}));
    s.erase(s.begin() + 1);
    Ordering f = simulate_schedule(one_dim(), s, op(IntraPolicy::Fifo));
    EXPECT_EQ(chunks_in_order(f.dim_order[0]), (std::vector<int>{0, 1, 2}));
}

TEST(OrderingIntra, ScfKeyIsTheLargerSide) {
    // AG of input 100 on 2 peers has output 200: key 200. RS of input 150: key 150.
    // RS of input 250: key 250. SCF: RS150, AG100, RS250.
    std::vector<ChunkSchedule> s = {chunk({ag(0, 100)}), chunk({rs(0, 250)}), chunk({rs(0, 150)})};
    Ordering o = simulate_schedule(one_dim(), s, op(IntraPolicy::Scf));
    EXPECT_EQ(chunks_in_order(o.dim_order[0]), (std::vector<int>{2, 0, 1}));
}

TEST(OrderingIntra, RunningStageIsNotPreempted) {
    // Chunk 0: RS 1000 on dim 1 (fast), then RS 500 on dim 0. Chunk 1: RS 4000 on dim 0.
    // Dim 0 = 2 peers at 1 B/s, dim 1 = 2 peers at 1000 B/s.
    // t=0: dim 0 starts chunk 1 (2000 s); chunk 0's second stage becomes ready at t=0.5 but
    // must wait for t=2000 although it is smaller.
    Topology t({dim(2, 1.0), dim(2, 1000.0)});
    std::vector<ChunkSchedule> s = {chunk({rs(1, 1000), rs(0, 500)}), chunk({rs(0, 4000)})};
    Ordering o = simulate_schedule(t, s, op(IntraPolicy::Scf));
    EXPECT_DOUBLE_EQ(run_of(o, 0, 1).ready, 0.5);
    EXPECT_DOUBLE_EQ(run_of(o, 0, 1).start, 2000);
    EXPECT_DOUBLE_EQ(o.makespan, 2000 + 250);
}

TEST(OrderingIntra, LaterArrivalThatIsSmallerJumpsTheQueueUnderScfOnly) {
    // Dim 0: 2 peers at 1 B/s; dim 1: 2 peers at 1000 B/s; no latency.
    //   chunk 0: RS 200 on dim 0 (100 s); chunk 1: RS 1000 on dim 0 (500 s);
    //   chunk 2: RS 100 on dim 1 (50 B at 1000 B/s = 0.05 s), then RS 100 on dim 0 (50 s).
    // At t=0 dim 0 holds chunks 0 and 1: both policies start chunk 0 (SCF: 200 < 1000).
    // At t=100 chunk 2 (ready since 0.05, key 100) waits beside chunk 1 (key 1000):
    //   SCF: chunk 2 (100-150), chunk 1 (150-650); FIFO: chunk 1 (100-600), chunk 2 (600-650).
    Topology t({dim(2, 1.0), dim(2, 1000.0)});
    std::vector<ChunkSchedule> s = {chunk({rs(0, 200)}), chunk({rs(0, 1000)}),
                                    chunk({rs(1, 100), rs(0, 100)})};
    Ordering scf = simulate_schedule(t, s, op(IntraPolicy::Scf));
    Ordering fifo = simulate_schedule(t, s, op(IntraPolicy::Fifo));
    // SCF at t=0 picks chunk 0 (key 200 < 1000); at t=100 chunk 2 (key 100) before chunk 1.
    EXPECT_EQ(chunks_in_order(scf.dim_order[0]), (std::vector<int>{0, 2, 1}));
    EXPECT_EQ(chunks_in_order(fifo.dim_order[0]), (std::vector<int>{0, 1, 2}));
    EXPECT_DOUBLE_EQ(run_of(scf, 2, 1).start, 100);
    EXPECT_DOUBLE_EQ(run_of(scf, 1, 0).end, 650);
    EXPECT_DOUBLE_EQ(run_of(fifo, 1, 0).end, 600);
    EXPECT_DOUBLE_EQ(run_of(fifo, 2, 1).end, 650);
}

// ---------------------------------------------------------------------------------------
// K stages at once

TEST(OrderingConcurrency, TwoStagesShareBandwidthSameMakespanWithoutLatency) {
    // Two RS of 200 B (100 B sent each) on 1 B/s. K=1: 100 + 100. K=2: both at 0.5 B/s,
    // both end at 200.
    std::vector<ChunkSchedule> s = {chunk({rs(0, 200)}), chunk({rs(0, 200)})};
    Ordering k1 = simulate_schedule(one_dim(), s, op(IntraPolicy::Fifo, 1));
    Ordering k2 = simulate_schedule(one_dim(), s, op(IntraPolicy::Fifo, 2));
    EXPECT_DOUBLE_EQ(k1.makespan, 200);
    EXPECT_DOUBLE_EQ(k2.makespan, 200);
    EXPECT_DOUBLE_EQ(run_of(k1, 0, 0).end, 100);
    EXPECT_DOUBLE_EQ(run_of(k2, 0, 0).start, 0);
    EXPECT_DOUBLE_EQ(run_of(k2, 1, 0).start, 0);
    EXPECT_DOUBLE_EQ(run_of(k2, 0, 0).end, 200);
    EXPECT_DOUBLE_EQ(run_of(k2, 1, 0).end, 200);
    EXPECT_DOUBLE_EQ(k2.busy[0], 200);
}

TEST(OrderingConcurrency, LatencyIsNotSharedBetweenConcurrentStages) {
    // Ring of 3 peers (2 steps) at 5 s per step: fixed delay 10 s per stage. Two RS of
    // 300 B (200 B sent each) on 1 B/s.
    //   K=1: (10 + 200) + (10 + 200) = 420.   K=2: 10 (both at once) + 400 = 410.
    std::vector<ChunkSchedule> s = {chunk({rs(0, 300)}), chunk({rs(0, 300)})};
    Topology t = one_dim(5.0, 3);
    EXPECT_DOUBLE_EQ(simulate_schedule(t, s, op(IntraPolicy::Fifo, 1)).makespan, 420);
    EXPECT_DOUBLE_EQ(simulate_schedule(t, s, op(IntraPolicy::Fifo, 2)).makespan, 410);
    // K beyond the number of stages changes nothing.
    EXPECT_DOUBLE_EQ(simulate_schedule(t, s, op(IntraPolicy::Fifo, 5)).makespan, 410);
}

TEST(OrderingConcurrency, StageInLatencyDoesNotTakeBandwidth) {
    // K=2. Dim 0: 2 peers, 1 B/s, ring (1 step) of 10 s per step. Dim 1: 2 peers, 1 B/s,
    // no latency. Chunk 0: RS 200 on dim 0 (10 s delay, then 100 B). Chunk 1: RS 2 on dim 1
    // (1 B, 1 s), then RS 200 on dim 0 (10 s delay, then 100 B).
    //   t=0..10 chunk 0 in its delay; t=1 chunk 1 arrives on dim 0, in its delay until 11.
    //   t=10..11 chunk 0 alone at 1 B/s: 1 B sent, 99 left.
    //   t=11.. both moving at 0.5 B/s: chunk 0 needs 198 s -> ends t=209, chunk 1 has sent
    //   99 B; then alone: 1 B at 1 B/s -> ends t=210.
    Topology t({dim(2, 1.0, 10.0), dim(2, 1.0, 0.0)});
    std::vector<ChunkSchedule> s = {chunk({rs(0, 200)}), chunk({rs(1, 2), rs(0, 200)})};
    Ordering o = simulate_schedule(t, s, op(IntraPolicy::Fifo, 2));
    EXPECT_NEAR(run_of(o, 0, 0).end, 209, 1e-9);
    EXPECT_NEAR(run_of(o, 1, 1).start, 1, 1e-12);
    EXPECT_NEAR(run_of(o, 1, 1).end, 210, 1e-9);
    EXPECT_NEAR(o.makespan, 210, 1e-9);
}

// ---------------------------------------------------------------------------------------
// Fill curves: m stages moving at once deliver bandwidth x fill(m) together

// One dimension of 2 peers at 1 B/s whose stages reach 50 % of it alone, 80 % two at once
// (an RS of input x sends x/2 bytes).
Topology filled_dim(double latency = 0) {
    Dimension d = dim(2, 1.0, latency, Algorithm::Ring);
    d.fill = {0.5, 0.8};
    return Topology({d});
}

TEST(OrderingFill, OneStageRunsAtTheFirstPointTwoShareTheSecond) {
    // Times computed by hand; tolerance 1e-9 s on times of hundreds of seconds.
    // One RS of 200 (100 B sent) alone: 100 B at 0.5 B/s = 200 s (full link: 100 s).
    std::vector<ChunkSchedule> one = {chunk({rs(0, 200)})};
    EXPECT_NEAR(simulate_schedule(filled_dim(), one, op(IntraPolicy::Fifo, 1)).makespan, 200, 1e-9);
    EXPECT_NEAR(simulate_schedule(one_dim(), one, op(IntraPolicy::Fifo, 1)).makespan, 100, 1e-9);
    // Two: K = 1, one after the other at 0.5 B/s: 200 + 200. K = 2, both at once, 0.8 B/s
    // shared, 0.4 B/s each: both end at 100 / 0.4 = 250 s.
    std::vector<ChunkSchedule> two = {chunk({rs(0, 200)}), chunk({rs(0, 200)})};
    Ordering k1 = simulate_schedule(filled_dim(), two, op(IntraPolicy::Fifo, 1));
    Ordering k2 = simulate_schedule(filled_dim(), two, op(IntraPolicy::Fifo, 2));
    EXPECT_NEAR(run_of(k1, 0, 0).end, 200, 1e-9);
    EXPECT_NEAR(k1.makespan, 400, 1e-9);
    EXPECT_NEAR(run_of(k2, 0, 0).end, 250, 1e-9);
    EXPECT_NEAR(run_of(k2, 1, 0).end, 250, 1e-9);
    EXPECT_NEAR(k2.makespan, 250, 1e-9);
    // Three with K = 2: the first two at 0.4 B/s each until 250 s, the third alone at
    // 0.5 B/s for 200 s: 450 s.
    std::vector<ChunkSchedule> three = {chunk({rs(0, 200)}), chunk({rs(0, 200)}),
                                        chunk({rs(0, 200)})};
    Ordering k2_three = simulate_schedule(filled_dim(), three, op(IntraPolicy::Fifo, 2));
    EXPECT_NEAR(run_of(k2_three, 2, 0).start, 250, 1e-9);
    EXPECT_NEAR(k2_three.makespan, 450, 1e-9);
    // Past the curve's last point, the last holds: K = 3 moves all three at 0.8 B/s
    // together: 300 B / 0.8 = 375 s.
    EXPECT_NEAR(simulate_schedule(filled_dim(), three, op(IntraPolicy::Fifo, 3)).makespan, 375,
                1e-9);
}

TEST(OrderingFill, TheRateChangesWhenAStageFinishes) {
    // K = 2: 100 B and 50 B at 0.4 B/s each; the 50 B stage ends at 125 s, with 50 B of
    // the other left, alone now at 0.5 B/s: 100 s more, 225 s.
    std::vector<ChunkSchedule> s = {chunk({rs(0, 200)}), chunk({rs(0, 100)})};
    Ordering o = simulate_schedule(filled_dim(), s, op(IntraPolicy::Fifo, 2));
    EXPECT_NEAR(run_of(o, 1, 0).end, 125, 1e-9);
    EXPECT_NEAR(run_of(o, 0, 0).end, 225, 1e-9);
    EXPECT_NEAR(o.makespan, 225, 1e-9);
}

TEST(OrderingFill, AStageInItsFixedDelayIsNotInFlightForTheCurve) {
    // As StageInLatencyDoesNotTakeBandwidth, dimension 0 filling 50 % with one stage
    // moving, all of it with two. K = 2.
    //   t=0..10 chunk 0 in its delay; chunk 1's RS on dim 1 ends at 1, its dim-0 stage is in
    //   its delay until 11.
    //   t=10..11 chunk 0 the only one moving: 0.5 B/s, 0.5 B sent, 99.5 left.
    //   t=11.. both moving, 1 B/s shared: chunk 0 ends at 11 + 99.5 / 0.5 = 210; chunk 1
    //   has 0.5 B left, alone at 0.5 B/s: ends at 211.
    Dimension zero = dim(2, 1.0, 10.0);
    zero.fill = {0.5, 1};
    Topology t({zero, dim(2, 1.0, 0.0)});
    std::vector<ChunkSchedule> s = {chunk({rs(0, 200)}), chunk({rs(1, 2), rs(0, 200)})};
    Ordering o = simulate_schedule(t, s, op(IntraPolicy::Fifo, 2));
    EXPECT_NEAR(run_of(o, 1, 1).start, 1, 1e-12);
    EXPECT_NEAR(run_of(o, 0, 0).end, 210, 1e-9);
    EXPECT_NEAR(run_of(o, 1, 1).end, 211, 1e-9);
    EXPECT_NEAR(o.makespan, 211, 1e-9);
    // The busy time counts the delay too: dimension 0 ran stages from 0 to 211.
    EXPECT_NEAR(o.busy[0], 211, 1e-9);
}

TEST(OrderingFill, AFullCurveSimulatesBitForBitAsNone) {
    // A curve of ones is no curve (canonical): the same numbers, not just close ones.
    std::mt19937_64 rng(5);
    for (int i = 0; i < 30; ++i) {
        const Topology t = themis_test::random_topology(rng);
        std::vector<Dimension> dims = t.dims();
        for (Dimension &d : dims) d.fill = {1, 1, 1};
        const Topology full(dims);
        const std::vector<double> bytes = split_bytes(1 << 22, 16);
        const auto s = schedule_chunks(t, Collective::AllReduce, bytes, SchedulerParams());
        const auto s_full = schedule_chunks(full, Collective::AllReduce, bytes, SchedulerParams());
        const Ordering a = simulate_schedule(t, s, op(IntraPolicy::Scf, 4));
        const Ordering b = simulate_schedule(full, s_full, op(IntraPolicy::Scf, 4));
        EXPECT_EQ(a.makespan, b.makespan) << t.to_spec();
        ASSERT_EQ(a.runs.size(), b.runs.size());
        for (size_t k = 0; k < a.runs.size(); ++k) EXPECT_EQ(a.runs[k].end, b.runs[k].end);
    }
}

OrderingParams bounded(int k, double max_active_bytes) {
    OrderingParams o = op(IntraPolicy::Scf, k);
    o.max_active_bytes = max_active_bytes;
    return o;
}

TEST(OrderingByteBound, StagesStartOnlyWhileTheirBytesFitTogether) {
    // Three RS of 200 B (100 B sent each) on 1 B/s, K = 4. Bound 400: two run at once at
    // 0.5 B/s and end at 200, the third alone from 200 to 300. Bound 300: one at a time,
    // starting at 0, 100, 200. Same makespan (the link is never idle), other start times.
    std::vector<ChunkSchedule> s = {chunk({rs(0, 200)}), chunk({rs(0, 200)}), chunk({rs(0, 200)})};
    Ordering two = simulate_schedule(one_dim(), s, bounded(4, 400));
    EXPECT_DOUBLE_EQ(run_of(two, 0, 0).start, 0);
    EXPECT_DOUBLE_EQ(run_of(two, 1, 0).start, 0);
    EXPECT_DOUBLE_EQ(run_of(two, 1, 0).end, 200);
    EXPECT_DOUBLE_EQ(run_of(two, 2, 0).start, 200);
    EXPECT_DOUBLE_EQ(two.makespan, 300);
    Ordering one = simulate_schedule(one_dim(), s, bounded(4, 300));
    EXPECT_DOUBLE_EQ(run_of(one, 0, 0).start, 0);
    EXPECT_DOUBLE_EQ(run_of(one, 1, 0).start, 100);
    EXPECT_DOUBLE_EQ(run_of(one, 2, 0).start, 200);
    EXPECT_DOUBLE_EQ(one.makespan, 300);
}

TEST(OrderingByteBound, ALargerStageRunsAloneAndHoldsBackTheOnesBehindIt) {
    // FIFO, K = 4, bound 300: an RS of 600 B (300 B sent) alone from 0 to 300, though it
    // exceeds the bound; the RS of 100 B behind it waits (it would fit beside nothing
    // else, but the dimension starts its stages in order), then ends at 350.
    std::vector<ChunkSchedule> s = {chunk({rs(0, 600)}), chunk({rs(0, 100)})};
    OrderingParams p = bounded(4, 300);
    p.intra = IntraPolicy::Fifo;
    Ordering o = simulate_schedule(one_dim(), s, p);
    EXPECT_DOUBLE_EQ(run_of(o, 0, 0).end, 300);
    EXPECT_DOUBLE_EQ(run_of(o, 1, 0).start, 300);
    EXPECT_DOUBLE_EQ(o.makespan, 350);
}

TEST(OrderingByteBound, TheBoundCountsTheLargerSideOfEachStage) {
    // All-Gather of 100 B in on 2 peers: 200 B out, 100 B sent, so 200 B count. Bound 300:
    // the two stages run one after the other (400 > 300), each 100 s. Bound 400: together.
    std::vector<ChunkSchedule> s = {chunk({ag(0, 100)}), chunk({ag(0, 100)})};
    EXPECT_DOUBLE_EQ(run_of(simulate_schedule(one_dim(), s, bounded(2, 300)), 1, 0).start, 100);
    EXPECT_DOUBLE_EQ(run_of(simulate_schedule(one_dim(), s, bounded(2, 400)), 1, 0).start, 0);
}

// ---------------------------------------------------------------------------------------
// Single chunk, hand-checked timelines

TEST(OrderingTimeline, SingleChunkMakespanIsSumOfStageTimes) {
    // All-Reduce chunk on 2x4 (ring 2, hd 4): RS0, RS1, AG1, AG0 of a 8000 B chunk.
    //   dim 0: 2 peers, 1 KB/s, 1 s/step, 1 step; dim 1: 4 peers, 2 KB/s, 0.5 s/step, 2 steps
    //   RS0 in 8000: 1 + 4000/1000 = 5;   RS1 in 4000: 1 + 3000/2000 = 2.5
    //   AG1 in 1000: 1 + 3000/2000 = 2.5; AG0 in 4000: 1 + 4000/1000 = 5     -> 15 s
    Topology t({dim(2, 1000, 1.0, Algorithm::Ring), dim(4, 2000, 0.5, Algorithm::HalvingDoubling)});
    std::vector<ChunkSchedule> s = {chunk({rs(0, 8000), rs(1, 4000), ag(1, 1000), ag(0, 4000)})};
    for (IntraPolicy p : {IntraPolicy::Fifo, IntraPolicy::Scf})
        for (int k : {1, 3}) {
            Ordering o = simulate_schedule(t, s, op(p, k));
            EXPECT_NEAR(o.makespan, 15, 1e-12);
            EXPECT_NEAR(run_of(o, 0, 1).start, 5, 1e-12);
            EXPECT_NEAR(run_of(o, 0, 2).start, 7.5, 1e-12);
            EXPECT_NEAR(run_of(o, 0, 3).start, 10, 1e-12);
            EXPECT_NEAR(o.busy[0], 10, 1e-12);
            EXPECT_NEAR(o.busy[1], 5, 1e-12);
        }
}

TEST(OrderingTimeline, SingleChunkRandomTopologiesSumOfStageTimes) {
    std::mt19937_64 rng(5);
    for (int i = 0; i < 100; ++i) {
        Topology t = themis_test::random_topology(rng);
        SchedulerParams sp;
        sp.policy = Policy::Baseline;
        auto s = schedule_chunks(t, Collective::AllReduce, {1e7}, sp);
        double sum = 0;
        for (const Stage &st : s[0].stages) {
            // Independent alpha-beta: steps * latency + (n-1)/n of the larger side / bw.
            const Dimension &d = t.dim(st.dim);
            const int n = d.peers;
            int steps = d.algorithm == Algorithm::Ring     ? n - 1
                        : d.algorithm == Algorithm::Direct ? 1
                                                           : static_cast<int>(std::log2(n) + 0.5);
            double larger = st.phase == Phase::ReduceScatter ? st.input_bytes : st.input_bytes * n;
            sum += steps * d.latency + larger * (n - 1) / n / d.bandwidth;
        }
        Ordering o = simulate_schedule(t, s, op(IntraPolicy::Scf, 1));
        ASSERT_TRUE(close_rel(o.makespan, sum, 1e-12)) << t.to_spec();
    }
}

// Fig. 5.a of the paper: 4x4, dim 1 at half dim 0's bandwidth, 4 chunks of 64 MB, baseline,
// FIFO. In u = MB/B: RS0 = 48, RS1 = 24, AG1 = 24, AG0 = 48 per chunk. Dim 0 never idles
// (RS0 x4 back to back, then the AG0 stages queue up behind them): makespan = 8 x 48 = 384 u,
// dim 1 busy 8 x 24 = 192 u. Dim 0 issues c0..c3 RS, then c0..c3 AG.
TEST(OrderingTimeline, PaperFig5aBaselineTimeline) {
    const double B = 1e9, u = 1e6 / B;
    Topology t({dim(4, B), dim(4, B / 2)});
    SchedulerParams sp;
    sp.policy = Policy::Baseline;
    auto s = schedule_chunks(t, Collective::AllReduce, split_bytes(256e6, 4), sp);
    Ordering o = simulate_schedule(t, s, op(IntraPolicy::Fifo, 1));
    EXPECT_NEAR(o.makespan, 384 * u, 1e-9 * 384 * u);
    EXPECT_NEAR(o.busy[0], 384 * u, 1e-9 * 384 * u);
    EXPECT_NEAR(o.busy[1], 192 * u, 1e-9 * 192 * u);
    std::vector<StageRef> want0 = {{0, 0}, {1, 0}, {2, 0}, {3, 0}, {0, 3}, {1, 3}, {2, 3}, {3, 3}};
    EXPECT_EQ(o.dim_order[0], want0);
    // Ideal time: 2 * 256 MB * 15/16 / (1.5 B) = 320 u, utilisation 320/384.
    EXPECT_NEAR(ideal_time(t, Collective::AllReduce, 256e6), 320 * u, 1e-9 * 320 * u);
}

// ---------------------------------------------------------------------------------------
// Structural properties over random schedules

TEST(OrderingProperties, EveryStageRunsOnceInDependencyOrderAtMostKAtOnce) {
    std::mt19937_64 rng(99);
    for (int i = 0; i < 60; ++i) {
        Topology t = themis_test::random_topology(rng);
        SchedulerParams sp;
        sp.policy = i % 2 ? Policy::Themis : Policy::Baseline;
        Collective coll = static_cast<Collective>(i % 3);
        const int chunks = std::uniform_int_distribution<int>(1, 24)(rng);
        auto s = schedule_chunks(t, coll, split_bytes(1e8, chunks), sp);
        for (IntraPolicy p : {IntraPolicy::Fifo, IntraPolicy::Scf})
            for (int k : {1, 2, 3}) {
                SCOPED_TRACE(t.to_spec() + " " + intra_policy_name(p) + " K=" + std::to_string(k));
                Ordering o = simulate_schedule(t, s, op(p, k));
                const double eps = 1e-9 * std::max(o.makespan, 1e-30);
                // Every stage exactly once in its dimension's order and in runs.
                std::set<std::pair<int, int>> all;
                for (int c = 0; c < chunks; ++c)
                    for (int st = 0; st < static_cast<int>(s[c].stages.size()); ++st)
                        all.insert({c, st});
                std::multiset<std::pair<int, int>> in_dims, in_runs;
                for (int d = 0; d < t.num_dims(); ++d)
                    for (const auto &r : o.dim_order[d]) {
                        in_dims.insert({r.chunk, r.stage});
                        ASSERT_EQ(s[r.chunk].stages[r.stage].dim, d);
                    }
                for (const auto &r : o.runs) in_runs.insert({r.ref.chunk, r.ref.stage});
                const std::multiset<std::pair<int, int>> want(all.begin(), all.end());
                ASSERT_EQ(in_dims, want);
                ASSERT_EQ(in_runs, in_dims);
                // Dependencies: stage s+1 ready when stage s ends; start >= ready.
                std::map<std::pair<int, int>, StageRun> by;
                for (const auto &r : o.runs) by[{r.ref.chunk, r.ref.stage}] = r;
                double last_end = 0;
                for (const auto &kv : by) {
                    const StageRun &r = kv.second;
                    ASSERT_GE(r.start, r.ready);
                    ASSERT_GE(r.end, r.start);
                    last_end = std::max(last_end, r.end);
                    const int c = kv.first.first, st = kv.first.second;
                    const double prev_end = st == 0 ? 0.0 : by[{c, st - 1}].end;
                    ASSERT_EQ(r.ready, prev_end);
                }
                ASSERT_EQ(o.makespan, last_end);
                // dim_order is the start order; at most K running at once; busy <= makespan.
                for (int d = 0; d < t.num_dims(); ++d) {
                    std::vector<StageRun> runs;
                    for (const auto &ref : o.dim_order[d])
                        runs.push_back(by[{ref.chunk, ref.stage}]);
                    for (size_t j = 1; j < runs.size(); ++j)
                        ASSERT_LE(runs[j - 1].start, runs[j].start);
                    for (const auto &r : runs) {
                        int overlapping = 0;
                        for (const auto &q : runs)
                            if (q.start <= r.start + eps && q.end > r.start + eps) ++overlapping;
                        ASSERT_LE(overlapping, k);
                    }
                    ASSERT_LE(o.busy[d], o.makespan + eps);
                }
            }
    }
}

TEST(OrderingProperties, WorkConservingAndPolicyRespectedWithK1) {
    // With K = 1 a dimension is never idle while a stage waits on it, and the stage that
    // starts is the oldest waiting (FIFO) or one with the smallest key (SCF).
    std::mt19937_64 rng(123);
    for (int i = 0; i < 60; ++i) {
        Topology t = themis_test::random_topology(rng);
        SchedulerParams sp;
        sp.policy = Policy::Themis;
        auto s = schedule_chunks(t, Collective::AllReduce, split_bytes(1e8, 16), sp);
        for (IntraPolicy p : {IntraPolicy::Fifo, IntraPolicy::Scf}) {
            SCOPED_TRACE(t.to_spec() + " " + intra_policy_name(p));
            Ordering o = simulate_schedule(t, s, op(p, 1));
            const double eps = 1e-9 * std::max(o.makespan, 1e-30);
            for (int d = 0; d < t.num_dims(); ++d) {
                std::vector<StageRun> runs;
                for (const auto &r : o.runs)
                    if (r.dim == d) runs.push_back(r);
                std::sort(runs.begin(), runs.end(),
                          [](const StageRun &a, const StageRun &b) { return a.start < b.start; });
                auto key = [&](const StageRun &r) {
                    const Stage &st = s[r.ref.chunk].stages[r.ref.stage];
                    const double n = t.dim(st.dim).peers;
                    return st.phase == Phase::ReduceScatter ? st.input_bytes : st.input_bytes * n;
                };
                for (size_t j = 0; j < runs.size(); ++j) {
                    // Starts when the previous ends or when it becomes ready, whichever later.
                    double free_at = j ? runs[j - 1].end : 0;
                    ASSERT_NEAR(runs[j].start, std::max(free_at, runs[j].ready), eps);
                    // Everything waiting at that moment (ready, started later) loses.
                    for (size_t q = j + 1; q < runs.size(); ++q) {
                        if (runs[q].ready > runs[j].start) continue;
                        if (p == IntraPolicy::Fifo)
                            ASSERT_LE(runs[j].ready, runs[q].ready);
                        else
                            ASSERT_LE(key(runs[j]), key(runs[q]) * (1 + 1e-12));
                    }
                }
            }
        }
    }
}

TEST(OrderingProperties, SameInputSameOutputBitForBit) {
    std::mt19937_64 rng(31);
    for (int i = 0; i < 30; ++i) {
        Topology t = themis_test::random_topology(rng);
        SchedulerParams sp;
        auto s = schedule_chunks(t, Collective::AllReduce, split_bytes(3e7, 32), sp);
        for (int k : {1, 3}) {
            Ordering a = simulate_schedule(t, s, op(IntraPolicy::Scf, k));
            Ordering b = simulate_schedule(t, s, op(IntraPolicy::Scf, k));
            ASSERT_EQ(a.makespan, b.makespan);
            ASSERT_EQ(a.busy, b.busy);
            ASSERT_EQ(a.dim_order, b.dim_order);
            ASSERT_EQ(a.runs.size(), b.runs.size());
            for (size_t j = 0; j < a.runs.size(); ++j) {
                ASSERT_EQ(a.runs[j].ref, b.runs[j].ref);
                ASSERT_EQ(a.runs[j].start, b.runs[j].start);
                ASSERT_EQ(a.runs[j].end, b.runs[j].end);
            }
        }
    }
}

TEST(OrderingProperties, EmptyScheduleTakesNoTime) {
    Ordering o = simulate_schedule(parse_topology("2x2"), {}, op(IntraPolicy::Scf));
    EXPECT_EQ(o.makespan, 0.0);
    EXPECT_TRUE(o.runs.empty());
    ASSERT_EQ(o.dim_order.size(), 2u);
    EXPECT_TRUE(o.dim_order[0].empty());
}

// ---------------------------------------------------------------------------------------
// Ideal time and the paper's utilisation numbers

TEST(OrderingIdeal, IdealTimeFormula) {
    // 2x4 at 10 + 30 B/s: N = 8. AR of 800 B: 2 * 800 * 7/8 / 40 = 35 s; RS, AG: 17.5 s.
    Topology t({dim(2, 10), dim(4, 30)});
    EXPECT_DOUBLE_EQ(ideal_time(t, Collective::AllReduce, 800), 35);
    EXPECT_DOUBLE_EQ(ideal_time(t, Collective::ReduceScatter, 800), 17.5);
    EXPECT_DOUBLE_EQ(ideal_time(t, Collective::AllGather, 800), 17.5);
    // Single-peer dimensions add no bandwidth.
    Topology u({dim(2, 10), dim(1, 1000), dim(4, 30)});
    EXPECT_DOUBLE_EQ(ideal_time(u, Collective::AllReduce, 800), 35);
    // Bcast, Reduce: S over the broadcast rate; here a rank's 40 B/s (the cut along the 10
    // B/s dimension feeds 4 ranks: 40), and 2 x 10 where 2x2 at 10/30 halves at 10.
    EXPECT_DOUBLE_EQ(ideal_time(t, Collective::Bcast, 800), 20);
    EXPECT_DOUBLE_EQ(ideal_time(t, Collective::Reduce, 800), 20);
    EXPECT_DOUBLE_EQ(ideal_time(Topology({dim(2, 10), dim(2, 30)}), Collective::Bcast, 800), 40);
}

TEST(OrderingIdeal, MakespanNeverBeatsIdeal) {
    std::mt19937_64 rng(77);
    for (int i = 0; i < 40; ++i) {
        Topology t = themis_test::random_topology(rng);
        if (t.size() == 1) continue;
        for (Policy p : {Policy::Baseline, Policy::Themis}) {
            SchedulerParams sp;
            sp.policy = p;
            auto s = schedule_chunks(t, Collective::AllReduce, split_bytes(1e8, 64), sp);
            Ordering o = simulate_schedule(t, s, op(IntraPolicy::Scf, 2));
            ASSERT_GE(o.makespan * (1 + 1e-9), ideal_time(t, Collective::AllReduce, 1e8))
                << t.to_spec();
        }
    }
}

// Paper Sec. 5.3 (bandwidth-only model, 6 topologies of Table 2, 100 MB .. 1 GB All-Reduce,
// 64 chunks, K = 1): average bandwidth utilisation baseline 56.31 %, Themis+FIFO 87.67 %,
// Themis+SCF 95.14 %. These are the paper's published numbers.
TEST(OrderingPaper, BandwidthOnlyUtilisationMatchesPublishedAverages) {
    struct Variant {
        Policy policy;
        IntraPolicy intra;
        double paper;
        double sum = 0;
    } variants[] = {{Policy::Baseline, IntraPolicy::Fifo, 0.5631},
                    {Policy::Themis, IntraPolicy::Fifo, 0.8767},
                    {Policy::Themis, IntraPolicy::ScfNewest, 0.9514}};
    int cases = 0;
    for (const auto &name : paper_topology_names()) {
        Topology t = paper_topology(name)->without_latency();
        for (double mb : {100.0, 250.0, 500.0, 1000.0}) {
            const double bytes = mb * 1e6;
            ++cases;
            for (auto &v : variants) {
                SchedulerParams sp;
                sp.policy = v.policy;
                sp.load_model = LoadModel::Reference;
                auto s = schedule_chunks(t, Collective::AllReduce, split_bytes(bytes, 64), sp);
                Ordering o = simulate_schedule(t, s, op(v.intra, 1));
                const double util = ideal_time(t, Collective::AllReduce, bytes) / o.makespan;
                ASSERT_GT(util, 0);
                ASSERT_LE(util, 1 + 1e-9) << name << " " << mb;
                v.sum += util;
            }
        }
    }
    for (const auto &v : variants) {
        const double avg = v.sum / cases;
        EXPECT_NEAR(avg, v.paper, 0.02)
            << policy_name(v.policy) << "+" << intra_policy_name(v.intra) << " average " << avg;
    }
    EXPECT_GE(variants[2].sum / cases, 0.94);
}

// ---------------------------------------------------------------------------------------
// Replays: given issue orders, one call or several in flight together (the engine's rules)

TEST(OrderingReplay, ItsOwnOrderReproducesTheSimulation) {
    // The engine issues each dimension's stages in the order the simulation started them:
    // replaying that order must give back every stage's times, under K and a byte bound.
    Topology t({dim(2, 1e6, 2e-6, Algorithm::Ring), dim(2, 2e6, 1e-6, Algorithm::Ring),
                dim(2, 4e6, 5e-6, Algorithm::Ring)});
    SchedulerParams sp;
    for (int k : {1, 2, 4}) {
        OrderingParams o = op(IntraPolicy::Scf, k);
        o.max_active_bytes = 3e5;
        auto s = schedule_chunks(t, Collective::AllReduce, split_bytes(4e6, 24), sp);
        const Ordering sim = simulate_schedule(t, s, o);
        const Ordering rep = replay_schedule(t, s, sim.dim_order, o);
        ASSERT_TRUE(close_rel(rep.makespan, sim.makespan, 1e-12)) << "K=" << k;
        ASSERT_EQ(rep.runs.size(), sim.runs.size());
        for (const StageRun &r : sim.runs) {
            const StageRun &q = run_of(rep, r.ref.chunk, r.ref.stage);
            EXPECT_TRUE(close_rel(q.start, r.start, 1e-12) && close_rel(q.end, r.end, 1e-12))
                << "K=" << k << " chunk " << r.ref.chunk << " stage " << r.ref.stage;
        }
    }
}

TEST(OrderingReplay, AStageOrderedBeforeItsPredecessorNeverStarts) {
    auto s = std::vector<ChunkSchedule>{chunk({rs(0, 2), ag(0, 1)})};
    std::vector<std::vector<StageRef>> backwards = {{{0, 1}, {0, 0}}};
    EXPECT_TRUE(
        std::isinf(replay_schedule(one_dim(), s, backwards, op(IntraPolicy::Scf)).makespan));
}

TEST(OrderingReplay, ALaterCallFillsWhatTheEarlierLeavesIdle) {
    // Two dimensions of 2 peers at 1 byte/s, K = 2. Call A: RS on dim 0 (input 2: 1 s),
    // then dim 1 (input 1: 0.5 s). Call B the other way round.
    //   InOrder: dim 1 waits for A's second stage (t = 1), then runs A's (0.5 B) and B's
    //            first (1 B) together: A's ends at 2, B's at 2.5; B's dim-0 stage 2.5-3.0.
    //   FillIdle: B's first stage runs on dim 1 from t = 0 beside A's on dim 0; at t = 1
    //            both second stages start, each alone on its dimension: done at 1.5.
    Topology t({dim(2, 1.0, 0, Algorithm::Ring), dim(2, 1.0, 0, Algorithm::Ring)});
    const std::vector<ChunkSchedule> a = {chunk({rs(0, 2), rs(1, 1)})};
    const std::vector<ChunkSchedule> b = {chunk({rs(1, 2), rs(0, 1)})};
    const std::vector<std::vector<StageRef>> a_order = {{{0, 0}}, {{0, 1}}};
    const std::vector<std::vector<StageRef>> b_order = {{{0, 1}}, {{0, 0}}};
    const std::vector<ReplayCall> calls = {{&a, &a_order}, {&b, &b_order}};
    EXPECT_TRUE(close_rel(
        replay_calls(t, calls, op(IntraPolicy::Scf, 2), CrossCall::InOrder).makespan, 3.0, 1e-12));
    EXPECT_TRUE(close_rel(
        replay_calls(t, calls, op(IntraPolicy::Scf, 2), CrossCall::FillIdle).makespan, 1.5, 1e-12));
    // With K = 1 the oldest call keeps its one slot: FillIdle is InOrder.
    EXPECT_TRUE(close_rel(
        replay_calls(t, calls, op(IntraPolicy::Scf, 1), CrossCall::FillIdle).makespan,
        replay_calls(t, calls, op(IntraPolicy::Scf, 1), CrossCall::InOrder).makespan, 1e-12));
}

TEST(OrderingReplay, EachCallRunsTheAlgorithmsItsPlanChose) {
    // One dimension of 4 peers, 1 s per step, bandwidth out of the picture (1e12 B/s), K = 1:
    // a stage costs its algorithm's steps: ring 3 s, direct 1 s. Call A runs ring, call B
    // direct: 3 + 1 = 4 s; replayed on A's network for both, 6 s.
    const Topology ring({dim(4, 1e12, 1.0, Algorithm::Ring)});
    const Topology direct({dim(4, 1e12, 1.0, Algorithm::Direct)});
    const std::vector<ChunkSchedule> one = {chunk({rs(0, 8)})};
    const std::vector<std::vector<StageRef>> order = {{{0, 0}}};
    const OrderingParams o = op(IntraPolicy::Scf, 1);
    EXPECT_TRUE(close_rel(
        replay_calls(ring, {{&one, &order, &ring}, {&one, &order, &direct}}, o, CrossCall::InOrder)
            .makespan,
        4.0, 1e-9));
    EXPECT_TRUE(close_rel(
        replay_calls(ring, {{&one, &order}, {&one, &order}}, o, CrossCall::InOrder).makespan, 6.0,
        1e-9));
}

TEST(OrderingNames, IntraPolicyNames) {
    EXPECT_STREQ(intra_policy_name(IntraPolicy::Fifo), "fifo");
    EXPECT_STREQ(intra_policy_name(IntraPolicy::Scf), "scf");
}

} // namespace
