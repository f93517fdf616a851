// Unit tests of tools/sim_paper: themis-sim's predictions of several calls in flight.
#include <gtest/gtest.h>

#include "sim_paper.h"

using namespace themis;
using namespace themis::sim;

namespace {

SimCase burst(int calls, bool carry_load) {
    SimCase c;
    c.topology = parse_topology("2x2x2:bw=50Mbps,100Mbps,200Mbps:lat=50us,30us,20us");
    c.bytes = 4 << 20;
    c.ordering.max_active = 4;
    c.ordering.max_active_bytes = 2 << 20;
    c.calls = calls;
    c.carry_load = carry_load;
    return c;
}

TEST(SimCalls, OneCallIsThePlannersPrediction) {
    const SimCase c = burst(1, true);
    const SimResult r = simulate(c);
    const Prediction p = predict_plan(c.topology, plan_request(c));
    EXPECT_EQ(r.ordering.makespan, p.ordering.makespan);
    EXPECT_EQ(r.schedule.size(), p.schedule.size());
    EXPECT_EQ(r.ideal, ideal_time(c.topology, c.collective, c.bytes));
}

TEST(SimCalls, BackToBackCallsShareTheDimensionsAndTheCarriedLoad) {
    // Eight 4 MiB calls of 16 chunks: each alone loads the 50 Mbit/s dimension ~19 % above
    // its share, eight times over; planned from the carried load they balance it.
    const SimResult alone = simulate(burst(8, false)), carried = simulate(burst(8, true));
    const SimResult one = simulate(burst(1, false));
    EXPECT_EQ(alone.schedule.size(), 8 * one.schedule.size());
    EXPECT_DOUBLE_EQ(alone.ideal, 8 * one.ideal);
    EXPECT_EQ(alone.ordering.runs.size(), 8 * one.ordering.runs.size());
    // Sharing the queues, eight calls take less than eight calls one after another.
    EXPECT_LT(alone.ordering.makespan, 8 * one.ordering.makespan);
    EXPECT_GT(carried.utilization(), alone.utilization() + 0.05);
}

} // namespace
