// Unit tests of src/rank_layout: where "auto" and explicit specs place a communicator's
// ranks, which algorithm "auto" gives each level, and the layouts it refuses.
#include <gtest/gtest.h>

#include "rank_layout.h"

using namespace themis;

namespace {

// node_of for `nodes` nodes of `per_node` ranks, ranks dealt round-robin over the nodes
// (rank r on node r % nodes), so no node is a block of consecutive ranks.
std::vector<int> round_robin(int nodes, int per_node) {
    std::vector<int> node_of(nodes * per_node);
    for (int r = 0; r < int(node_of.size()); ++r) node_of[r] = 100 + r % nodes;
    return node_of;
}

// node_of for blocks of `per_node` consecutive ranks.
std::vector<int> blocks(int nodes, int per_node) {
    std::vector<int> node_of(nodes * per_node);
    for (int r = 0; r < int(node_of.size()); ++r) node_of[r] = r / per_node;
    return node_of;
}

} // namespace

TEST(RankLayoutAuto, NodesFormDimensionZeroWhateverThePlacement) {
    const auto node_of = round_robin(2, 4);
    const RankLayout l = make_rank_layout("auto", node_of);
    ASSERT_EQ(l.topology.num_dims(), 2);
    EXPECT_EQ(l.topology.dim(0).peers, 4);
    EXPECT_EQ(l.topology.dim(1).peers, 2);
    // Position p = local + 4 * node: every group of dimension 0 is one node, in rank order,
    // and the nodes come in the order of their lowest rank.
    const std::vector<int> want = {0, 2, 4, 6, 1, 3, 5, 7};
    EXPECT_EQ(l.rank_at, want);
    for (int p = 0; p < 8; ++p) {
        EXPECT_EQ(l.position_of[l.rank_at[p]], p);
        EXPECT_EQ(node_of[l.rank_at[p]], node_of[l.rank_at[p - p % 4]]) << "position " << p;
    }
}

TEST(RankLayoutAuto, DirectWithinSmallNodesStepRuleElsewhere) {
    struct Case {
        int nodes, per_node;
        Algorithm node_level, network_level;
    };
    const Case cases[] = {{2, 2, Algorithm::Direct, Algorithm::HalvingDoubling},
                          {4, 8, Algorithm::Direct, Algorithm::HalvingDoubling},
                          {3, 6, Algorithm::Direct, Algorithm::Ring},
                          {2, 16, Algorithm::HalvingDoubling, Algorithm::HalvingDoubling},
                          {2, 12, Algorithm::Ring, Algorithm::HalvingDoubling}};
    for (const Case &c : cases) {
        const RankLayout l = make_rank_layout("auto", blocks(c.nodes, c.per_node));
        ASSERT_EQ(l.topology.num_dims(), 2);
        EXPECT_EQ(l.topology.dim(0).algorithm, c.node_level) << c.nodes << "x" << c.per_node;
        EXPECT_EQ(l.topology.dim(1).algorithm, c.network_level) << c.nodes << "x" << c.per_node;
    }
}

TEST(RankLayoutAuto, LevelsWithOnePeerAreDroppedWithTheirAttributes) {
    // One node: only the node level is left, with the node level's numbers.
    const RankLayout one_node = make_rank_layout("auto:bw=40Gbps,10Gbps", blocks(1, 4));
    ASSERT_EQ(one_node.topology.num_dims(), 1);
    EXPECT_EQ(one_node.topology.dim(0).peers, 4);
    EXPECT_DOUBLE_EQ(one_node.topology.dim(0).bandwidth, 40e9 / 8);
    EXPECT_EQ(one_node.topology.dim(0).algorithm, Algorithm::Direct);
    // One rank per node: only the network level, with the network level's numbers.
    const RankLayout spread = make_rank_layout("auto:bw=40Gbps,10Gbps", blocks(6, 1));
    ASSERT_EQ(spread.topology.num_dims(), 1);
    EXPECT_EQ(spread.topology.dim(0).peers, 6);
    EXPECT_DOUBLE_EQ(spread.topology.dim(0).bandwidth, 10e9 / 8);
    EXPECT_EQ(spread.topology.dim(0).algorithm, Algorithm::Ring);
}

TEST(RankLayoutAuto, UserListsOverrideTheDefaults) {
    const RankLayout l = make_rank_layout("auto:alg=ring:lat=2us,9us", blocks(2, 4));
    EXPECT_EQ(l.topology.dim(0).algorithm, Algorithm::Ring);
    EXPECT_EQ(l.topology.dim(1).algorithm, Algorithm::Ring);
    EXPECT_DOUBLE_EQ(l.topology.dim(0).latency, 2e-6);
    EXPECT_DOUBLE_EQ(l.topology.dim(1).latency, 9e-6);
}

TEST(RankLayoutAuto, RefusesUnevenNodesAndBadLists) {
    EXPECT_THROW(make_rank_layout("auto", {0, 0, 0, 1}), LayoutError);
    EXPECT_THROW(make_rank_layout("auto:bw=1,2,3", blocks(2, 2)), SpecError);
    EXPECT_THROW(make_rank_layout("auto:speed=1", blocks(2, 2)), SpecError);
    EXPECT_THROW(make_rank_layout("auto", {}), LayoutError);
}

TEST(RankLayoutSpec, PositionIsRankWhenNodesHoldWholeGroups) {
    const RankLayout l = make_rank_layout("2x4", blocks(4, 2));
    for (int r = 0; r < 8; ++r) {
        EXPECT_EQ(l.rank_at[r], r);
        EXPECT_EQ(l.position_of[r], r);
    }
    EXPECT_EQ(l.topology.dim(0).algorithm, Algorithm::Ring); // the spec's default, not auto's
    EXPECT_NO_THROW(make_rank_layout("2x4", blocks(1, 8))); // one node: groups of dims 0-1
}

TEST(RankLayoutSpec, RefusesWrongSizesAndNodesAcrossGroups) {
    EXPECT_THROW(make_rank_layout("2x4", blocks(2, 2)), LayoutError);
    EXPECT_THROW(make_rank_layout("2x4", round_robin(2, 4)), LayoutError);
    EXPECT_THROW(make_rank_layout("4x2", blocks(4, 2)), LayoutError); // a node cuts dim 0
    EXPECT_THROW(make_rank_layout("2x4", blocks(2, 4)), LayoutError); // half a dim-1 group
    EXPECT_THROW(make_rank_layout("2x0", blocks(1, 2)), SpecError);
}
