// Unit tests of tools/order_mix: the linear program over order fractions (themis-sim's bound).
#include <gtest/gtest.h>

#include <random>

#include "order_mix.h"
#include "ordering.h"
#include "test_support.h"

using namespace themis;
using themis::sim::best_order_mix;
using themis_test::dim;

TEST(OrderMix, OneDimensionIsItsOwnBusyTime) {
    // All-Reduce of 100 B on 4 peers at 1 B/s: RS sends 75 B, AG sends 75 B: 150 s.
    const auto mix = best_order_mix(Topology({dim(4, 1.0, 0)}), Collective::AllReduce, 100);
    EXPECT_NEAR(mix.time, 150, 1e-9);
    ASSERT_EQ(mix.shares.size(), 1u);
    EXPECT_NEAR(mix.shares[0].fraction, 1, 1e-12);
}

TEST(OrderMix, EqualDimensionsSplitTheDataEvenly) {
    // 2x2 at 1 B/s each, All-Reduce of 100 B. Order (0,1): dim 0 sends 50 (RS) + 50 (AG),
    // dim 1 sends 25 + 25; order (1,0) the mirror. Half each: both dims busy 75 s, which
    // is also the ideal 2 x 100 x 3/4 / 2.
    const Topology t({dim(2, 1.0, 0), dim(2, 1.0, 0)});
    const auto mix = best_order_mix(t, Collective::AllReduce, 100);
    EXPECT_NEAR(mix.time, 75, 1e-9);
    EXPECT_NEAR(mix.time, ideal_time(t, Collective::AllReduce, 100), 1e-9);
    ASSERT_EQ(mix.shares.size(), 2u);
    EXPECT_NEAR(mix.shares[0].fraction, 0.5, 1e-9);
    EXPECT_NEAR(mix.shares[1].fraction, 0.5, 1e-9);
}

TEST(OrderMix, ASlowDimensionBoundsAboveTheIdeal) {
    // 2x2 at 1 and 100 B/s. Dim 0 sends at least 25 + 25 of 100 B (when it comes last, on
    // a half): 50 s, by order (1,0) alone. The ideal (1.5 x 100 / 101 s) assumes dim 0
    // could carry less than any order lets it.
    const Topology t({dim(2, 1.0, 0), dim(2, 100.0, 0)});
    const auto mix = best_order_mix(t, Collective::AllReduce, 100);
    EXPECT_NEAR(mix.time, 50, 1e-9);
    ASSERT_EQ(mix.shares.size(), 1u);
    EXPECT_EQ(mix.shares[0].order, (std::vector<int>{1, 0}));
    EXPECT_GT(mix.time, ideal_time(t, Collective::AllReduce, 100));
}

TEST(OrderMix, AllGatherStartsFromTheShare) {
    // All-Gather of 400 B (output) on 2x2 at 1 B/s each: from the 100 B share, the first
    // dimension sends 100, the second 200. Half each way: 150 s on both.
    const Topology t({dim(2, 1.0, 0), dim(2, 1.0, 0)});
    EXPECT_NEAR(best_order_mix(t, Collective::AllGather, 400).time, 150, 1e-9);
}

TEST(OrderMix, NoSimulatedScheduleBeatsTheBound) {
    std::mt19937_64 rng(7);
    for (int i = 0; i < 40; ++i) {
        const Topology t = themis_test::random_topology(rng).without_latency();
        const Collective coll = static_cast<Collective>(i % 3);
        SCOPED_TRACE(t.to_spec());
        const double bound = best_order_mix(t, coll, 1e8).time;
        SchedulerParams sp;
        const auto schedule = schedule_chunks(t, coll, split_bytes(1e8, 32), sp);
        OrderingParams op;
        op.max_active = 2;
        EXPECT_GE(simulate_schedule(t, schedule, op).makespan, bound * (1 - 1e-9));
    }
}
