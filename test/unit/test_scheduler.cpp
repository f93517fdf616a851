// Unit tests of src/scheduler: the splitter, the baseline order and Themis's Algorithm 1.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "scheduler.h"
#include "test_support.h"

using namespace themis;
using themis_test::close_rel;
using themis_test::dim;

namespace {

using Order = std::vector<int>;

std::vector<Order> rs_orders(const std::vector<ChunkSchedule> &s) {
    std::vector<Order> out;
    for (const auto &c : s) out.push_back(narrowing_order(c));
    return out;
}
std::vector<Order> ag_orders(const std::vector<ChunkSchedule> &s) {
    std::vector<Order> out;
    for (const auto &c : s) out.push_back(widening_order(c));
    return out;
}

SchedulerParams params(Policy p, LoadModel m, double threshold = 1.0 / 16) {
    SchedulerParams sp;
    sp.policy = p;
    sp.load_model = m;
    sp.threshold = threshold;
    return sp;
}

// ---------------------------------------------------------------------------------------
// Splitter

TEST(SchedulerSplit, EqualChunksWithRemainderInTheLast) {
    auto s = split_bytes(100, 4);
    ASSERT_EQ(s.size(), 4u);
    for (int i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(s[i], 25);
    auto t = split_bytes(10, 3);
    ASSERT_EQ(t.size(), 3u);
    EXPECT_DOUBLE_EQ(t[0], 10.0 / 3);
    EXPECT_DOUBLE_EQ(t[1], 10.0 / 3);
    EXPECT_NEAR(t[0] + t[1] + t[2], 10.0, 1e-12);
}

TEST(SchedulerSplit, FewerThanOneChunkMeansOne) {
    auto s = split_bytes(64, 0);
    ASSERT_EQ(s.size(), 1u);
    EXPECT_DOUBLE_EQ(s[0], 64);
}

// ---------------------------------------------------------------------------------------
// Baseline

TEST(SchedulerBaseline, AllReduceAscendingThenDescendingSkippingSinglePeerDims) {
    Topology t({dim(1, 1e9), dim(4, 1e9), dim(1, 1e9), dim(2, 1e9), dim(3, 1e9)});
    auto s = schedule_chunks(t, Collective::AllReduce, split_bytes(1e6, 5),
                             params(Policy::Baseline, LoadModel::Latency));
    ASSERT_EQ(s.size(), 5u);
    for (const auto &c : s) {
        EXPECT_EQ(narrowing_order(c), (Order{1, 3, 4}));
        EXPECT_EQ(widening_order(c), (Order{4, 3, 1}));
    }
}

TEST(SchedulerBaseline, StandaloneRsAscendingAgDescending) {
    Topology t = parse_topology("2x3x4");
    auto rs = schedule_chunks(t, Collective::ReduceScatter, split_bytes(1e6, 3),
                              params(Policy::Baseline, LoadModel::Reference));
    auto ag = schedule_chunks(t, Collective::AllGather, split_bytes(1e6, 3),
                              params(Policy::Baseline, LoadModel::Reference));
    for (const auto &c : rs) {
        EXPECT_EQ(narrowing_order(c), (Order{0, 1, 2}));
        EXPECT_TRUE(widening_order(c).empty());
    }
    for (const auto &c : ag) {
        EXPECT_EQ(widening_order(c), (Order{2, 1, 0}));
        EXPECT_TRUE(narrowing_order(c).empty());
    }
}

TEST(SchedulerBaseline, SingleRankHasNoStages) {
    Topology t = parse_topology("1x1");
    for (Collective c : {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather})
        for (Policy p : {Policy::Baseline, Policy::Themis}) {
            auto s = schedule_chunks(t, c, split_bytes(1000, 4), params(p, LoadModel::Latency));
            ASSERT_EQ(s.size(), 4u);
            for (const auto &ch : s) EXPECT_TRUE(ch.stages.empty());
        }
}

// ---------------------------------------------------------------------------------------
// The worked example of the paper (Sec. 3.3 Fig. 5, Sec. 4.2 Fig. 7)
//
// A 256 MB All-Reduce in four 64 MB chunks on two dimensions; dim 0 (the paper's "dim1")
// has 4 peers and bandwidth B, dim 1 ("dim2") has bandwidth B/2. The paper says the
// 64 MB chunk shrinks by 4 when entering dim 1 (so n0 = 4) and that the stage on dim 1
// then runs 2x faster than the stage on dim 0. With n1 = 4 that holds exactly, counting
// the (n-1)/n factor of what a stage sends:
//   RS dim 0, input 64: 64*3/4 / B     = 48 u      (u = MB / B)
//   RS dim 1, input 16: 16*3/4 / (B/2) = 24 u      -> 2x faster, as the paper says.
// (With n1 = 2 it would be 16 u, 3x faster, and the greedy would pick [1,0] for the 4th
// chunk too, unlike the paper's Fig. 7.) So: 4x4, zero latency, reference load model
// (bandwidth time of the RS half), threshold 64 MB / 16 = 4 MB.
//
// Loads (dim 0, dim 1) and the greedy choice, per chunk:
//   chunk 0: loads (0, 0): gap 0 < threshold -> baseline [0,1].
//            charge RS0(64) = 48, RS1(16) = 24                  -> (48, 24)
//   chunk 1: least loaded dim 1; gap 24 u = 24 u * (B/2) * 4/3 = 16 MB of an RS on dim 1
//            >= 4 MB -> sorted order [1,0] ("starts from dim2", Fig. 7 step c).
//            charge RS1(64) = 64*3/4/(B/2) = 96, RS0(16) = 16*3/4/B = 12 -> (60, 120)
//   chunk 2: least loaded dim 0; gap 60 u = 80 MB >= 4 MB -> [0,1]  -> (108, 144)
//   chunk 3: least loaded dim 0; gap 36 u = 48 MB >= 4 MB -> [0,1]  -> (156, 168)
// "the last two chunks start from dim1" (steps d & e). AG orders are the reverses.
Topology fig5_topology() {
    const double B = 100e9;
    return Topology({dim(4, B), dim(4, B / 2)});
}

TEST(SchedulerPaperExample, Fig7ThemisOrdersAllReduce) {
    for (LoadModel m : {LoadModel::Reference, LoadModel::Latency}) { // equal at zero latency
        SCOPED_TRACE(load_model_name(m));
        auto s = schedule_chunks(fig5_topology(), Collective::AllReduce, split_bytes(256e6, 4),
                                 params(Policy::Themis, m));
        EXPECT_EQ(rs_orders(s), (std::vector<Order>{{0, 1}, {1, 0}, {0, 1}, {0, 1}}));
        EXPECT_EQ(ag_orders(s), (std::vector<Order>{{1, 0}, {0, 1}, {1, 0}, {1, 0}}));
        // Stage inputs of chunk 1 (starts on dim 1): 64 MB, 16 MB; then AG 4 MB, 16 MB.
        ASSERT_EQ(s[1].stages.size(), 4u);
        EXPECT_DOUBLE_EQ(s[1].stages[0].input_bytes, 64e6);
        EXPECT_DOUBLE_EQ(s[1].stages[1].input_bytes, 16e6);
        EXPECT_DOUBLE_EQ(s[1].stages[2].input_bytes, 4e6);
        EXPECT_DOUBLE_EQ(s[1].stages[3].input_bytes, 16e6);
    }
}

TEST(SchedulerPaperExample, Fig7BaselineKeepsOneOrder) {
    auto s = schedule_chunks(fig5_topology(), Collective::AllReduce, split_bytes(256e6, 4),
                             params(Policy::Baseline, LoadModel::Reference));
    EXPECT_EQ(rs_orders(s), (std::vector<Order>(4, Order{0, 1})));
    EXPECT_EQ(ag_orders(s), (std::vector<Order>(4, Order{1, 0})));
}

TEST(SchedulerPaperExample, Fig7StandaloneReduceScatterSameOrders) {
    // The tracker sees the same RS stages as for the All-Reduce above.
    auto s = schedule_chunks(fig5_topology(), Collective::ReduceScatter, split_bytes(256e6, 4),
                             params(Policy::Themis, LoadModel::Reference));
    EXPECT_EQ(rs_orders(s), (std::vector<Order>{{0, 1}, {1, 0}, {0, 1}, {0, 1}}));
}

TEST(SchedulerPaperExample, Fig7StandaloneAllGatherMostLoadedFirst) {
    // AG chunk of 64 MB output starts from 64/16 = 4 MB. Charges (AG sends 3/4 of output):
    //   chunk 0: baseline [1,0]: AG1 4->16 = 12/(B/2) = 24, AG0 16->64 = 48/B = 48 -> (48, 24)
    //   chunk 1: most loaded first -> [0,1]; gap 24 u = 16 MB of an RS on dim 1 >= 4 MB.
    //            AG0 4->16 = 12, AG1 16->64 = 48/(B/2) = 96                    -> (60, 120)
    //   chunk 2: most loaded first -> [1,0]                                    -> (108, 144)
    //   chunk 3: [1,0]
    auto s = schedule_chunks(fig5_topology(), Collective::AllGather, split_bytes(256e6, 4),
                             params(Policy::Themis, LoadModel::Reference));
    EXPECT_EQ(ag_orders(s), (std::vector<Order>{{1, 0}, {0, 1}, {1, 0}, {1, 0}}));
    EXPECT_DOUBLE_EQ(s[1].stages[0].input_bytes, 4e6);
    EXPECT_DOUBLE_EQ(s[1].stages[1].input_bytes, 16e6);
}

TEST(SchedulerNames, EachCollectivesRowSaysWhichPhasesItsChunksPass) {
    // The stages a chunk gets (chunk_stages) follow the row: its first phase over the
    // order, a second one over the order reversed; sizes shrink by n_d through a narrowing
    // phase and grow by n_d through a widening one.
    const Topology t({dim(2, 1e9), dim(4, 1e9)});
    const std::pair<Collective, std::vector<Phase>> expected[] = {
        {Collective::AllReduce, {Phase::ReduceScatter, Phase::AllGather}},
        {Collective::ReduceScatter, {Phase::ReduceScatter}},
        {Collective::AllGather, {Phase::AllGather}},
        {Collective::Bcast, {Phase::Cast}},
        {Collective::Reduce, {Phase::Collect}},
    };
    ASSERT_EQ(collectives().size(), std::size(expected));
    for (const auto &[c, phases] : expected) {
        const CollectiveInfo &info = collective_info(c);
        EXPECT_EQ(info.id, c);
        EXPECT_EQ(info.phases, phases) << info.name;
        if (info.rooted) continue; // trees, not orders: SchedulerTrees below
        const std::vector<Stage> stages = chunk_stages(t, c, {0, 1}, 8e6);
        std::vector<Stage> want;
        double bytes = phases[0] == Phase::AllGather ? 1e6 : 8e6; // AG alone: 1/8 in
        for (int d : {0, 1})
            want.push_back({d, phases[0], bytes}),
                bytes *= (phases[0] == Phase::AllGather ? t.dim(d).peers : 1.0 / t.dim(d).peers);
        if (phases.size() > 1)
            for (int d : {1, 0}) want.push_back({d, phases[1], bytes}), bytes *= t.dim(d).peers;
        ASSERT_EQ(stages.size(), want.size()) << info.name;
        for (size_t i = 0; i < want.size(); ++i) {
            EXPECT_EQ(stages[i].dim, want[i].dim) << info.name << " stage " << i;
            EXPECT_EQ(stages[i].phase, want[i].phase) << info.name << " stage " << i;
            EXPECT_DOUBLE_EQ(stages[i].input_bytes, want[i].input_bytes) << info.name << " " << i;
        }
    }
    EXPECT_TRUE(collective_info(Collective::AllReduce).one_vector);
    EXPECT_TRUE(collective_info(Collective::Bcast).one_vector);
    EXPECT_FALSE(collective_info(Collective::ReduceScatter).one_vector);
    EXPECT_TRUE(collective_info(Collective::Reduce).rooted);
    EXPECT_FALSE(collective_info(Collective::AllReduce).rooted);
}

TEST(SchedulerTrees, ARootedChunkTakesOneStagePerCastOfItsTreeWaveByWave) {
    // Bcast: the casts in waves, each cast's wave the number of casts the chunk took to
    // reach its source; Reduce: the same casts backwards (the last wave first), so that a
    // rank collects from the casts it fed before it sends its own sum on.
    const Topology t({dim(2, 100e6), dim(4, 200e6)});
    const std::vector<double> bytes(8, 1e6);
    const auto bcast = schedule_chunks(t, Collective::Bcast, bytes, SchedulerParams(), {}, 5);
    const auto reduce = schedule_chunks(t, Collective::Reduce, bytes, SchedulerParams(), {}, 5);
    ASSERT_EQ(bcast.size(), bytes.size());
    for (size_t k = 0; k < bcast.size(); ++k) {
        const CastTree &tree = bcast[k].tree;
        ASSERT_EQ(bcast[k].stages.size(), tree.size());
        ASSERT_EQ(reduce[k].stages.size(), tree.size());
        std::vector<int> wave_of(size_t(t.size()), -1); // when a rank holds the chunk
        wave_of[5] = 0;
        int last = 0;
        for (size_t i = 0; i < tree.size(); ++i) { // the tree's order: sources hold it
            const GroupCast &cast = tree[i];
            for (int v : cast.targets) wave_of[size_t(v)] = wave_of[size_t(cast.source)] + 1;
            last = std::max(last, wave_of[size_t(cast.source)]);
        }
        for (size_t i = 0; i < tree.size(); ++i) {
            const Stage &b = bcast[k].stages[i], &r = reduce[k].stages[i];
            EXPECT_EQ(b.phase, Phase::Cast);
            EXPECT_EQ(r.phase, Phase::Collect);
            EXPECT_EQ(b.dim, tree[size_t(b.cast)].dim);
            EXPECT_DOUBLE_EQ(b.input_bytes, 1e6);
            EXPECT_EQ(b.wave, wave_of[size_t(tree[size_t(b.cast)].source)]);
            EXPECT_EQ(r.wave, last - wave_of[size_t(tree[size_t(r.cast)].source)]);
            if (i > 0) {
                EXPECT_LE(bcast[k].stages[i - 1].wave, b.wave);
                EXPECT_LE(reduce[k].stages[i - 1].wave, r.wave);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Load carried from one call to the next one in flight with it (u = 1e-5 s, as above)

TEST(SchedulerCarriedLoad, TheTrackerExcessOverTheLeastLoadedDimension) {
    // Fig. 7 ends at loads (156, 168) u: dim 1 carries 12 u. unit = 128 u: grid 2 u, cap 16 u.
    const double u = 1e-5;
    auto s = schedule_chunks(fig5_topology(), Collective::AllReduce, split_bytes(256e6, 4),
                             params(Policy::Themis, LoadModel::Reference));
    auto carried = carried_load(fig5_topology(), Collective::AllReduce, s,
                                params(Policy::Themis, LoadModel::Reference), {}, 128 * u);
    ASSERT_EQ(carried.size(), 2u);
    EXPECT_DOUBLE_EQ(carried[0], 0.0);
    EXPECT_NEAR(carried[1], 12 * u, 1e-12);
    // At most 8 grid steps: unit = 64 u caps 12 u at 8 u; a grid of 32 u rounds it to 0.
    EXPECT_NEAR(carried_load(fig5_topology(), Collective::AllReduce, s,
                             params(Policy::Themis, LoadModel::Reference), {}, 64 * u)[1],
                8 * u, 1e-12);
    EXPECT_DOUBLE_EQ(carried_load(fig5_topology(), Collective::AllReduce, s,
                                  params(Policy::Themis, LoadModel::Reference), {}, 2048 * u)[1],
                     0.0);
}

TEST(SchedulerCarriedLoad, ACarriedLoadSteersTheNextCallsFirstChunks) {
    // Dim 0 carries 60 u. chunk 0: least loaded dim 1, gap 60 u = 40 MB of an RS there
    // (>= 4 MB): [1,0] -> (72, 96); chunk 1: [0,1] -> (120, 120); chunk 2: equal loads,
    // baseline [0,1] -> (168, 144); chunk 3: gap 24 u = 16 MB: [1,0]. Without it: Fig. 7.
    const double u = 1e-5;
    auto s = schedule_chunks(fig5_topology(), Collective::AllReduce, split_bytes(256e6, 4),
                             params(Policy::Themis, LoadModel::Reference), {60 * u, 0});
    EXPECT_EQ(rs_orders(s), (std::vector<Order>{{1, 0}, {0, 1}, {0, 1}, {1, 0}}));
}

// ---------------------------------------------------------------------------------------
// Threshold

// 4x4, B0 = 1 GB/s, B1 = 1.04 * B0 / 4 (slightly more than the balanced B0/4), chunks of
// 64 MB (threshold 4 MB). Baseline chunk loads: RS0(64 MB) = 48 MB / B0,
// RS1(16 MB) = 12 MB / B1, so after k baseline chunks dim 1 is the least loaded, by
//   k * (48 MB/B0 - 12 MB/B1)  =  k * 0.64 MB as bytes of an RS on dim 1
//   (gap * B1 * 4/3 = k * (48 * 1.04/4 * 4/3 - 16) MB = k * 0.64 MB).
// Chunks 0..6 see gaps 0 .. 3.84 MB < 4 MB: baseline. Chunk 7 sees 4.48 MB: [1,0].
Topology threshold_topology() { return Topology({dim(4, 1e9), dim(4, 1.04e9 / 4)}); }

TEST(SchedulerThreshold, LoadsWithinThresholdTakeBaselineOrder) {
    // An All-Reduce is charged as its RS half: charging the AG half too would double the
    // gap and flip chunk 4 instead of chunk 7.
    for (Collective c : {Collective::AllReduce, Collective::ReduceScatter}) {
        SCOPED_TRACE(collective_name(c));
        auto s = schedule_chunks(threshold_topology(), c, split_bytes(8 * 64e6, 8),
                                 params(Policy::Themis, LoadModel::Reference));
        std::vector<Order> want(7, Order{0, 1});
        want.push_back({1, 0});
        EXPECT_EQ(rs_orders(s), want);
    }
}

TEST(SchedulerThreshold, ZeroThresholdFollowsTheLoadsAtOnce) {
    auto s = schedule_chunks(threshold_topology(), Collective::AllReduce, split_bytes(2 * 64e6, 2),
                             params(Policy::Themis, LoadModel::Reference, 0.0));
    // Chunk 0: all loads equal, sorted order = baseline. Chunk 1: gap 0.64 MB > 0 -> [1,0].
    EXPECT_EQ(rs_orders(s), (std::vector<Order>{{0, 1}, {1, 0}}));
}

TEST(SchedulerThreshold, LargeThresholdKeepsBaseline) {
    // Threshold 1/2: 32 MB, far above the largest gap (4.48 MB) of the 8 chunks.
    auto s = schedule_chunks(threshold_topology(), Collective::AllReduce, split_bytes(8 * 64e6, 8),
                             params(Policy::Themis, LoadModel::Reference, 0.5));
    EXPECT_EQ(rs_orders(s), (std::vector<Order>(8, Order{0, 1})));
}

TEST(SchedulerThreshold, FirstChunkAlwaysBaseline) {
    // Even on a very lopsided network, and with a zero threshold.
    std::mt19937_64 rng(11);
    for (int i = 0; i < 50; ++i) {
        Topology t = themis_test::random_topology(rng);
        for (double th : {0.0, 1.0 / 16})
            for (Collective c :
                 {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather}) {
                auto s = schedule_chunks(t, c, split_bytes(1e8, 8),
                                         params(Policy::Themis, LoadModel::Latency, th));
                auto base = schedule_chunks(t, c, split_bytes(1e8, 8),
                                            params(Policy::Baseline, LoadModel::Latency, th));
                ASSERT_EQ(narrowing_order(s[0]), narrowing_order(base[0])) << t.to_spec();
                ASSERT_EQ(widening_order(s[0]), widening_order(base[0])) << t.to_spec();
            }
    }
}

TEST(SchedulerThreshold, JustEnoughNetworksKeepTheBaselineForEveryChunk) {
    // "Just enough" bandwidth, B_(d+1) = B_d / n_d: in the baseline order no dimension
    // carries more time per chunk than the ones before it (2x2x2, 4x4: exactly the same),
    // so Themis, least loaded first, must keep the baseline order for all chunks
    // (on the emulated 2x4 200/100 and 2x2x2 200/100/50 networks both policies measured
    // 0.99-1.02x of each other: they run one plan).
    const Topology nets[] = {
        Topology({dim(2, 25e6, 1e-6), dim(4, 12.5e6, 1e-6)}),
        Topology({dim(2, 25e6, 1e-6), dim(2, 12.5e6, 1e-6), dim(2, 6.25e6, 1e-6)}),
        Topology({dim(4, 100e9), dim(4, 25e9)})};
    for (const Topology &t : nets)
        for (LoadModel m : {LoadModel::Reference, LoadModel::Latency})
            for (Collective c :
                 {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather}) {
                SCOPED_TRACE(t.to_spec() + " " + collective_name(c) + " " + load_model_name(m));
                const auto chunks =
                    split_bytes(64 * 262144.0 * (c == Collective::AllReduce ? 1 : 8), 64);
                auto themis_s = schedule_chunks(t, c, chunks, params(Policy::Themis, m));
                auto base = schedule_chunks(t, c, chunks, params(Policy::Baseline, m));
                EXPECT_EQ(rs_orders(themis_s), rs_orders(base));
                EXPECT_EQ(ag_orders(themis_s), ag_orders(base));
            }
}

// ---------------------------------------------------------------------------------------
// Load models

// 4x4, B0 = 1 GB/s, B1 = B0/4: bandwidth loads balance exactly (48 MB/B0 = 12 MB/B1 per
// 64 MB chunk), so the reference model keeps the baseline. Dim 0 (ring, 3 steps) has a
// 10 ms step latency, dim 1 none: the latency model charges dim 0 30 ms more per stage.
//   chunk 0: baseline; loads (0.048 + 0.030, 0.048) = (0.078, 0.048)
//   chunk 1: gap 30 ms = 30 ms * 0.25 GB/s * 4/3 = 10 MB >= 4 MB -> [1,0];
//            RS1(64 MB) = 0.192, RS0(16 MB) = 0.012 + 0.030  -> (0.120, 0.240)
//   chunk 2: dim 0 least loaded -> [0,1]
TEST(SchedulerLoadModel, LatencyModelChargesFixedDelayReferenceDoesNot) {
    Topology t({dim(4, 1e9, 10e-3, Algorithm::Ring), dim(4, 0.25e9, 0, Algorithm::Ring)});
    auto ref = schedule_chunks(t, Collective::AllReduce, split_bytes(3 * 64e6, 3),
                               params(Policy::Themis, LoadModel::Reference));
    EXPECT_EQ(rs_orders(ref), (std::vector<Order>(3, Order{0, 1})));
    auto lat = schedule_chunks(t, Collective::AllReduce, split_bytes(3 * 64e6, 3),
                               params(Policy::Themis, LoadModel::Latency));
    EXPECT_EQ(rs_orders(lat), (std::vector<Order>{{0, 1}, {1, 0}, {0, 1}}));
}

// The tracker charges a stage's bytes at the rate its dimension sustains: its fill curve's
// best point. Two dimensions of 2 peers at 1 B/s, no latency, All-Reduce of 2 x 400 B,
// reference model (RS charged):
//   chunk 0: baseline [0,1]: RS0(400) sends 200 B, RS1(200) 100 B.
//   full links: loads (200, 100): gap 100 s = 100 B/s x 2/1 = 200 B >= 400/16 -> [1,0].
//   dimension 1 sustaining half its bandwidth: loads (200, 200): no gap -> baseline [0,1].
TEST(SchedulerLoadModel, TheTrackerChargesAtTheBestPointOfTheFillCurve) {
    const SchedulerParams p = params(Policy::Themis, LoadModel::Reference);
    Topology full({dim(2, 1.0), dim(2, 1.0)});
    EXPECT_EQ(rs_orders(schedule_chunks(full, Collective::AllReduce, split_bytes(800, 2), p)),
              (std::vector<Order>{{0, 1}, {1, 0}}));
    Dimension half = dim(2, 1.0);
    half.fill = {0.25, 0.5};
    Topology filled({dim(2, 1.0), half});
    EXPECT_EQ(rs_orders(schedule_chunks(filled, Collective::AllReduce, split_bytes(800, 2), p)),
              (std::vector<Order>{{0, 1}, {0, 1}}));
    // The same curve on both dimensions: orders as with full links.
    Topology both({half, half});
    EXPECT_EQ(rs_orders(schedule_chunks(both, Collective::AllReduce, split_bytes(800, 2), p)),
              (std::vector<Order>{{0, 1}, {1, 0}}));
}

TEST(SchedulerNames, NamesOfEnums) {
    EXPECT_STREQ(collective_name(Collective::AllReduce), "allreduce");
    EXPECT_STREQ(collective_name(Collective::ReduceScatter), "reduce_scatter");
    EXPECT_STREQ(collective_name(Collective::AllGather), "allgather");
    EXPECT_STREQ(policy_name(Policy::Baseline), "baseline");
    EXPECT_STREQ(policy_name(Policy::Themis), "themis");
    EXPECT_STREQ(load_model_name(LoadModel::Reference), "reference");
    EXPECT_STREQ(load_model_name(LoadModel::Latency), "latency");
}

// ---------------------------------------------------------------------------------------
// Invariants over many random topologies

bool same_schedule(const std::vector<ChunkSchedule> &a, const std::vector<ChunkSchedule> &b) {
    if (a.size() != b.size()) return false;
    for (size_t c = 0; c < a.size(); ++c) {
        if (a[c].bytes != b[c].bytes || a[c].stages.size() != b[c].stages.size()) return false;
        for (size_t s = 0; s < a[c].stages.size(); ++s) {
            const Stage &x = a[c].stages[s], &y = b[c].stages[s];
            if (x.dim != y.dim || x.phase != y.phase || x.input_bytes != y.input_bytes)
                return false;
        }
    }
    return true;
}

// Checks one chunk of one schedule; returns "" or what is wrong.
std::string check_chunk(const Topology &t, Collective coll, Policy policy, const ChunkSchedule &c,
                        double bytes, const Order &ascending) {
    const double n_total = t.size();
    const Order descending(ascending.rbegin(), ascending.rend());
    if (c.bytes != bytes) return "chunk bytes differ from the split";
    Order rs = narrowing_order(c), ag = widening_order(c);
    // Phases: all RS stages first, then all AG stages.
    bool seen_ag = false;
    for (const Stage &s : c.stages) {
        if (s.phase == Phase::AllGather)
            seen_ag = true;
        else if (seen_ag)
            return "RS stage after an AG stage";
    }
    auto is_perm_of_active = [&](Order o) {
        std::sort(o.begin(), o.end());
        return o == ascending;
    };
    const bool has_rs = coll != Collective::AllGather, has_ag = coll != Collective::ReduceScatter;
    if (has_rs ? !is_perm_of_active(rs) : !rs.empty())
        return "RS stages do not visit each multi-peer dimension exactly once";
    if (has_ag ? !is_perm_of_active(ag) : !ag.empty())
        return "AG stages do not visit each multi-peer dimension exactly once";
    if (coll == Collective::AllReduce && ag != Order(rs.rbegin(), rs.rend()))
        return "All-Reduce AG order is not the reverse of its RS order";
    if (policy == Policy::Baseline && ((has_rs && rs != ascending) || (has_ag && ag != descending)))
        return "baseline order is not ascending (RS) / descending (AG)";
    // Sizes: RS input starts at the chunk and shrinks by n_d; AG grows by n_d back to the
    // chunk; bytes sent per phase add up to (1 - 1/N) of the chunk.
    double expect_in = coll == Collective::AllGather ? bytes / n_total : bytes;
    double sent_rs = 0, sent_ag = 0;
    for (const Stage &s : c.stages) {
        const double n = t.dim(s.dim).peers;
        if (!close_rel(s.input_bytes, expect_in, 1e-12)) return "stage input size off";
        if (s.phase == Phase::ReduceScatter) {
            sent_rs += stage_bytes_sent(t.dim(s.dim), s.phase, s.input_bytes);
            if (!close_rel(stage_bytes_sent(t.dim(s.dim), s.phase, s.input_bytes),
                           s.input_bytes * (n - 1) / n, 1e-12))
                return "RS bytes sent is not (n-1)/n of the input";
            expect_in /= n;
        } else {
            sent_ag += stage_bytes_sent(t.dim(s.dim), s.phase, s.input_bytes);
            if (!close_rel(stage_bytes_sent(t.dim(s.dim), s.phase, s.input_bytes),
                           s.input_bytes * (n - 1), 1e-12))
                return "AG bytes sent is not (n-1)/n of the output";
            expect_in *= n;
        }
    }
    const double per_phase = (1 - 1 / n_total) * bytes;
    if (has_rs && !close_rel(sent_rs, per_phase, 1e-9)) return "RS bytes sent != (1-1/N) S";
    if (has_ag && !close_rel(sent_ag, per_phase, 1e-9)) return "AG bytes sent != (1-1/N) S";
    if (has_ag && !close_rel(expect_in, bytes, 1e-12)) return "AG does not end at the chunk size";
    if (!has_ag && !close_rel(expect_in, bytes / n_total, 1e-12))
        return "RS does not end at 1/N of the chunk";
    return "";
}

TEST(SchedulerInvariants, RandomTopologiesAllCollectivesPoliciesAndModels) {
    std::mt19937_64 rng(2024);
    int themis_reordered = 0;
    for (int i = 0; i < 200; ++i) {
        Topology t = themis_test::random_topology(rng);
        Order ascending;
        for (int d = 0; d < t.num_dims(); ++d)
            if (t.dim(d).peers > 1) ascending.push_back(d);
        const int chunks = std::uniform_int_distribution<int>(1, 40)(rng);
        const double total = std::uniform_real_distribution<double>(1e3, 1e9)(rng);
        const auto split = split_bytes(total, chunks);
        for (Collective coll :
             {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather})
            for (Policy policy : {Policy::Baseline, Policy::Themis})
                for (LoadModel model : {LoadModel::Reference, LoadModel::Latency}) {
                    SchedulerParams p = params(policy, model);
                    auto s = schedule_chunks(t, coll, split, p);
                    ASSERT_EQ(s.size(), split.size());
                    for (size_t c = 0; c < s.size(); ++c) {
                        std::string err = check_chunk(t, coll, policy, s[c], split[c], ascending);
                        ASSERT_EQ(err, "") << t.to_spec() << " " << collective_name(coll) << " "
                                           << policy_name(policy) << " " << load_model_name(model)
                                           << " chunk " << c << " of " << chunks;
                        Order o = coll == Collective::AllGather ? widening_order(s[c])
                                                                : narrowing_order(s[c]);
                        Order base = coll == Collective::AllGather
                                         ? Order(ascending.rbegin(), ascending.rend())
                                         : ascending;
                        if (o != base) ++themis_reordered;
                    }
                    ASSERT_TRUE(same_schedule(s, schedule_chunks(t, coll, split, p)))
                        << "recomputing changed the schedule: " << t.to_spec();
                }
    }
    // The sweep must actually exercise non-baseline orders.
    EXPECT_GT(themis_reordered, 100);
}

} // namespace
