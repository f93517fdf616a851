// Unit tests of src/tree_packing: broadcast trees packed from per-link loads.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "topology.h"
#include "tree_packing.h"

using namespace themis;

namespace {

// Checks that `tree` is a broadcast from `root`: each cast's source holds the chunk, its
// targets are in the source's group on the cast's dimension and lack it, and every rank is
// reached exactly once.
void expect_spanning(const Topology &t, int root, const CastTree &tree, const std::string &what) {
    std::vector<int> reached(size_t(t.size()), 0);
    reached[size_t(root)] = 1;
    for (const GroupCast &cast : tree) {
        ASSERT_EQ(reached[size_t(cast.source)], 1) << what << ": a source without the chunk";
        ASSERT_FALSE(cast.targets.empty()) << what;
        for (int v : cast.targets) {
            for (int d = 0; d < t.num_dims(); ++d) {
                if (d != cast.dim) {
                    ASSERT_EQ(t.coord(v, d), t.coord(cast.source, d)) << what;
                }
            }
            ASSERT_EQ(reached[size_t(v)], 0) << what << ": rank " << v << " reached twice";
            reached[size_t(v)] = 1;
        }
    }
    for (int r = 0; r < t.size(); ++r) EXPECT_EQ(reached[size_t(r)], 1) << what << " rank " << r;
}

TEST(TreePacking, EveryTreeSpansTheRanksFromTheRoot) {
    for (const char *spec : {"2x4:bw=100Mbps,200Mbps", "2x2x2:bw=50Mbps,100Mbps,200Mbps",
                             "3x1x2:bw=1Gbps,7Gbps,2Gbps", "8:bw=1Gbps", "4x4:bw=1Gbps,1Gbps"}) {
        const Topology t = parse_topology(spec);
        for (int root : {0, t.size() / 2, t.size() - 1}) {
            const std::vector<double> chunks(16, 1e6);
            const std::vector<CastTree> trees = pack_broadcast_trees(t, root, chunks);
            ASSERT_EQ(trees.size(), chunks.size());
            for (size_t k = 0; k < trees.size(); ++k)
                expect_spanning(t, root, trees[k],
                                std::string(spec) + " root " + std::to_string(root) + " chunk " +
                                    std::to_string(k));
        }
    }
}

TEST(TreePacking, ChunksWithoutDataTakeNoCast) {
    const Topology t = parse_topology("2x2:bw=1Gbps,1Gbps");
    const std::vector<CastTree> trees = pack_broadcast_trees(t, 0, {0.0, 8.0});
    EXPECT_TRUE(trees[0].empty());
    expect_spanning(t, 0, trees[1], "second chunk");
}

// The busiest link of 128 chunks against S over the broadcast rate (every link at most that
// long: no packing is faster, test_topology.cpp checks the rate against every cut). A
// scatter and an all-gather reach 57 % of it on 2x4 100/200 (the root's links carry 2 S
// (N-1)/N); the packed trees at least 89 % on each of these, whatever the root.
TEST(TreePacking, PackedTreesComeWithinElevenPercentOfTheBound) {
    for (const char *spec :
         {"2x4:bw=100Mbps,200Mbps", "4x2:bw=200Mbps,100Mbps", "2x2x2:bw=50Mbps,100Mbps,200Mbps",
          "4x4:bw=100Mbps,100Mbps", "4x2x2:bw=100Mbps,50Mbps,25Mbps", "2x8:bw=100Mbps,200Mbps",
          "4x4x4:bw=1Gbps,1Gbps,1Gbps"}) {
        const Topology t = parse_topology(spec);
        for (int root : {0, t.size() - 1}) {
            const std::vector<double> chunks(128, 131072);
            const double bound = 128 * 131072 / t.broadcast_rate();
            const LinkLoads loads = cast_loads(t, pack_broadcast_trees(t, root, chunks), chunks);
            EXPECT_GE(loads.busiest(), bound * (1 - 1e-9)) << spec << " root " << root;
            EXPECT_LE(loads.busiest(), bound / 0.89) << spec << " root " << root;
        }
    }
}

TEST(TreePacking, SameInputsSameTrees) {
    const Topology t = parse_topology("2x4:bw=100Mbps,200Mbps");
    const std::vector<double> chunks(32, 4096);
    const std::vector<CastTree> a = pack_broadcast_trees(t, 5, chunks);
    const std::vector<CastTree> b = pack_broadcast_trees(t, 5, chunks);
    ASSERT_EQ(a.size(), b.size());
    for (size_t k = 0; k < a.size(); ++k) {
        ASSERT_EQ(a[k].size(), b[k].size());
        for (size_t i = 0; i < a[k].size(); ++i) {
            EXPECT_EQ(a[k][i].dim, b[k][i].dim);
            EXPECT_EQ(a[k][i].source, b[k][i].source);
            EXPECT_EQ(a[k][i].targets, b[k][i].targets);
        }
    }
}

} // namespace
