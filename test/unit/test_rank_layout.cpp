// Unit tests of src/rank_layout: where "auto" and explicit specs place a communicator's
// ranks, which algorithm "auto" gives each level, how it splits nodes by packages (on
// hwloc's synthetic machines) and follows a topology file, and the layouts it refuses.
#include <gtest/gtest.h>

#include <sstream>

#include "node_packages.h"
#include "rank_layout.h"

using namespace themis;

namespace {

// `nodes` nodes of `per_node` ranks, ranks dealt round-robin over the nodes (rank r on
// node r % nodes), so no node is a block of consecutive ranks.
RankPlacement round_robin(int nodes, int per_node) {
    RankPlacement p;
    for (int r = 0; r < nodes * per_node; ++r) p.node_of.push_back(100 + r % nodes);
    return p;
}

// Blocks of `per_node` consecutive ranks.
RankPlacement blocks(int nodes, int per_node) {
    RankPlacement p;
    for (int r = 0; r < nodes * per_node; ++r) p.node_of.push_back(r / per_node);
    return p;
}

} // namespace

TEST(RankLayoutAuto, NodesFormDimensionZeroWhateverThePlacement) {
    const RankPlacement placement = round_robin(2, 4);
    const std::vector<int> &node_of = placement.node_of;
    const RankLayout l = make_rank_layout("auto", placement);
    ASSERT_EQ(l.topology.num_dims(), 2);
    EXPECT_EQ(l.level_names, (std::vector<std::string>{"node", "network"}));
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

TEST(RankLayoutAuto, DirectWithinSmallNodesRingElsewhereHdWherePowersOfTwo) {
    const unsigned hd = 1u << int(Algorithm::HalvingDoubling);
    struct Case {
        int nodes, per_node;
        Algorithm node_level;
        unsigned node_alternatives, network_alternatives;
    };
    // Direct inside nodes of up to 8 ranks; ring elsewhere, with hd as the planner's
    // alternative where the level's size is a power of two.
    const Case cases[] = {{2, 2, Algorithm::Direct, 0, hd},
                          {4, 8, Algorithm::Direct, 0, hd},
                          {3, 6, Algorithm::Direct, 0, 0},
                          {2, 16, Algorithm::Ring, hd, hd},
                          {6, 12, Algorithm::Ring, 0, 0}};
    for (const Case &c : cases) {
        const RankLayout l = make_rank_layout("auto", blocks(c.nodes, c.per_node));
        ASSERT_EQ(l.topology.num_dims(), 2);
        const Dimension &node = l.topology.dim(0), &network = l.topology.dim(1);
        EXPECT_EQ(node.algorithm, c.node_level) << c.nodes << "x" << c.per_node;
        EXPECT_EQ(node.alternatives, c.node_alternatives) << c.nodes << "x" << c.per_node;
        EXPECT_EQ(network.algorithm, Algorithm::Ring) << c.nodes << "x" << c.per_node;
        EXPECT_EQ(network.alternatives, c.network_alternatives) << c.nodes << "x" << c.per_node;
    }
}

TEST(RankLayoutAuto, TheUsersAlgorithmsArePinned) {
    for (const char *dims : {"auto:alg=ring", "auto:alg=direct,hd", "auto:lat=2us:alg=ring,ring"}) {
        const RankLayout l = make_rank_layout(dims, blocks(2, 4));
        for (int d = 0; d < l.topology.num_dims(); ++d)
            EXPECT_EQ(l.topology.dim(d).alternatives, 0u) << dims << " dimension " << d;
    }
    EXPECT_EQ(make_rank_layout("auto:alg=direct,hd", blocks(2, 4)).topology.dim(1).algorithm,
              Algorithm::HalvingDoubling);
}

TEST(RankLayoutAuto, LevelsWithOnePeerAreDroppedWithTheirAttributes) {
    // One node: only the node level is left, with the node level's numbers.
    const RankLayout one_node = make_rank_layout("auto:bw=40Gbps,10Gbps", blocks(1, 4));
    ASSERT_EQ(one_node.topology.num_dims(), 1);
    EXPECT_EQ(one_node.level_names, std::vector<std::string>{"node"});
    EXPECT_EQ(one_node.topology.dim(0).peers, 4);
    EXPECT_DOUBLE_EQ(one_node.topology.dim(0).bandwidth, 40e9 / 8);
    EXPECT_EQ(one_node.topology.dim(0).algorithm, Algorithm::Direct);
    // One rank per node: only the network level, with the network level's numbers.
    const RankLayout spread = make_rank_layout("auto:bw=40Gbps,10Gbps", blocks(6, 1));
    ASSERT_EQ(spread.topology.num_dims(), 1);
    EXPECT_EQ(spread.level_names, std::vector<std::string>{"network"});
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

TEST(RankLayoutAuto, FillCurvesInsideAndBetweenNodes) {
    // Default: full everywhere; one curve for the network side, as bw= and lat= take them.
    const RankLayout plain = make_rank_layout("auto", blocks(2, 4));
    EXPECT_TRUE(plain.topology.dim(0).fill.empty());
    EXPECT_TRUE(plain.topology.dim(1).fill.empty());
    const RankLayout l = make_rank_layout("auto:fill=1,0.56/0.78/0.94", blocks(2, 4));
    EXPECT_TRUE(l.topology.dim(0).fill.empty());
    EXPECT_EQ(l.topology.dim(1).fill, (std::vector<double>{0.56, 0.78, 0.94}));
    EXPECT_THROW(make_rank_layout("auto:fill=1,2", blocks(2, 4)), SpecError);
    EXPECT_THROW(make_rank_layout("auto:fill=1,1,1", blocks(2, 4)), SpecError);
}

TEST(RankLayoutAuto, RefusesUnevenNodesAndBadLists) {
    EXPECT_THROW(make_rank_layout("auto", RankPlacement{{0, 0, 0, 1}, {}, {}}), LayoutError);
    EXPECT_THROW(make_rank_layout("auto:bw=1,2,3", blocks(2, 2)), SpecError);
    EXPECT_THROW(make_rank_layout("auto:speed=1", blocks(2, 2)), SpecError);
    // The message names the forms once: with two levels, one per level is the pair again.
    try {
        make_rank_layout("auto:bw=1,2,3,4", blocks(2, 2));
        ADD_FAILURE() << "4 values for 2 levels accepted";
    } catch (const SpecError &e) {
        EXPECT_EQ(std::string(e.what()), "'bw' with auto: expected 1 value or 2 (inside a node, "
                                         "between nodes: node,network), got 4");
    }
    EXPECT_THROW(make_rank_layout("auto", RankPlacement{}), LayoutError);
}

TEST(RankLayoutSpec, PositionIsRankWhenNodesHoldWholeGroups) {
    const RankLayout l = make_rank_layout("2x4", blocks(4, 2));
    for (int r = 0; r < 8; ++r) {
        EXPECT_EQ(l.rank_at[r], r);
        EXPECT_EQ(l.position_of[r], r);
    }
    EXPECT_EQ(l.topology.dim(0).algorithm, Algorithm::Ring); // the spec's default, not auto's
    EXPECT_EQ(l.level_names, (std::vector<std::string>{"dim0", "dim1"}));
    EXPECT_NO_THROW(make_rank_layout("2x4", blocks(1, 8))); // one node: groups of dims 0-1
}

TEST(RankLayoutSpec, RefusesWrongSizesAndNodesAcrossGroups) {
    EXPECT_THROW(make_rank_layout("2x4", blocks(2, 2)), LayoutError);
    EXPECT_THROW(make_rank_layout("2x4", round_robin(2, 4)), LayoutError);
    EXPECT_THROW(make_rank_layout("4x2", blocks(4, 2)), LayoutError); // a node cuts dim 0
    EXPECT_THROW(make_rank_layout("2x4", blocks(2, 4)), LayoutError); // half a dim-1 group
    EXPECT_THROW(make_rank_layout("2x0", blocks(1, 2)), SpecError);
}

// ---------------------------------------------------------------- package split

namespace {

// A node of two packages of four cores, one PU each: PUs 0-3 on package 0, 4-7 on 1.
const HwlocTopology &two_package_node() {
    static const HwlocTopology machine = HwlocTopology::synthetic("pack:2 core:4 pu:1");
    return machine;
}

// `nodes` nodes whose local rank l is bound to the PUs binding[l] (blocks of ranks), with
// each rank's package as hwloc finds it on two_package_node().
RankPlacement bound(int nodes, const std::vector<std::vector<int>> &binding) {
    RankPlacement p = blocks(nodes, int(binding.size()));
    for (int r = 0; r < int(p.node_of.size()); ++r)
        p.package_of.push_back(two_package_node().package_of(binding[r % binding.size()]));
    return p;
}

// Local rank l bound to PU pus[l] alone.
std::vector<std::vector<int>> one_pu_each(const std::vector<int> &pus) {
    std::vector<std::vector<int>> binding;
    for (int pu : pus) binding.push_back({pu});
    return binding;
}

std::vector<int> peers_of(const RankLayout &l) {
    std::vector<int> peers;
    for (const Dimension &d : l.topology.dims()) peers.push_back(d.peers);
    return peers;
}

} // namespace

TEST(RankLayoutPackages, RanksOfAPackageFormDimensionZeroThenPackagesThenNodes) {
    const RankLayout l = make_rank_layout("auto", bound(2, one_pu_each({0, 1, 2, 3, 4, 5, 6, 7})));
    EXPECT_EQ(peers_of(l), (std::vector<int>{4, 2, 2}));
    EXPECT_EQ(l.level_names, (std::vector<std::string>{"package", "node", "network"}));
    for (int p = 0; p < 16; ++p) EXPECT_EQ(l.rank_at[p], p); // ranks already in package order
    EXPECT_EQ(l.topology.dim(0).algorithm, Algorithm::Direct);
    EXPECT_EQ(l.topology.dim(1).algorithm, Algorithm::Direct);
    EXPECT_EQ(l.topology.dim(2).algorithm, Algorithm::Ring);
}

TEST(RankLayoutPackages, RanksDealtOverPackagesAreGatheredByPackage) {
    // Local ranks alternate packages: 0 -> PU 0, 1 -> PU 4, 2 -> PU 1, ...
    const RankLayout l = make_rank_layout("auto", bound(2, one_pu_each({0, 4, 1, 5, 2, 6, 3, 7})));
    EXPECT_EQ(peers_of(l), (std::vector<int>{4, 2, 2}));
    const std::vector<int> want = {0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15};
    EXPECT_EQ(l.rank_at, want);
    for (int p = 0; p < 16; ++p) EXPECT_EQ(l.position_of[l.rank_at[p]], p);
}

TEST(RankLayoutPackages, OneRankAPackageDropsThePackageLevel) {
    const RankLayout l = make_rank_layout("auto", bound(2, one_pu_each({0, 4})));
    EXPECT_EQ(peers_of(l), (std::vector<int>{2, 2}));
    EXPECT_EQ(l.level_names, (std::vector<std::string>{"node", "network"}));
}

TEST(RankLayoutPackages, NoSplitWhenUnknownUnevenOnOnePackageOrTurnedOff) {
    const std::vector<std::string> unsplit = {"node", "network"};
    // Unbound: the binding spans both packages, so hwloc names none.
    const std::vector<int> all_pus = {0, 1, 2, 3, 4, 5, 6, 7};
    const std::vector<std::vector<int>> unbound(8, all_pus);
    EXPECT_EQ(make_rank_layout("auto", bound(2, unbound)).level_names, unsplit);
    // One rank unknown.
    RankPlacement one_unknown = bound(2, one_pu_each({0, 1, 4, 5}));
    one_unknown.package_of[6] = -1;
    EXPECT_EQ(make_rank_layout("auto", one_unknown).level_names, unsplit);
    // Packages not given at all.
    EXPECT_EQ(make_rank_layout("auto", blocks(2, 4)).level_names, unsplit);
    // Three ranks on package 0, one on package 1.
    EXPECT_EQ(make_rank_layout("auto", bound(2, one_pu_each({0, 1, 2, 4}))).level_names, unsplit);
    // Every rank on package 0.
    EXPECT_EQ(make_rank_layout("auto", bound(2, one_pu_each({0, 1, 2, 3}))).level_names, unsplit);
    // Split turned off.
    const RankPlacement split = bound(2, one_pu_each({0, 1, 4, 5}));
    const RankLayout off = make_rank_layout("auto", split, nullptr, false);
    EXPECT_EQ(off.level_names, unsplit);
    EXPECT_EQ(peers_of(off), (std::vector<int>{4, 2}));
}

TEST(RankLayoutPackages, NoSplitWhenNodesDifferInRanksAPackage) {
    // Node 0: 2 + 2 ranks; node 1: 1 + 3 ranks.
    RankPlacement p = blocks(2, 4);
    p.package_of = {0, 0, 1, 1, 0, 1, 1, 1};
    const std::vector<std::string> unsplit = {"node", "network"};
    EXPECT_EQ(make_rank_layout("auto", p).level_names, unsplit);
}

TEST(RankLayoutPackages, AttributeListsPerSideOrPerLevel) {
    const RankPlacement p = bound(2, one_pu_each({0, 1, 4, 5}));
    // Two values: inside a node, between nodes.
    const RankLayout sides = make_rank_layout("auto:bw=40Gbps,10Gbps", p);
    EXPECT_DOUBLE_EQ(sides.topology.dim(0).bandwidth, 40e9 / 8);
    EXPECT_DOUBLE_EQ(sides.topology.dim(1).bandwidth, 40e9 / 8);
    EXPECT_DOUBLE_EQ(sides.topology.dim(2).bandwidth, 10e9 / 8);
    // One per level: package, node, network.
    const RankLayout levels = make_rank_layout("auto:lat=1us,2us,3us:alg=ring,direct,ring", p);
    EXPECT_DOUBLE_EQ(levels.topology.dim(1).latency, 2e-6);
    EXPECT_DOUBLE_EQ(levels.topology.dim(2).latency, 3e-6);
    EXPECT_EQ(levels.topology.dim(0).algorithm, Algorithm::Ring);
    EXPECT_EQ(levels.topology.dim(1).algorithm, Algorithm::Direct);
    try {
        make_rank_layout("auto:bw=1,2,3,4", p);
        FAIL() << "4 values for 3 levels accepted";
    } catch (const SpecError &e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("package,node,network"), std::string::npos) << what;
    }
}

TEST(RankLayoutPackages, PlacementListsOfTheWrongLengthAreRefused) {
    RankPlacement p = blocks(2, 2);
    p.package_of = {0, 1, 0};
    EXPECT_THROW(make_rank_layout("auto", p), std::invalid_argument);
    p.package_of.clear();
    p.host_of = {"a"};
    EXPECT_THROW(make_rank_layout("auto", p), std::invalid_argument);
}

// ---------------------------------------------------------------- topology file

namespace {

HostGrid grid_of(const std::string &text) {
    std::istringstream in(text);
    return parse_topo_file(in, "test.topo");
}

// Nodes with hostnames: node k is host "h<k>".
RankPlacement with_hosts(RankPlacement p) {
    for (int id : p.node_of) p.host_of.push_back("h" + std::to_string(id % 100));
    return p;
}

const char *const kSquare = "dims 2x2\nhost h0 0 0\nhost h1 1 0\nhost h2 0 1\nhost h3 1 1\n";

std::string layout_error(const std::string &dims, const RankPlacement &p, const HostGrid &grid) {
    try {
        make_rank_layout(dims, p, &grid);
    } catch (const LayoutError &e) {
        return e.what();
    }
    return "no LayoutError";
}

} // namespace

TEST(RankLayoutGrid, NodesSitAtTheirHostsCoordinates) {
    const HostGrid grid = grid_of(kSquare);
    const RankLayout l = make_rank_layout("auto", with_hosts(blocks(4, 2)), &grid);
    EXPECT_EQ(peers_of(l), (std::vector<int>{2, 2, 2}));
    EXPECT_EQ(l.level_names, (std::vector<std::string>{"node", "network0", "network1"}));
    for (int p = 0; p < 8; ++p) EXPECT_EQ(l.rank_at[p], p);
    EXPECT_EQ(l.topology.dim(1).algorithm, Algorithm::Ring);
    EXPECT_DOUBLE_EQ(l.topology.dim(0).bandwidth, 100e9 / 8); // the defaults by side
    EXPECT_DOUBLE_EQ(l.topology.dim(2).bandwidth, 25e9 / 8);
}

TEST(RankLayoutGrid, HostsInAnotherOrderAndRanksDealtRoundRobin) {
    const HostGrid grid = grid_of("dims 2x2\nhost h1 0 0\nhost h2 1 0\nhost h3 0 1\nhost h0 1 1\n");
    // Rank r on host h(r % 4): host hk holds ranks k and k + 4.
    const RankLayout l = make_rank_layout("auto", with_hosts(round_robin(4, 2)), &grid);
    const std::vector<int> want = {1, 5, 2, 6, 3, 7, 0, 4};
    EXPECT_EQ(l.rank_at, want);
    for (int p = 0; p < 8; ++p) EXPECT_EQ(l.position_of[l.rank_at[p]], p);
}

TEST(RankLayoutGrid, DimensionsWithOneHostAreDropped) {
    const HostGrid row = grid_of("dims 1x4\nhost h0 0 0\nhost h1 0 1\nhost h2 0 2\nhost h3 0 3\n");
    const RankLayout l = make_rank_layout("auto", with_hosts(blocks(4, 2)), &row);
    EXPECT_EQ(peers_of(l), (std::vector<int>{2, 4}));
    EXPECT_EQ(l.level_names, (std::vector<std::string>{"node", "network1"}));

    const HostGrid one = grid_of("dims 1x1\nhost h0 0 0\n");
    const RankLayout alone = make_rank_layout("auto", with_hosts(blocks(1, 4)), &one);
    EXPECT_EQ(peers_of(alone), std::vector<int>{4});
    EXPECT_EQ(alone.level_names, std::vector<std::string>{"node"});

    // One rank a host: only the network dimensions remain.
    const HostGrid square = grid_of(kSquare);
    const RankLayout spread = make_rank_layout("auto", with_hosts(blocks(4, 1)), &square);
    EXPECT_EQ(spread.level_names, (std::vector<std::string>{"network0", "network1"}));
    EXPECT_EQ(spread.topology.dim(0).algorithm, Algorithm::Ring);
}

TEST(RankLayoutGrid, AttributeListsOnePerLevel) {
    const HostGrid grid = grid_of(kSquare);
    const RankLayout l = make_rank_layout("auto:bw=100Gbps,20Gbps,10Gbps:alg=direct,ring,ring",
                                          with_hosts(blocks(4, 2)), &grid);
    EXPECT_DOUBLE_EQ(l.topology.dim(1).bandwidth, 20e9 / 8);
    EXPECT_DOUBLE_EQ(l.topology.dim(2).bandwidth, 10e9 / 8);
    EXPECT_EQ(l.topology.dim(1).algorithm, Algorithm::Ring);
}

TEST(RankLayoutGrid, PackagesAndGridTogether) {
    const HostGrid grid = grid_of(kSquare);
    const RankPlacement p = with_hosts(bound(4, one_pu_each({0, 4, 1, 5})));
    const RankLayout l = make_rank_layout("auto", p, &grid);
    EXPECT_EQ(peers_of(l), (std::vector<int>{2, 2, 2, 2}));
    EXPECT_EQ(l.level_names, (std::vector<std::string>{"package", "node", "network0", "network1"}));
    EXPECT_EQ(l.rank_at[1], 2); // local ranks 0 and 2 share package 0
}

TEST(RankLayoutGrid, NodesThatDoNotFillTheGridAreRefused) {
    const HostGrid grid = grid_of(kSquare);
    // A host the file lacks.
    RankPlacement stranger = with_hosts(blocks(4, 2));
    for (int r = 6; r < 8; ++r) stranger.host_of[r] = "h9";
    EXPECT_NE(layout_error("auto", stranger, grid).find("host h9 is not in the topology file"),
              std::string::npos);
    // Three hosts of the four: h3's cell stays empty.
    const std::string empty = layout_error("auto", with_hosts(blocks(3, 2)), grid);
    EXPECT_NE(empty.find("cell (1 1)"), std::string::npos) << empty;
    EXPECT_NE(empty.find("h3"), std::string::npos) << empty;
    // A cell no host of the file holds.
    const HostGrid holey = grid_of("dims 2x2\nhost h0 0 0\nhost h1 1 0\nhost h2 0 1\n");
    const std::string hole = layout_error("auto", with_hosts(blocks(3, 2)), holey);
    EXPECT_NE(hole.find("cell (1 1)"), std::string::npos) << hole;
    // Two nodes with one hostname.
    RankPlacement twins = with_hosts(blocks(4, 2));
    for (int r = 2; r < 4; ++r) twins.host_of[r] = "h0";
    EXPECT_NE(layout_error("auto", twins, grid).find("two nodes report the hostname h0"),
              std::string::npos);
    // The ranks of one node disagree on its name.
    RankPlacement split_brain = with_hosts(blocks(4, 2));
    split_brain.host_of[1] = "h3";
    EXPECT_NE(layout_error("auto", split_brain, grid).find("different hostnames"),
              std::string::npos);
    // No hostnames at all.
    EXPECT_NE(layout_error("auto", blocks(4, 2), grid).find("unknown"), std::string::npos);
}

TEST(RankLayoutGrid, ExplicitSpecsIgnoreTheGrid) {
    const HostGrid grid = grid_of(kSquare);
    const RankLayout l = make_rank_layout("2x4", with_hosts(blocks(4, 2)), &grid);
    EXPECT_EQ(peers_of(l), (std::vector<int>{2, 4}));
    EXPECT_EQ(l.level_names, (std::vector<std::string>{"dim0", "dim1"}));
}
