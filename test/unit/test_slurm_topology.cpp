// Unit tests of src/slurm_topology: SLURM_TOPOLOGY_ADDR and SLURM_TOPOLOGY_ADDR_PATTERN as
// Slurm's topology/tree plugin writes them (an error naming the variable for every way they
// can be wrong), and the grid a job's switch tree gives.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "slurm_topology.h"
#include "topology.h"

using namespace themis;

namespace {

std::string error_of(const std::string &addr, const std::string &pattern) {
    try {
        parse_slurm_topology(addr, pattern);
    } catch (const SpecError &e) {
        return e.what();
    }
    return "no SpecError";
}

// Asserts that the pair fails on `variable` with a message containing `says`.
void expect_error(const std::string &addr, const std::string &pattern, const std::string &variable,
                  const std::string &says) {
    const std::string what = error_of(addr, pattern);
    EXPECT_EQ(what.rfind(variable + ": ", 0), 0u) << "expected " << variable << " first: " << what;
    EXPECT_NE(what.find(says), std::string::npos) << "expected \"" << says << "\" in: " << what;
}

SlurmAddress at(const std::string &addr) {
    const size_t levels = std::count(addr.begin(), addr.end(), '.');
    std::string pattern;
    for (size_t i = 0; i < levels; ++i) pattern += "switch.";
    return parse_slurm_topology(addr, pattern + "node");
}

// A job's addresses: one per node.
std::vector<SlurmAddress> job(const std::vector<std::string> &addrs) {
    std::vector<SlurmAddress> out;
    for (const auto &a : addrs) out.push_back(at(a));
    return out;
}

} // namespace

TEST(SlurmTopology, ParsesSwitchesTopLevelFirstThenTheNode) {
    const SlurmAddress a = parse_slurm_topology("s0.s3.node12", "switch.switch.node");
    EXPECT_EQ(a.switches, (std::vector<std::string>{"s0", "s3"}));
    EXPECT_EQ(a.node, "node12");
    // As a production cluster writes it (three levels).
    const SlurmAddress b = parse_slurm_topology("root_switch.CELL1.iswi1r4s0c1l1.belenos386",
                                                "switch.switch.switch.node");
    EXPECT_EQ(b.switches, (std::vector<std::string>{"root_switch", "CELL1", "iswi1r4s0c1l1"}));
    EXPECT_EQ(b.node, "belenos386");
}

TEST(SlurmTopology, WithoutTheTreePluginTheNodeAlone) {
    const SlurmAddress a = parse_slurm_topology("GPU71E4", "node");
    EXPECT_TRUE(a.switches.empty());
    EXPECT_EQ(a.node, "GPU71E4");
}

TEST(SlurmTopology, RefusesEmptyValues) {
    expect_error("s0.n1", "", "SLURM_TOPOLOGY_ADDR_PATTERN", "got an empty value");
    expect_error("", "switch.node", "SLURM_TOPOLOGY_ADDR", "got an empty value");
    expect_error("s0.", "switch.node", "SLURM_TOPOLOGY_ADDR", "ends without the node's name");
}

TEST(SlurmTopology, RefusesLevelCountsThatDiffer) {
    expect_error("s0.node12", "switch.switch.node", "SLURM_TOPOLOGY_ADDR",
                 "\"s0.node12\" has 2 field(s) where SLURM_TOPOLOGY_ADDR_PATTERN "
                 "\"switch.switch.node\" has 3");
    expect_error("s0.s1.s2.node12", "switch.switch.node", "SLURM_TOPOLOGY_ADDR", "has 4 field(s)");
    expect_error("node.example.org", "node", "SLURM_TOPOLOGY_ADDR", "has 3 field(s)");
}

TEST(SlurmTopology, RefusesPatternFieldsOutOfPlace) {
    expect_error("s0.n1", "swich.node", "SLURM_TOPOLOGY_ADDR_PATTERN",
                 "field 1 of \"swich.node\": expected \"switch\" before the last, got \"swich\"");
    expect_error("s0.s1", "switch.switch", "SLURM_TOPOLOGY_ADDR_PATTERN",
                 "expected \"node\" last, got \"switch\"");
    expect_error("n1.s0.n1", "node.switch.node", "SLURM_TOPOLOGY_ADDR_PATTERN", "field 1");
    expect_error("s0.n1", "switch..node", "SLURM_TOPOLOGY_ADDR_PATTERN", "got \"\"");
    expect_error("s0.n1", "Switch.node", "SLURM_TOPOLOGY_ADDR_PATTERN", "got \"Switch\"");
}

TEST(SlurmTopology, RefusesALevelWithoutOrWithSeveralSwitches) {
    expect_error("s0..node12", "switch.switch.node", "SLURM_TOPOLOGY_ADDR",
                 "level 2 of \"s0..node12\": no switch");
    expect_error("s0.s[1-2].node12", "switch.switch.node", "SLURM_TOPOLOGY_ADDR",
                 "several switches \"s[1-2]\"");
    expect_error("s0,s1.node12", "switch.node", "SLURM_TOPOLOGY_ADDR", "several switches");
}

TEST(SlurmTopology, RefusesControlBytes) {
    expect_error(std::string("s0.n\0de", 7), "switch.node", "SLURM_TOPOLOGY_ADDR",
                 "unexpected control byte 0x00");
    expect_error("s0.n1", "switch.node\n", "SLURM_TOPOLOGY_ADDR_PATTERN", "control byte 0x0a");
}

TEST(SlurmTopology, NaturalOrder) {
    EXPECT_TRUE(natural_less("s2", "s10"));
    EXPECT_FALSE(natural_less("s10", "s2"));
    EXPECT_TRUE(natural_less("node9", "node10"));
    EXPECT_TRUE(natural_less("a", "b"));
    EXPECT_TRUE(natural_less("s1", "s1a"));
    EXPECT_TRUE(natural_less("s1", "s01")); // equal numbers: the shorter first, a total order
    EXPECT_FALSE(natural_less("s1", "s1"));
}

// Four leaf switches of two nodes each under one top switch: 2 (nodes on a leaf) x 4
// (leaves); the top switch, shared by all, gives no dimension.
TEST(SlurmTopology, LeavesUnderOneSwitchGiveTwoDimensions) {
    const std::vector<SlurmAddress> nodes =
        job({"top.leaf1.n1", "top.leaf1.n2", "top.leaf2.n3", "top.leaf2.n4", "top.leaf3.n5",
             "top.leaf3.n6", "top.leaf10.n7", "top.leaf10.n8"});
    const GridResult g = grid_from_slurm(nodes);
    ASSERT_TRUE(g.found) << g.describe();
    EXPECT_EQ(g.sizes, (std::vector<int>{2, 4}));
    EXPECT_EQ(g.coords[0], (std::vector<int>{0, 0}));
    EXPECT_EQ(g.coords[1], (std::vector<int>{1, 0}));
    EXPECT_EQ(g.coords[5], (std::vector<int>{1, 2}));
    EXPECT_EQ(g.coords[6], (std::vector<int>{0, 3})) << "leaf10 after leaf3";
    EXPECT_TRUE(g.rates.empty());
}

TEST(SlurmTopology, ThreeLevelsGiveThreeDimensions) {
    std::vector<std::string> addrs;
    for (int spine = 0; spine < 2; ++spine)
        for (int leaf = 0; leaf < 3; ++leaf)
            for (int n = 0; n < 2; ++n)
                addrs.push_back("core.sp" + std::to_string(spine) + ".lf" +
                                std::to_string(spine * 3 + leaf) + ".n" +
                                std::to_string((spine * 3 + leaf) * 2 + n));
    const std::vector<SlurmAddress> nodes = job(addrs);
    const GridResult g = grid_from_slurm(nodes);
    ASSERT_TRUE(g.found) << g.describe();
    EXPECT_EQ(g.sizes, (std::vector<int>{2, 3, 2}));
    for (size_t i = 0; i < nodes.size(); ++i)
        EXPECT_EQ(g.coords[i], (std::vector<int>{int(i % 2), int(i / 2 % 3), int(i / 6)})) << i;
    // Nodes in any order: each keeps its coordinates.
    std::vector<size_t> order(nodes.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), std::mt19937(3));
    std::vector<SlurmAddress> shuffled;
    for (size_t i : order) shuffled.push_back(nodes[i]);
    const GridResult s = grid_from_slurm(shuffled);
    ASSERT_TRUE(s.found);
    for (size_t k = 0; k < order.size(); ++k) EXPECT_EQ(s.coords[k], g.coords[order[k]]);
}

TEST(SlurmTopology, TreesThatAreNoGrid) {
    // Leaves of 2 and 3 nodes.
    GridResult g = grid_from_slurm(job({"t.a.n1", "t.a.n2", "t.b.n3", "t.b.n4", "t.b.n5"}));
    EXPECT_FALSE(g.found);
    EXPECT_NE(g.reason.find("not a grid: switch a holds 2 of the job's nodes below it, switch b 3"),
              std::string::npos)
        << g.reason;
    // All nodes on one leaf, or one node per leaf: one level, node x nodes.
    g = grid_from_slurm(job({"t.a.n1", "t.a.n2", "t.a.n3", "t.a.n4"}));
    EXPECT_FALSE(g.found);
    EXPECT_NE(g.reason.find("one level"), std::string::npos) << g.reason;
    g = grid_from_slurm(job({"t.a.n1", "t.b.n2", "t.c.n3", "t.d.n4"}));
    EXPECT_FALSE(g.found);
    EXPECT_NE(g.reason.find("one level"), std::string::npos) << g.reason;
    // No tree plugin.
    g = grid_from_slurm(job({"n1", "n2", "n3", "n4"}));
    EXPECT_FALSE(g.found);
    EXPECT_NE(g.reason.find("no switches"), std::string::npos) << g.reason;
    EXPECT_FALSE(grid_from_slurm({}).found);
}

TEST(SlurmTopology, AddressesThatDisagree) {
    GridResult g = grid_from_slurm(job({"t.a.n1", "t.a.n2", "u.a.n3", "u.b.n4"}));
    EXPECT_FALSE(g.found);
    EXPECT_EQ(g.reason, "switch a sits under both t and u");
    g = grid_from_slurm(job({"t.a.n1", "t.a.n2", "t.b.n1", "t.b.n4"}));
    EXPECT_EQ(g.reason, "node n1 appears twice");
    g = grid_from_slurm(job({"t.a.n1", "t.a.n2", "b.n3", "b.n4"}));
    EXPECT_EQ(g.reason, "node n3 has 1 levels of switches, node n1 2");
}

// Every rank's reading judged alike: the hosts' places, or the first problem, named.
namespace {
SlurmReading reading(const std::string &addr, const std::string &pattern = "switch.node") {
    SlurmReading r;
    r.state = SlurmReading::Set;
    r.addr = addr;
    r.pattern = pattern;
    return r;
}
} // namespace

TEST(SlurmHosts, OnePlacePerHostInNameOrder) {
    // Two ranks on each of two hosts; the hosts come back sorted by name, one address each.
    const SlurmHosts h =
        slurm_hosts({"hb", "hb", "ha", "ha"},
                    {reading("s1.nb"), reading("s1.nb"), reading("s0.na"), reading("s0.na")});
    EXPECT_EQ(h.problem, "");
    ASSERT_EQ(h.hosts, (std::vector<std::string>{"ha", "hb"}));
    ASSERT_EQ(h.addresses.size(), 2u);
    EXPECT_EQ(h.addresses[0].node, "na");
    EXPECT_EQ(h.addresses[0].switches, std::vector<std::string>{"s0"});
    EXPECT_EQ(h.addresses[1].node, "nb");
}

TEST(SlurmHosts, EveryProblemNamesItsRank) {
    SlurmReading none, too_long;
    too_long.state = SlurmReading::TooLong;
    too_long.limit = 190;
    EXPECT_EQ(slurm_hosts({"a", "b"}, {reading("s0.a"), none}).problem,
              "SLURM_TOPOLOGY_ADDR is set on some ranks only (not on rank 1)");
    EXPECT_EQ(
        slurm_hosts({"a", "b", "c"}, {reading("s0.a"), reading("s0.b"), too_long}).problem,
        "rank 2: SLURM_TOPOLOGY_ADDR and its pattern are longer than 190 characters together");
    // A malformed value: the parser's own message, after the rank.
    const std::string bad =
        slurm_hosts({"a", "b"}, {reading("s0.a"), reading("s0.b", "node")}).problem;
    EXPECT_EQ(bad.rfind("rank 1: ", 0), 0u) << bad;
    EXPECT_GT(bad.size(), std::string("rank 1: ").size());
    // Two ranks of one host that name different places.
    EXPECT_EQ(slurm_hosts({"a", "a"}, {reading("s0.a"), reading("s1.a")}).problem,
              "ranks 0 and 1 on host a give different SLURM_TOPOLOGY_ADDR");
    EXPECT_TRUE(slurm_hosts({"a", "a"}, {reading("s0.a"), reading("s1.a")}).hosts.empty());
}
