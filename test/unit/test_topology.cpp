// Unit tests of src/topology: rank <-> coordinates, the spec parser, paper topologies.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "test_support.h"
#include "testbed/paper_topologies.h"
#include "topology.h"

using namespace themis;
using themis_test::close_rel;

namespace {

// ---------------------------------------------------------------------------------------
// Rank <-> coordinates (dimension 0 varies fastest)

TEST(TopologyCoords, TwoByFourRankFiveIsCoordOneTwo) {
    // rank = c0 + 2*c1: 5 = 1 + 2*2.
    Topology t = parse_topology("2x4");
    EXPECT_EQ(t.size(), 8);
    EXPECT_EQ(t.coords(5), (std::vector<int>{1, 2}));
    EXPECT_EQ(t.coord(5, 0), 1);
    EXPECT_EQ(t.coord(5, 1), 2);
    EXPECT_EQ(t.rank_of({1, 2}), 5);
    // Consecutive ranks form dimension 0.
    EXPECT_EQ(t.coords(0), (std::vector<int>{0, 0}));
    EXPECT_EQ(t.coords(1), (std::vector<int>{1, 0}));
    EXPECT_EQ(t.coords(2), (std::vector<int>{0, 1}));
}

TEST(TopologyCoords, ThreeDimRankMatchesMixedRadixFormula) {
    // 3x4x5: rank = c0 + 3*c1 + 12*c2; rank 59 = 2 + 3*3 + 12*4.
    Topology t = parse_topology("3x4x5");
    EXPECT_EQ(t.size(), 60);
    EXPECT_EQ(t.coords(59), (std::vector<int>{2, 3, 4}));
    EXPECT_EQ(t.rank_of({1, 2, 3}), 1 + 3 * 2 + 12 * 3);
}

TEST(TopologyCoords, RoundTripOverEveryRankOfManyShapes) {
    for (const char *spec :
         {"1", "7", "2x4", "4x2", "3x1x5", "1x1", "2x2x2x2", "5x3x2", "16x8x8", "4x4x8x8"}) {
        SCOPED_TRACE(spec);
        Topology t = parse_topology(spec);
        auto peers = themis_test::peers_of(t);
        int n = 1;
        for (int p : peers) n *= p;
        ASSERT_EQ(t.size(), n);
        for (int r = 0; r < n; ++r) {
            auto c = t.coords(r);
            ASSERT_EQ(c, themis_test::expected_coords(peers, r)) << "rank " << r;
            ASSERT_EQ(t.rank_of(c), r);
            for (int d = 0; d < t.num_dims(); ++d) ASSERT_EQ(t.coord(r, d), c[d]);
        }
    }
}

TEST(TopologyCoords, WithCoordChangesOnlyThatCoordinate) {
    Topology t = parse_topology("3x4x2");
    auto peers = themis_test::peers_of(t);
    for (int r = 0; r < t.size(); ++r)
        for (int d = 0; d < t.num_dims(); ++d)
            for (int v = 0; v < peers[d]; ++v) {
                auto c = themis_test::expected_coords(peers, r);
                c[d] = v;
                ASSERT_EQ(t.with_coord(r, d, v), themis_test::expected_rank(peers, c))
                    << "rank " << r << " dim " << d << " value " << v;
            }
}

TEST(TopologyCoords, EmptyTopologyHasOneRank) {
    Topology t;
    EXPECT_EQ(t.size(), 1);
    EXPECT_EQ(t.num_dims(), 0);
}

TEST(TopologyBandwidth, TotalBandwidthSkipsSinglePeerDimensions) {
    Topology t({themis_test::dim(4, 10), themis_test::dim(1, 1000), themis_test::dim(2, 5)});
    EXPECT_DOUBLE_EQ(t.total_bandwidth(), 15.0);
}

// The least rate into any set of ranks that leaves rank 0 out: each of its ranks takes
// data over a dimension at that dimension's rate, and only where it has a peer outside
// the set. Every set of the network, tried one by one: no broadcast beats this cut.
double least_cut_into_a_set(const Topology &t) {
    const int others = t.size() - 1;
    double least = -1;
    for (uint32_t mask = 1; mask < (1u << others); ++mask) {
        auto inside = [&](int rank) { return rank > 0 && (mask >> (rank - 1) & 1); };
        double rate = 0;
        for (int r = 1; r <= others; ++r) {
            if (!inside(r)) continue;
            for (int d = 0; d < t.num_dims(); ++d) {
                bool fed = false;
                for (int v = 0; v < t.dim(d).peers; ++v)
                    fed = fed || !inside(t.with_coord(r, d, v));
                if (fed) rate += t.dim(d).bandwidth;
            }
        }
        if (least < 0 || rate < least) least = rate;
    }
    return least;
}

TEST(TopologyBandwidth, BroadcastRateIsTheLeastCut) {
    // By hand: 2x4 at 100/200 is fed at a rank's 300; 2x2x2 at 50/100/200 only at 200, the
    // four ranks across the 50 dimension from the root (4 x 50); 2x2 at 100/200: 2 x 100.
    EXPECT_DOUBLE_EQ(parse_topology("2x4:bw=100B/s,200B/s").broadcast_rate(), 300);
    EXPECT_DOUBLE_EQ(parse_topology("2x2x2:bw=50B/s,100B/s,200B/s").broadcast_rate(), 200);
    EXPECT_DOUBLE_EQ(parse_topology("2x2:bw=100B/s,200B/s").broadcast_rate(), 200);
    for (const char *spec :
         {"2x4:bw=100,200", "2x2x2:bw=50,100,200", "3x2x2:bw=400,25,100", "4x4:bw=200,10",
          "2x1x4:bw=50,7,400", "2x2x3:bw=10,10,10", "2x2x2x2:bw=25,50,100,200", "8:bw=3"}) {
        const Topology t = parse_topology(spec);
        EXPECT_DOUBLE_EQ(t.broadcast_rate(), least_cut_into_a_set(t)) << spec;
        EXPECT_LE(t.broadcast_rate(), t.total_bandwidth()) << spec;
    }
}

TEST(TopologyBandwidth, WithoutLatencyZeroesOnlyLatencies) {
    Topology t = parse_topology("2x4:bw=10Gbps,20Gbps:lat=3us,4us:alg=hd,direct");
    Topology z = t.without_latency();
    ASSERT_EQ(z.num_dims(), 2);
    for (int d = 0; d < 2; ++d) {
        EXPECT_EQ(z.dim(d).latency, 0.0);
        EXPECT_EQ(z.dim(d).peers, t.dim(d).peers);
        EXPECT_EQ(z.dim(d).bandwidth, t.dim(d).bandwidth);
        EXPECT_EQ(z.dim(d).algorithm, t.dim(d).algorithm);
    }
}

// ---------------------------------------------------------------------------------------
// Spec parser: accepted specs

TEST(TopologyParse, PeersOnlyKeepsDefaults) {
    Topology t = parse_topology("2x4");
    const Dimension def;
    ASSERT_EQ(t.num_dims(), 2);
    EXPECT_EQ(t.dim(0).peers, 2);
    EXPECT_EQ(t.dim(1).peers, 4);
    for (int d = 0; d < 2; ++d) {
        EXPECT_EQ(t.dim(d).bandwidth, def.bandwidth);
        EXPECT_EQ(t.dim(d).latency, def.latency);
        EXPECT_EQ(t.dim(d).algorithm, def.algorithm);
    }
}

TEST(TopologyParse, FullSpecWithPerDimensionLists) {
    Topology t =
        parse_topology("16x8x8:bw=1600Gbps,800Gbps,400Gbps:lat=700ns,700ns,1.7us:alg=hd,ring,hd");
    ASSERT_EQ(t.num_dims(), 3);
    EXPECT_EQ(t.size(), 1024);
    // 1 Gbps = 1e9/8 bytes per second.
    EXPECT_TRUE(close_rel(t.dim(0).bandwidth, 1600e9 / 8, 1e-12));
    EXPECT_TRUE(close_rel(t.dim(1).bandwidth, 800e9 / 8, 1e-12));
    EXPECT_TRUE(close_rel(t.dim(2).bandwidth, 400e9 / 8, 1e-12));
    EXPECT_TRUE(close_rel(t.dim(0).latency, 700e-9, 1e-12));
    EXPECT_TRUE(close_rel(t.dim(1).latency, 700e-9, 1e-12));
    EXPECT_TRUE(close_rel(t.dim(2).latency, 1.7e-6, 1e-12));
    EXPECT_EQ(t.dim(0).algorithm, Algorithm::HalvingDoubling);
    EXPECT_EQ(t.dim(1).algorithm, Algorithm::Ring);
    EXPECT_EQ(t.dim(2).algorithm, Algorithm::HalvingDoubling);
}

TEST(TopologyParse, SingleValueAppliesToAllDimensions) {
    Topology t = parse_topology("2x3x4:bw=100Gbps:lat=2us:alg=direct");
    ASSERT_EQ(t.num_dims(), 3);
    for (int d = 0; d < 3; ++d) {
        EXPECT_TRUE(close_rel(t.dim(d).bandwidth, 100e9 / 8, 1e-12)) << d;
        EXPECT_TRUE(close_rel(t.dim(d).latency, 2e-6, 1e-12)) << d;
        EXPECT_EQ(t.dim(d).algorithm, Algorithm::Direct) << d;
    }
}

TEST(TopologyParse, SectionsInAnyOrderAndCaseInsensitive) {
    Topology a = parse_topology("2X4:ALG=Ring,HD:Lat=1us:BW=8gbps");
    EXPECT_EQ(a.dim(0).peers, 2);
    EXPECT_EQ(a.dim(1).peers, 4);
    EXPECT_EQ(a.dim(0).algorithm, Algorithm::Ring);
    EXPECT_EQ(a.dim(1).algorithm, Algorithm::HalvingDoubling);
    EXPECT_TRUE(close_rel(a.dim(1).bandwidth, 1e9, 1e-12));
    EXPECT_TRUE(close_rel(a.dim(1).latency, 1e-6, 1e-12));
}

TEST(TopologyParse, BandwidthUnits) {
    struct Case {
        const char *text;
        double bytes_per_s;
    } cases[] = {
        {"8", 1e9}, // no unit: Gbps
        {"8bps", 1},    {"8kbps", 1e3},  {"8Mbps", 1e6},        {"8Gbps", 1e9},   {"8Tbps", 1e12},
        {"8Mbit", 1e6}, {"8Gbit", 1e9},  {"3B/s", 3},           {"3KB/s", 3e3},   {"3MB/s", 3e6},
        {"3GB/s", 3e9}, {"3TB/s", 3e12}, {"12.5 GB/s", 12.5e9}, {"1e3MB/s", 1e9},
    };
    for (const auto &c : cases) {
        EXPECT_TRUE(close_rel(parse_bandwidth(c.text), c.bytes_per_s, 1e-12)) << c.text;
        Topology t = parse_topology(std::string("4:bw=") + c.text);
        EXPECT_TRUE(close_rel(t.dim(0).bandwidth, c.bytes_per_s, 1e-12)) << c.text;
    }
}

TEST(TopologyParse, LatencyUnits) {
    struct Case {
        const char *text;
        double seconds;
    } cases[] = {
        {"5", 5e-6}, // no unit: microseconds
        {"5ns", 5e-9}, {"5us", 5e-6}, {"5ms", 5e-3}, {"5s", 5}, {"0", 0}, {"1.7us", 1.7e-6},
    };
    for (const auto &c : cases) {
        EXPECT_TRUE(close_rel(parse_latency(c.text), c.seconds, 1e-12)) << c.text;
        Topology t = parse_topology(std::string("4:lat=") + c.text);
        EXPECT_TRUE(close_rel(t.dim(0).latency, c.seconds, 1e-12)) << c.text;
    }
}

TEST(TopologyParse, AlgorithmNamesAndAliases) {
    EXPECT_EQ(parse_algorithm("ring"), Algorithm::Ring);
    EXPECT_EQ(parse_algorithm("hd"), Algorithm::HalvingDoubling);
    EXPECT_EQ(parse_algorithm("halving-doubling"), Algorithm::HalvingDoubling);
    EXPECT_EQ(parse_algorithm("direct"), Algorithm::Direct);
    EXPECT_EQ(parse_algorithm("fc"), Algorithm::Direct);
    for (Algorithm a : {Algorithm::Ring, Algorithm::HalvingDoubling, Algorithm::Direct})
        EXPECT_EQ(parse_algorithm(algorithm_name(a)), a);
}

TEST(TopologyParse, AlternativesFollowTheAlgorithmAfterSlashes) {
    const Topology t = parse_topology("4x2x3:alg=ring/hd,hd/direct/ring,direct/ring/direct");
    const unsigned hd = 1u << int(Algorithm::HalvingDoubling),
                   direct = 1u << int(Algorithm::Direct), ring = 1u << int(Algorithm::Ring);
    EXPECT_EQ(t.dim(0).algorithm, Algorithm::Ring);
    EXPECT_EQ(t.dim(0).alternatives, hd);
    EXPECT_EQ(t.dim(1).algorithm, Algorithm::HalvingDoubling);
    EXPECT_EQ(t.dim(1).alternatives, direct | ring);
    // Naming the algorithm itself again adds nothing.
    EXPECT_EQ(t.dim(2).algorithm, Algorithm::Direct);
    EXPECT_EQ(t.dim(2).alternatives, ring);
    EXPECT_EQ(parse_topology("4:alg=ring").dim(0).alternatives, 0u);
}

TEST(TopologyParse, HalvingDoublingAcceptedOnPowersOfTwoAndSinglePeer) {
    EXPECT_NO_THROW(parse_topology("1x2x4x8:alg=hd"));
    EXPECT_NO_THROW(parse_topology("3x4:alg=ring,hd"));
}

// ---------------------------------------------------------------------------------------
// to_spec round trip

TEST(TopologySpec, ToSpecParsesBackToTheSameTopology) {
    for (const char *spec :
         {"2x4", "16x8x8:bw=1600Gbps,800Gbps,400Gbps:lat=700ns,700ns,1.7us:alg=hd,ring,hd",
          "5:bw=3.3MB/s:lat=0", "3x1x2:alg=direct,ring,hd:lat=0.1ns",
          "4x2:alg=ring/hd,hd/ring/direct"}) {
        Topology t = parse_topology(spec);
        EXPECT_EQ(parse_topology(t.to_spec()), t) << spec << " -> " << t.to_spec();
    }
}

TEST(TopologySpec, ToSpecPrintsAlternativesInTheRegistrysOrder) {
    EXPECT_NE(parse_topology("4x2:alg=ring/hd,hd/direct/ring")
                  .to_spec()
                  .find(":alg=ring/hd,hd/ring/direct"),
              std::string::npos);
    EXPECT_NE(parse_topology("4x2:alg=ring,hd").to_spec().find(":alg=ring,hd"), std::string::npos);
}

TEST(TopologySpec, ToSpecPrintsMeasuredRatesShortWithoutExponents) {
    // Rates as calibration rounds them (4 significant digits of bits/s and of seconds):
    // the shortest text that reads back exactly, never with an exponent ("4.855e+04ns").
    const Topology t(
        {themis_test::dim(2, 103.9e6 / 8, 48.55e-6), themis_test::dim(2, 12987500.0, 1.868e-4)});
    const std::string spec = t.to_spec();
    const std::string rates = spec.substr(0, spec.find(":alg"));
    EXPECT_EQ(rates.find('e'), std::string::npos) << spec;
    EXPECT_LE(rates.size(), std::string("2x2:bw=103900kbps,103900kbps:lat=48550ns,186800ns").size())
        << spec;
    EXPECT_EQ(parse_topology(spec), t);
}

TEST(TopologySpec, ToSpecRoundTripsRandomBitPatterns) {
    std::mt19937_64 rng(7);
    for (int i = 0; i < 200; ++i) {
        Topology t = themis_test::random_topology(rng);
        Topology back = parse_topology(t.to_spec());
        ASSERT_EQ(back, t) << t.to_spec();
        // operator== must compare the exact numbers, so check them ourselves too.
        for (int d = 0; d < t.num_dims(); ++d) {
            ASSERT_EQ(back.dim(d).bandwidth, t.dim(d).bandwidth);
            ASSERT_EQ(back.dim(d).latency, t.dim(d).latency);
        }
    }
}

TEST(TopologySpec, EqualityAndFingerprintSeeEveryField) {
    Topology base({themis_test::dim(4, 10e9, 1e-6, Algorithm::Ring),
                   themis_test::dim(2, 5e9, 2e-6, Algorithm::Direct)});
    std::vector<Topology> variants = {
        Topology({themis_test::dim(4, 10e9, 1e-6, Algorithm::HalvingDoubling),
                  themis_test::dim(2, 5e9, 2e-6, Algorithm::Direct)}),
        Topology({themis_test::dim(4, 10e9, 1e-6, Algorithm::Ring),
                  themis_test::dim(2, 5e9 * (1 + 1e-15), 2e-6, Algorithm::Direct)}),
        Topology({themis_test::dim(4, 10e9, 1e-6, Algorithm::Ring),
                  themis_test::dim(2, 5e9, 3e-6, Algorithm::Direct)}),
        Topology({themis_test::dim(2, 10e9, 1e-6, Algorithm::Ring),
                  themis_test::dim(4, 5e9, 2e-6, Algorithm::Direct)}),
        Topology({themis_test::dim(4, 10e9, 1e-6, Algorithm::Ring)}),
    };
    Topology same({themis_test::dim(4, 10e9, 1e-6, Algorithm::Ring),
                   themis_test::dim(2, 5e9, 2e-6, Algorithm::Direct)});
    EXPECT_TRUE(base == same);
    EXPECT_EQ(base.fingerprint(), same.fingerprint());
    for (size_t i = 0; i < variants.size(); ++i) {
        EXPECT_FALSE(base == variants[i]) << i;
        EXPECT_NE(base.fingerprint(), variants[i].fingerprint()) << i;
    }
}

// ---------------------------------------------------------------------------------------
// Fill curves: fill=, canonical, printed back, in the fingerprint

TEST(TopologyFill, OneCurveForAllOrOnePerDimension) {
    const Topology all = parse_topology("2x4:fill=0.56/0.78/0.94");
    for (int d = 0; d < 2; ++d)
        EXPECT_EQ(all.dim(d).fill, (std::vector<double>{0.56, 0.78, 0.94})) << d;
    const Topology each = parse_topology("2x4x2:FILL = 1, 0.5/0.8 ,0.25");
    EXPECT_TRUE(each.dim(0).fill.empty()); // "1": a full link, as without a curve
    EXPECT_EQ(each.dim(1).fill, (std::vector<double>{0.5, 0.8}));
    EXPECT_EQ(each.dim(2).fill, (std::vector<double>{0.25}));
    // Without fill= every dimension is full.
    const Topology plain = parse_topology("2x4:bw=1");
    for (const Dimension &d : plain.dims()) EXPECT_TRUE(d.fill.empty());
}

TEST(TopologyFill, CurvesAreCanonical) {
    // Past its last point a curve holds that point: trailing repeats say nothing, and a
    // curve of ones is a full link. So equal curves compare (and hash) equal.
    EXPECT_EQ(parse_fill("0.5/1/1/1"), (std::vector<double>{0.5, 1}));
    EXPECT_EQ(parse_fill("0.5/0.5"), (std::vector<double>{0.5}));
    EXPECT_TRUE(parse_fill("1/1/1").empty());
    EXPECT_TRUE(parse_fill("1").empty());
    // Not monotone: kept as given (more stages may congest a link).
    EXPECT_EQ(parse_fill("0.9/0.7"), (std::vector<double>{0.9, 0.7}));
    // A Topology built from dimensions keeps them canonical too.
    Dimension d = themis_test::dim(2, 1e9);
    d.fill = {0.6, 0.9, 0.9};
    Dimension full = d;
    full.fill = {1, 1};
    const Topology t({d, full});
    EXPECT_EQ(t.dim(0).fill, (std::vector<double>{0.6, 0.9}));
    EXPECT_TRUE(t.dim(1).fill.empty());
    EXPECT_EQ(t, parse_topology("2x2:bw=8Gbps:lat=0:fill=0.6/0.9,1"));
}

TEST(TopologyFill, ToSpecPrintsCurvesOnlyWhereOneIsKnown) {
    // Without a curve the spec reads as before fill curves existed.
    EXPECT_EQ(parse_topology("2x4").to_spec(), "2x4:bw=100Gbps,100Gbps:lat=1us,1us:alg=ring,ring");
    const Topology t = parse_topology("2x4:fill=1,0.56/0.78/0.86/0.94");
    EXPECT_EQ(t.to_spec(),
              "2x4:bw=100Gbps,100Gbps:lat=1us,1us:alg=ring,ring:fill=1,0.56/0.78/0.86/0.94");
    EXPECT_EQ(fill_text(t.dim(1).fill), "0.56/0.78/0.86/0.94");
    EXPECT_EQ(fill_text({}), "1");
    // Round trip, also of arbitrary bit patterns.
    std::mt19937_64 rng(11);
    std::uniform_real_distribution<double> fraction(1e-6, 1.0);
    for (int i = 0; i < 100; ++i) {
        Topology r = themis_test::random_topology(rng);
        std::vector<Dimension> dims = r.dims();
        for (Dimension &d : dims) {
            d.fill.clear();
            for (int k = int(rng() % 5); k > 0; --k) d.fill.push_back(fraction(rng));
        }
        const Topology with(dims);
        const Topology back = parse_topology(with.to_spec());
        ASSERT_EQ(back, with) << with.to_spec();
        for (int d = 0; d < with.num_dims(); ++d) ASSERT_EQ(back.dim(d).fill, with.dim(d).fill);
    }
}

TEST(TopologyFill, EqualityAndFingerprintSeeTheCurve) {
    const Topology none = parse_topology("2x4:bw=10Gbps:lat=1us");
    const Topology full = parse_topology("2x4:bw=10Gbps:lat=1us:fill=1/1");
    const Topology curve = parse_topology("2x4:bw=10Gbps:lat=1us:fill=1,0.5/0.8");
    const Topology other = parse_topology("2x4:bw=10Gbps:lat=1us:fill=1,0.5/0.81");
    const Topology longer = parse_topology("2x4:bw=10Gbps:lat=1us:fill=1,0.5/0.8/0.9");
    const Topology swapped = parse_topology("2x4:bw=10Gbps:lat=1us:fill=0.5/0.8,1");
    EXPECT_EQ(none, full);
    EXPECT_EQ(none.fingerprint(), full.fingerprint());
    const std::vector<Topology> differ = {none, curve, other, longer, swapped};
    for (size_t i = 0; i < differ.size(); ++i)
        for (size_t j = i + 1; j < differ.size(); ++j) {
            EXPECT_FALSE(differ[i] == differ[j]) << i << " " << j;
            EXPECT_NE(differ[i].fingerprint(), differ[j].fingerprint()) << i << " " << j;
        }
}

// ---------------------------------------------------------------------------------------
// The paper's Table 2

TEST(TopologyPaper, SixTopologiesMatchTable2) {
    enum Kind { SW, Ring, FC };
    struct Row {
        const char *name;
        std::vector<int> peers;
        std::vector<double> link_gbps;
        std::vector<int> links;
        std::vector<double> latency_ns;
        std::vector<Kind> kinds;
    } rows[] = {
        {"2D-SW_SW", {16, 64}, {200, 800}, {6, 1}, {700, 1700}, {SW, SW}},
        {"3D-SW_SW_SW_homo",
         {16, 8, 8},
         {200, 200, 800},
         {4, 4, 1},
         {700, 700, 1700},
         {SW, SW, SW}},
        {"3D-SW_SW_SW_hetero",
         {16, 8, 8},
         {200, 200, 400},
         {8, 4, 1},
         {700, 700, 1700},
         {SW, SW, SW}},
        {"3D-FC_Ring_SW", {8, 16, 8}, {200, 200, 400}, {7, 4, 1}, {700, 700, 1700}, {FC, Ring, SW}},
        {"4D-Ring_SW_SW_SW",
         {4, 4, 8, 8},
         {1000, 200, 200, 400},
         {2, 8, 4, 1},
         {20, 700, 700, 1700},
         {Ring, SW, SW, SW}},
        {"4D-Ring_FC_Ring_SW",
         {4, 8, 4, 8},
         {1500, 200, 200, 800},
         {2, 7, 6, 1},
         {20, 700, 700, 1700},
         {Ring, FC, Ring, SW}},
    };
    auto names = paper_topology_names();
    ASSERT_EQ(names.size(), 6u);
    for (const auto &row : rows) {
        SCOPED_TRACE(row.name);
        EXPECT_NE(std::find(names.begin(), names.end(), row.name), names.end());
        auto t = paper_topology(row.name);
        ASSERT_TRUE(t.has_value());
        EXPECT_EQ(t->size(), 1024);
        ASSERT_EQ(t->num_dims(), static_cast<int>(row.peers.size()));
        for (int d = 0; d < t->num_dims(); ++d) {
            SCOPED_TRACE(d);
            EXPECT_EQ(t->dim(d).peers, row.peers[d]);
            // Per-NPU bandwidth = links x link bandwidth, in bytes per second.
            EXPECT_TRUE(
                close_rel(t->dim(d).bandwidth, row.links[d] * row.link_gbps[d] * 1e9 / 8, 1e-12))
                << t->dim(d).bandwidth;
            EXPECT_TRUE(close_rel(t->dim(d).latency, row.latency_ns[d] * 1e-9, 1e-12));
            Algorithm want = row.kinds[d] == SW     ? Algorithm::HalvingDoubling
                             : row.kinds[d] == Ring ? Algorithm::Ring
                                                    : Algorithm::Direct;
            EXPECT_EQ(t->dim(d).algorithm, want);
        }
    }
}

TEST(TopologyPaper, UnknownNameGivesNothing) {
    EXPECT_FALSE(paper_topology("5D-nothing").has_value());
    EXPECT_FALSE(paper_topology("").has_value());
}

// ---------------------------------------------------------------------------------------
// Spec parser: malformed specs name the field at fault

void expect_spec_error(const std::string &spec, std::vector<std::string> must_mention) {
    SCOPED_TRACE("spec \"" + spec + "\"");
    try {
        parse_topology(spec);
        ADD_FAILURE() << "accepted";
    } catch (const SpecError &e) {
        std::string msg = e.what();
        for (const auto &word : must_mention)
            EXPECT_NE(msg.find(word), std::string::npos)
                << "message \"" << msg << "\" does not mention \"" << word << "\"";
    } catch (const std::exception &e) {
        ADD_FAILURE() << "threw something other than SpecError: " << e.what();
    }
}

TEST(TopologySpecErrors, ZeroPeersNamesTheDimension) {
    expect_spec_error("2x0", {"dimension 1", "peers"});
}
TEST(TopologySpecErrors, NonNumericPeersNamesTheDimension) {
    expect_spec_error("2xa", {"dimension 1", "peers"});
}
TEST(TopologySpecErrors, EmptySpecNamesPeers) { expect_spec_error("", {"peers"}); }
TEST(TopologySpecErrors, EmptyDimensionNamesPeers) {
    expect_spec_error("2x4x", {"dimension 2", "peers"});
    expect_spec_error("x4", {"dimension 0", "peers"});
}
TEST(TopologySpecErrors, NegativePeersRejected) { expect_spec_error("-2x4", {"peers"}); }
TEST(TopologySpecErrors, WrongListLengthNamesTheKey) {
    expect_spec_error("2x4:bw=1,2,3", {"bw", "3"});
    expect_spec_error("2x4:lat=1,2,3", {"lat"});
    expect_spec_error("2x4x2:alg=ring,hd", {"alg"});
}
TEST(TopologySpecErrors, BandwidthWithoutNumberNamesBandwidth) {
    expect_spec_error("2x4:bw=fast", {"bandwidth", "fast"});
}
TEST(TopologySpecErrors, ZeroBandwidthRejected) { expect_spec_error("2x4:bw=0", {"bandwidth"}); }
TEST(TopologySpecErrors, NegativeLatencyNamesLatency) {
    expect_spec_error("2x4:lat=-1us", {"latency"});
}
TEST(TopologySpecErrors, NonFiniteNumbersRejected) {
    expect_spec_error("2x4:bw=inf", {"bandwidth"});
    expect_spec_error("2x4:lat=nan", {"latency"});
    expect_spec_error("2x4:bw=1e400", {"bandwidth"});
    // Finite, but not in bytes per second: the unit multiplies it past the largest double.
    expect_spec_error("2x4:bw=1e300Tbps", {"bandwidth", "too large"});
}
TEST(TopologySpecErrors, HalvingDoublingOnNonPowerOfTwoNamesAlgorithm) {
    expect_spec_error("3:alg=hd", {"dimension 0", "hd", "power"});
    expect_spec_error("4x6:alg=ring,hd", {"dimension 1", "hd"});
    // An alternative must fit the dimension as the algorithm must.
    expect_spec_error("4x6:alg=ring,ring/hd", {"dimension 1", "hd", "power"});
}
TEST(TopologySpecErrors, UnknownAlgorithmNamed) {
    expect_spec_error("2x4:alg=tree", {"algorithm", "tree"});
    expect_spec_error("2x4:alg=ring/tree", {"dimension 0", "algorithm", "tree"});
    expect_spec_error("2x4:alg=ring/", {"dimension 0", "algorithm"});
}
TEST(TopologySpecErrors, UnknownKeyNamed) { expect_spec_error("2x4:foo=1", {"foo"}); }
TEST(TopologySpecErrors, SectionWithoutValueRejected) {
    expect_spec_error("2x4:bw", {"bw"});
    expect_spec_error("2x4:bw=", {"bandwidth"});
}
TEST(TopologySpecErrors, RepeatedKeyNamed) { expect_spec_error("2x4:bw=1:bw=2", {"bw", "twice"}); }
TEST(TopologySpecErrors, UnknownUnitNamed) {
    expect_spec_error("2x4:bw=10parsecs", {"bandwidth", "parsecs"});
    expect_spec_error("2x4:lat=10fortnights", {"latency", "fortnights"});
}
// A NUL (a spec read from a file) would end the message where it stands.
TEST(TopologySpecErrors, ControlBytesNamedByColumn) {
    expect_spec_error(std::string("2x2:a\0b=1,2", 11),
                      {"spec: unexpected control byte 0x00 at column 6"});
    expect_spec_error("2x4:alg=\x1b[2Jring", {"0x1b at column 9"});
    EXPECT_NO_THROW(parse_topology("2x4 :\tbw=1"));
}
TEST(TopologySpecErrors, FillOutsideZeroToOneNamesFillAndTheDimension) {
    for (const char *bad : {"0", "1.2", "-0.5", "nan", "inf", "1e400"})
        expect_spec_error(std::string("2x4:fill=1,") + bad, {"dimension 1 fill", "at most 1", bad});
    expect_spec_error("2x4:fill=0.5/0/1", {"dimension 0 fill", "above 0"});
}
TEST(TopologySpecErrors, MalformedFillCurveNamesFill) {
    for (const char *bad : {"", "0.5//0.8", "0.5/", "half", "0.5/0.8x", "50%", "0.5,0.8/"})
        expect_spec_error(std::string("2x4:fill=") + bad, {"fill", "separated by '/'"});
    expect_spec_error("2x4:fill=1,1,1", {"'fill'", "3"});
    expect_spec_error("2x4:fill=1:fill=1", {"fill", "twice"});
    std::string many = "1";
    for (int i = 0; i < 64; ++i) many += "/1";
    expect_spec_error("2x4:fill=" + many, {"fill", "at most 64 points", "65"});
    EXPECT_NO_THROW(parse_topology("2x4:fill=" + many.substr(2))); // 64 points
}
TEST(TopologySpecErrors, UnknownKeyListsFill) {
    expect_spec_error("2x4:fil=1", {"fil", "valid: bw, lat, alg, fill"});
    expect_spec_error("2x4:fill", {"fill="});
}
TEST(TopologySpecErrors, TooManyRanksRejected) {
    // 2^24 ranks is the documented maximum.
    EXPECT_NO_THROW(parse_topology("4096x4096"));
    expect_spec_error("4096x4096x2", {"peers"});
}
TEST(TopologySpecErrors, ProductOverflowingIntIsRejected) {
    // Each factor is within the per-dimension limit, but the product (2^32, 2^48) does not
    // fit in an int; the spec must still be refused rather than wrap around.
    expect_spec_error("65536x65536", {"peers"});
    expect_spec_error("16777216x16777216", {"peers"});
}

} // namespace
